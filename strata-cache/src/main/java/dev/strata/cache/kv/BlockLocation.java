package dev.strata.cache.kv;

import dev.strata.memory.TierKind;

/**
 * Where the KV of a cached block is found: a DEVICE block slot of this process, one of the
 * process's store tiers, or the pool shared by several processes ({@link SharedBlockStore}).
 *
 * <p>Immutable; any thread.
 */
public enum BlockLocation {
    /** A block slot of the engine's KV, loaded or being loaded. */
    DEVICE,
    /** Memory lent by a peer device. */
    PEER,
    /** Host DRAM. */
    HOST,
    /** This process's POOL tier. */
    POOL,
    /** The disk tier. */
    DISK,
    /** The cross-process shared block pool. */
    SHARED;

    /** The location of a copy in a store tier of {@code kind}. */
    public static BlockLocation of(TierKind kind) {
        return switch (kind) {
            case DEVICE -> DEVICE;
            case PEER -> PEER;
            case HOST -> HOST;
            case POOL -> POOL;
            case DISK -> DISK;
        };
    }
}
