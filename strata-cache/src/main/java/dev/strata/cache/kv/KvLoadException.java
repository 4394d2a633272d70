package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;

/**
 * Why one block could not be brought into its DEVICE slot; completes that block's load
 * exceptionally and becomes a {@link BlockLoadFailure} in the {@link LoadOutcome}.
 *
 * <p>Immutable; any thread.
 */
public final class KvLoadException extends RuntimeException {
    private final transient ObjectKey key;
    private final BlockLocation source;

    KvLoadException(ObjectKey key, BlockLocation source, String message, Throwable cause) {
        super(message, cause);
        this.key = key;
        this.source = source;
    }

    /** The block that failed. */
    public ObjectKey key() {
        return key;
    }

    /** Where it was read from. */
    public BlockLocation source() {
        return source;
    }
}
