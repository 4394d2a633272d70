package dev.strata.cache.peer;

/**
 * Why a lease ended without the client freeing it.
 *
 * <ul>
 *   <li>{@link #RECLAIMED}: the peer asked for the memory back (its own demand rose); the client
 *       drained and acknowledged.</li>
 *   <li>{@link #FENCED}: the lease's epoch advanced before the client acknowledged (a missed
 *       deadline); the memory may already be reused.</li>
 *   <li>{@link #PEER_LOST}: the peer died or became unreachable; its memory is gone.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum RevocationReason {
    RECLAIMED,
    FENCED,
    PEER_LOST
}
