package dev.strata.cache.peer;

/**
 * What a {@link PeerLender} tells its client.
 *
 * <p>Threads: called on the lender's event thread, one event at a time per lender. A listener may
 * call the lender's {@link PeerLender#acknowledge} and {@link PeerLender#giveBack} from inside an
 * event ({@link PeerClient} acknowledges there a revocation whose lease drained at once), so a
 * lender must not hold, while it delivers an event, a lock that those calls take.
 */
public interface LenderEvents {

    /**
     * The agent wants {@code region} back by {@code deadlineNanos}; it asked at
     * {@code revokedAtNanos} (both on the {@link System#nanoTime()} scale; where the lender cannot
     * tell when the agent asked, the moment the revocation reached it).
     */
    void revocationRequested(LentRegion region, long revokedAtNanos, long deadlineNanos);

    /** {@code region} was fenced: its epoch advanced before the client acknowledged. */
    void fenced(LentRegion region);

    /** The agent died or became unreachable; all its regions are gone. */
    void peerLost(int peer);

    /**
     * The peer, lost before, lends again: its agent was restarted (a new agent now owns the peer's
     * lending file) or recovered. Comes after the {@link #peerLost} it ends, on the same thread.
     * Leases lent before the loss stay ended; only new borrows reach the peer's memory. A listener
     * that ignores it (the default) no longer places anything on the peer.
     */
    default void peerReattached(int peer) {
    }
}
