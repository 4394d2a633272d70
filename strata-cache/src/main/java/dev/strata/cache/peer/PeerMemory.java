package dev.strata.cache.peer;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;

/**
 * The client side of memory lent by peers: borrow regions under leases, access them, give them
 * back, and be told when a peer takes one back.
 *
 * <p>Every access goes through {@link #read}/{@link #write}, never through a raw view, so that each
 * one is bracketed by the lease's guard: an access that begins after the lease started revoking,
 * or whose epoch is stale, fails ({@code false}) without touching the memory, and revocation waits
 * for the accesses already under way before acknowledging (invariant 4 of docs/ARCHITECTURE.md).
 *
 * <p>Threads: every method may be called from any thread; callbacks run on a thread of the
 * implementation's revocation machinery (see {@link RevocationCallback}), never on the caller's
 * thread except for a callback registered on a lease whose revocation already ended.
 */
public interface PeerMemory extends AutoCloseable {

    /**
     * Borrows {@code size} bytes from the peer the placement policy picks under {@code hints}.
     *
     * @return the lease, or empty when no peer can lend that much now (an expected outcome)
     */
    Optional<PeerLease> alloc(long size, LeaseHints hints);

    /** Gives a lease back to its peer; a lease already revoked is ignored. Idempotent. */
    void free(PeerLease lease);

    /** Registers {@code callback} to run once when {@code lease} is revoked, fenced or lost. */
    void onRevoke(PeerLease lease, RevocationCallback callback);

    /**
     * Copies {@code src} into the lent region at {@code offset}.
     *
     * @return false when the lease is no longer valid (revoking, revoked, fenced, peer lost)
     * @throws IndexOutOfBoundsException when {@code offset + src.byteSize()} exceeds the lease
     */
    boolean write(PeerLease lease, long offset, MemorySegment src);

    /** Copies {@code dst.byteSize()} bytes at {@code offset} of the lent region into {@code dst}; as {@link #write}. */
    boolean read(PeerLease lease, long offset, MemorySegment dst);

    /** True while accesses through {@code lease} can succeed. */
    boolean valid(PeerLease lease);

    /** The peers this client sees, as of now. */
    List<PeerStatus> peers();

    /** Gives every lease back and stops listening to the peers. */
    @Override
    void close();
}
