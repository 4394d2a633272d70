package dev.strata.cache.kv;

/**
 * Whether a block of a progressively loaded sequence is usable now
 * ({@link KvBlockManager#require}).
 *
 * <ul>
 *   <li>{@link #READY}: its KV is in its DEVICE slot.</li>
 *   <li>{@link #IN_FLIGHT}: its load is running (or waits for a slot); ask again later.</li>
 *   <li>{@link #MISSING}: it could not be loaded (or lies beyond the matched prefix): the engine
 *       computes it.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum BlockReadiness {
    READY,
    IN_FLIGHT,
    MISSING
}
