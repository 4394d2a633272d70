package dev.strata.cache.peer;

import java.lang.foreign.MemorySegment;

/**
 * A region lent to this client, with the guard every access to it goes through:
 * {@code if (enter()) { try { ... memory() ... } finally { exit(); } }}.
 *
 * <p>{@link #enter} succeeds only while the lease's epoch is current and no revocation has begun;
 * it registers the access so that the agent, before reusing the memory, can wait for it to
 * {@link #exit}. The pair is the reader side of a Dekker-style handshake with the agent's
 * revoke/fence (the agent publishes the new state, then waits for the in-flight count; the client
 * registers, then re-checks the state).
 *
 * <p>Threads: any thread may enter and exit, concurrently; each successful {@code enter} must be
 * matched by exactly one {@code exit} on the same thread.
 */
public interface LentRegion {

    PeerLease lease();

    /** Begins an access; false when the lease is revoking, fenced or its peer is gone. */
    boolean enter();

    /** The lent bytes ({@code lease().size()} long); touch only between a successful enter and its exit. */
    MemorySegment memory();

    /**
     * True once the lender took this lease back without an acknowledgement (fenced at its
     * deadline): its state as the lender keeps it, whether or not its event has been delivered.
     * Before the lease's revocation is acknowledged, any thread.
     */
    boolean takenBack();

    /** Ends an access begun by a successful {@link #enter}. */
    void exit();
}
