package dev.strata.cache.peer;

/**
 * Told when a lease is taken back. Runs after new transfers on the lease were stopped and the
 * in-flight ones drained, and before the client acknowledges to the peer, so the callback may
 * still decide what to do with its placement entries but can no longer touch the lent memory.
 *
 * <p>Threads: runs on the thread that finished the revocation: the lender's event thread when the
 * lease had no access in flight (the common case), the client's revocation thread when it waited
 * for one to drain (see {@link PeerClient}), or the registering thread for a lease that had ended
 * already. It must not block for long (the peer's deadline is running, and the lender's other
 * events wait for it) and must not call back into {@link PeerMemory#alloc}.
 */
@FunctionalInterface
public interface RevocationCallback {
    /**
     * @param lease  the lease that ended
     * @param reason why it ended
     */
    void revoked(PeerLease lease, RevocationReason reason);
}
