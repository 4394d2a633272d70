package dev.strata.cache.peer;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One region lent by a {@link LocalLender}: a slice of the lender's arena under one lease, with the
 * guard every access goes through.
 *
 * <p>Design note (the enter/close handshake, Dekker style). Two words, both accessed with volatile
 * (sequentially consistent) VarHandle operations:
 * <pre>
 *   state    = epoch &lt;&lt; 2 | gate      gate: OPEN 0, REVOKING 1, CLOSED 2
 *   inFlight = accesses begun and not yet ended (plus, for an instant, failed attempts)
 *
 *   client enter:  inFlight += 1 ; if state == (leaseEpoch &lt;&lt; 2 | OPEN) -&gt; in ; else inFlight -= 1 -&gt; refused
 *   agent close :  state = (newEpoch &lt;&lt; 2 | CLOSED) ; then memory is reused only once inFlight == 0
 * </pre>
 * Each side writes its own word and then reads the other's. Volatile accesses form one total
 * order, so if the agent's read of {@code inFlight} returns 0, every later increment is ordered
 * after the agent's store of the new state and the client's re-check sees it: no access that
 * succeeds can overlap reuse of the memory. (Acquire/release alone would not do: the store-then-load
 * on each side must not be reordered.) {@code REVOKING} keeps the epoch but refuses new accesses;
 * {@code CLOSED} advances the epoch, so the old lease can never enter again. A JCStress test
 * ({@code PeerGuardStress}) checks the handshake.
 *
 * <p>Threads: {@link #enter}/{@link #exit} from any thread, concurrently. The agent-side fields
 * ({@link #phase}, {@link #deadlineNanos}, {@link #fenced}) are guarded by the owning lender's lock;
 * {@link #beginRevocation} and {@link #close} are called under it.
 */
final class LocalRegion implements LentRegion {
    static final long OPEN = 0;
    static final long REVOKING = 1;
    static final long CLOSED = 2;

    private static final VarHandle STATE;
    private static final VarHandle IN_FLIGHT;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            STATE = lookup.findVarHandle(LocalRegion.class, "state", long.class);
            IN_FLIGHT = lookup.findVarHandle(LocalRegion.class, "inFlight", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Object owner;           // the lender that lent this region (identity check on return)
    private final PeerLease lease;        // peer, region id (= offset), size, epoch
    private final MemorySegment memory;   // lease.size() bytes of the lender's arena
    private final long offset;            // bytes from the arena's start; also the region id
    private final long rounded;           // bytes the allocator holds for this region (size rounded to its alignment)
    private final long openWord;          // state value that lets an access in: lease epoch << 2 | OPEN

    @SuppressWarnings("unused") // accessed through STATE
    private volatile long state;          // epoch << 2 | gate
    @SuppressWarnings("unused") // accessed through IN_FLIGHT
    private volatile long inFlight;       // accesses under way (count)

    LocalLender.Phase phase = LocalLender.Phase.LENT; // guarded by the lender's lock
    long deadlineNanos;                               // System.nanoTime scale, meaningful while REVOKING; guarded by the lender's lock
    boolean fenced;                                   // closed by the deadline rather than an acknowledgement; guarded by the lender's lock

    LocalRegion(Object owner, PeerLease lease, MemorySegment memory, long offset, long rounded) {
        this.owner = owner;
        this.lease = lease;
        this.memory = memory;
        this.offset = offset;
        this.rounded = rounded;
        this.openWord = lease.epoch() << 2 | OPEN;
        STATE.setVolatile(this, openWord);
    }

    @Override
    public PeerLease lease() {
        return lease;
    }

    @Override
    public boolean enter() {
        IN_FLIGHT.getAndAdd(this, 1L);
        if ((long) STATE.getVolatile(this) == openWord) {
            return true;
        }
        IN_FLIGHT.getAndAdd(this, -1L);
        return false;
    }

    @Override
    public MemorySegment memory() {
        return memory;
    }

    @Override
    public void exit() {
        long before = (long) IN_FLIGHT.getAndAdd(this, -1L);
        if (before <= 0) {
            IN_FLIGHT.getAndAdd(this, 1L);
            throw new IllegalStateException("exit without a matching enter on " + lease + " (in-flight count was " + before + ")");
        }
    }

    /** Refuses new accesses while keeping the epoch (the agent asked for the region back). */
    void beginRevocation() {
        STATE.setVolatile(this, lease.epoch() << 2 | REVOKING);
    }

    /** Advances the epoch to {@code newEpoch} and refuses every later access for good. */
    void close(long newEpoch) {
        STATE.setVolatile(this, newEpoch << 2 | CLOSED);
    }

    /** Closed under a newer epoch: before an acknowledgement, only a fence closes a lent region. */
    @Override
    public boolean takenBack() {
        return currentEpoch() != lease.epoch();
    }

    /** Accesses under way now (volatile read, after {@link #close}: those begun under the old epoch). */
    long inFlight() {
        return (long) IN_FLIGHT.getVolatile(this);
    }

    /** The region's epoch now: the lease's epoch until it is closed, then the advanced one. */
    long currentEpoch() {
        return (long) STATE.getVolatile(this) >>> 2;
    }

    /** The gate now: {@link #OPEN}, {@link #REVOKING} or {@link #CLOSED}. */
    long gate() {
        return (long) STATE.getVolatile(this) & 3;
    }

    boolean ownedBy(Object lender) {
        return owner == lender;
    }

    long offset() {
        return offset;
    }

    long rounded() {
        return rounded;
    }

    @Override
    public String toString() {
        return "region " + offset + " (" + lease + ")";
    }
}
