package dev.strata.cache;

/**
 * Why an object left the store without being removed by its owner.
 *
 * <ul>
 *   <li>{@link #EVICTED}: a LOSSY object was evicted from its last tier and nowhere below could
 *       take it.</li>
 *   <li>{@link #CORRUPT}: every remaining copy failed its checksum (possible for BACKED objects
 *       too: the bytes are gone, and the owner is told).</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum DropReason {
    EVICTED,
    CORRUPT
}
