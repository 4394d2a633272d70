package dev.strata.node.peer;

import dev.strata.memory.Sizes;

/**
 * A constant demand: the agent keeps {@code bytes} of its budget for itself and lends the rest.
 *
 * <p>Immutable; any thread.
 *
 * @param bytes the reserve in bytes, at least 0
 */
public record FixedDemand(long bytes) implements DemandSignal {

    public FixedDemand {
        if (bytes < 0) {
            throw new IllegalArgumentException("fixed demand " + bytes + " bytes must not be negative");
        }
    }

    /** Parses a size such as {@code 512MiB}. */
    static FixedDemand parse(String text) {
        try {
            return new FixedDemand(Sizes.parse(text.strip()));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("demand spec 'fixed:" + text + "': " + e.getMessage(), e);
        }
    }

    @Override
    public long demandBytes(long elapsedNanos) {
        return bytes;
    }

    @Override
    public String describe() {
        return "fixed reserve of " + Sizes.format(bytes);
    }
}
