package dev.strata.cache.peer;

/**
 * Told when a lease is taken back. Runs after new transfers on the lease were stopped and the
 * in-flight ones drained, and before the client acknowledges to the peer, so the callback may
 * still decide what to do with its placement entries but can no longer touch the lent memory.
 *
 * <p>Threads: runs on the client's revocation thread; must not block for long (the peer's deadline
 * is running) and must not call back into {@link PeerMemory#alloc}.
 */
@FunctionalInterface
public interface RevocationCallback {
    /**
     * @param lease  the lease that ended
     * @param reason why it ended
     */
    void revoked(PeerLease lease, RevocationReason reason);
}
