package dev.strata.node.route;

import java.util.Objects;

/**
 * A request to place on one of several engine instances: the chained hashes of its prompt's KV
 * blocks (block {@code i}'s hash covers tokens {@code [0, (i + 1) * blockTokens)}, so equal
 * leading hashes mean an equal prefix) and its token counts.
 *
 * <p>Immutable by contract: the array is not copied, callers must not change it after routing.
 *
 * @param blockHashes     prompt block hashes in prompt order (64-bit, e.g. {@code ObjectKey.hash64()})
 * @param promptTokens    tokens of the prompt
 * @param maxOutputTokens tokens the request may generate
 */
public record RouteRequest(long[] blockHashes, int promptTokens, int maxOutputTokens) {

    public RouteRequest {
        Objects.requireNonNull(blockHashes, "blockHashes");
        if (promptTokens < 0 || maxOutputTokens < 0) {
            throw new IllegalArgumentException("token counts must be >= 0: prompt " + promptTokens + ", output " + maxOutputTokens);
        }
    }

    /** The load this request puts on the instance that serves it: all tokens it will process, in tokens. */
    public long cost() {
        return (long) promptTokens + maxOutputTokens;
    }
}
