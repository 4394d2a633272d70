package dev.strata.cache;

/**
 * Why an object left the store without being removed by its owner.
 *
 * <ul>
 *   <li>{@link #EVICTED}: a LOSSY object was evicted from its last tier and nowhere below could
 *       take it.</li>
 *   <li>{@link #CORRUPT}: every remaining copy failed its checksum (possible for BACKED objects
 *       too: the bytes are gone, and the owner is told).</li>
 *   <li>{@link #REVOKED}: a LOSSY object's only copy was in memory lent by a peer, and the peer
 *       took that memory back (reclaimed, fenced or lost). BACKED objects never have this reason:
 *       a copy of theirs on a peer always has another below it.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum DropReason {
    EVICTED,
    CORRUPT,
    REVOKED
}
