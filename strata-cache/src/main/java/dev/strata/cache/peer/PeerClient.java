package dev.strata.cache.peer;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.HdrHistogram.SynchronizedHistogram;

/**
 * The client side of peer memory over a list of {@link PeerLender}s: places allocations with a
 * {@link PlacementPolicy}, guards every access, and turns the lenders' revocations into drained,
 * acknowledged, exactly-once callbacks.
 *
 * <p>Design note (revocation protocol, client side). Each lease has a {@link LeaseGuard} (closed
 * flag + in-flight count in one word) in front of the lender's own {@link LentRegion} guard; an
 * access enters both, copies, and exits both. A lease's life, under the client's lock:
 * <pre>
 *   OPEN --free()--------------------------------&gt; FREEING --drained--&gt; ENDED (given back; no callbacks)
 *   OPEN --revocationRequested / fenced / lost---&gt; REVOKING --drained--&gt; ENDED (callbacks once, reason)
 * </pre>
 * On {@code revocationRequested} the lender's event thread closes the guard at once (new reads and
 * writes return false). If no access is in flight once it is closed (the common case: none can
 * begin after), the lease has drained and the event thread itself ends the lease (accounting,
 * metrics), runs its callbacks once with {@link RevocationReason#RECLAIMED} and then
 * {@link PeerLender#acknowledge acknowledges}: the callbacks run one thread wake-up after the
 * lender's signal, not two. Otherwise the access that leaves the lease last hands it to this
 * client's revocation thread (below), which does the same.
 * A {@code fenced} event on a lease not yet ended turns its reason into {@link RevocationReason#FENCED}
 * (no acknowledgement: the lender already advanced the epoch); a {@code peerLost} turns every
 * lease of the peer into {@link RevocationReason#PEER_LOST}. A lease the lender has fenced by the
 * time it ends ({@link LentRegion#takenBack}) ends FENCED even if the fence's event has not
 * arrived yet, so the reason does not depend on which thread ran first. The reason is fixed when
 * the lease ends, so callbacks never run twice: a fence that arrives after the callbacks ran (the client
 * acknowledged too late) is only counted ({@code lateFences}). {@code free} of a lease whose
 * revocation has begun is a no-op (its callbacks still run); a revocation of a lease being freed
 * is acknowledged by the free once it drained. A lost peer is no candidate for placement until its
 * lender reports {@code peerReattached} (a restarted agent): its old leases stay ended, new ones
 * are borrowed from it again, and the re-attachments are counted per peer.
 *
 * <p>A lease revoked with an access under way: a read or write stops at its next step once the
 * revocation has begun ({@link #COPY_STEP_BYTES}), so the lender's event thread waits for it a
 * little ({@link Builder#drainWaitNanos}, 100 µs by default; parked, woken by the access that
 * leaves last) and, if it drains, ends the lease itself. An access still under way after that
 * hands the lease to the revocation thread: the exit that leaves its guard empty queues it ({@link LeaseGuard#runWhenDrained}) and wakes the thread,
 * which ends it at once. No thread waits on an access for longer than that brief wait, so a slow
 * access on one lease delays no other; a callback that blocks does delay the ones after it (callbacks must be short). A lender's
 * events wait for the callbacks of the leases that drained at once or within that wait, which run on its event thread;
 * the deadlines are the lender's own (it fences a lease not acknowledged in time whatever the
 * client does), so a slow callback can only make a later lease of the same lender end FENCED
 * rather than RECLAIMED. To keep that to one event, callbacks that take longer than 10 ms on an
 * event thread send that peer's revocations to the revocation thread for the next second.
 *
 * <p>Placement: the consumer's {@link ConsumerLimits} are checked first (byte cap, token bucket),
 * then every peer that is alive, within the hints' distance and latency bound, and offers the size
 * becomes a {@link PeerCandidate}; the hinted preferred peer goes first, the policy orders the rest,
 * and the client borrows from each in turn until one lends.
 *
 * <p>Invariants ({@link #checkInvariants()}): the bytes counted borrowed per peer and per consumer
 * equal the sizes of the leases not yet ended; every lease ends exactly once (freed, or revoked with
 * one reason); no access through a lease succeeds after its guard closed, and the lender is told
 * the memory may be reused only after the guard drained.
 *
 * <p>Threads: every method may be called from any thread. One lock guards placement and the
 * accounting; accesses take no lock. Callbacks run on the lender's event thread when the lease
 * drained at once or within the drain wait of a reclaim, otherwise on the client's revocation
 * thread, never under the client's lock,
 * and a callback registered after the lease ended runs on the thread that registers it. Do not
 * free a lease from inside an access of the same lease (the free would wait for itself).
 */
public final class PeerClient implements PeerMemory {
    private static final System.Logger LOG = System.getLogger(PeerClient.class.getName());
    /** Name of the consumer that the client's own {@link PeerMemory} methods allocate for. */
    public static final String DEFAULT_CONSUMER = "default";
    /**
     * Bytes a {@link #read} or {@link #write} moves between two looks at its lease's guard (256 KiB,
     * about 10–40 µs of copying in host memory): the longest a revocation waits for a copy under way.
     */
    public static final long COPY_STEP_BYTES = 256 << 10;
    private static final int REMEMBERED_ENDS = 1 << 16;      // ended leases kept so that a late onRevoke still runs
    private static final long CLOSE_WAIT_NANOS = 5_000_000_000L;
    // Callbacks run on an event thread for longer than this (wall time: long enough that a thread
    // merely preempted on a loaded machine rarely reaches it, short against the lenders' deadlines,
    // 1 s by default) ...
    private static final long SLOW_CALLBACKS_NANOS = 10_000_000;
    // ... send the peer's revocations to the revocation thread for this long.
    private static final long SLOW_CALLBACKS_PENALTY_NANOS = 1_000_000_000L;
    private static final int DRAIN_WAITING = 0; // awaitDrainHere: the event thread waits for the last access
    private static final int DRAIN_DONE = 1;    // the last access left within the wait: the event thread finishes
    private static final int DRAIN_GAVE_UP = 2; // the wait ended first: the last access hands the lease over
    // awaitDrainHere spins this long before it parks: one copy step (COPY_STEP_BYTES) at about 4 GB/s
    private static final long DRAIN_SPIN_NANOS = 60_000;

    private enum LeasePhase { OPEN, FREEING, REVOKING, ENDED }

    /** What the thread that began a revocation does next, outside the lock. */
    private enum AfterBegin {
        FINISH_HERE,      // drained at once: end it here
        AWAIT_DRAIN_HERE, // copies under way: wait for them here, briefly (see drainWaitNanos)
        NOTHING           // the access that leaves last, or the revocation thread, ends it
    }

    /** Default of {@link Builder#revocationHalfLifeNanos}: a minute. */
    public static final long DEFAULT_REVOCATION_HALF_LIFE_NANOS = 60_000_000_000L;

    /** Default of {@link Builder#drainWaitNanos}: a few copy steps ({@link #COPY_STEP_BYTES}). */
    public static final long DEFAULT_DRAIN_WAIT_NANOS = 100_000;

    /** Builds a client; {@link #lenders} is required. */
    public static final class Builder {
        private final List<PeerLender> lenders = new ArrayList<>();
        private PlacementPolicy policy = PlacementPolicy.defaultPolicy();
        private LongSupplier clock = System::nanoTime;
        private long revocationHalfLifeNanos = DEFAULT_REVOCATION_HALF_LIFE_NANOS;
        private long drainWaitNanos = DEFAULT_DRAIN_WAIT_NANOS;

        private Builder() {
        }

        /** Adds lenders; their ids must be unique. The client owns them and closes them on {@link #close()}. */
        public Builder lenders(List<? extends PeerLender> more) {
            lenders.addAll(more);
            return this;
        }

        public Builder lender(PeerLender lender) {
            lenders.add(Objects.requireNonNull(lender, "lender"));
            return this;
        }

        public Builder policy(PlacementPolicy p) {
            this.policy = Objects.requireNonNull(p, "policy");
            return this;
        }

        /** The policy by name, see {@link PlacementPolicy#named}. */
        public Builder policy(String name) {
            return policy(PlacementPolicy.named(name));
        }

        /** Clock for token buckets and revocation decay (nanoseconds, monotonic); {@code System::nanoTime} by default. */
        public Builder clock(LongSupplier nanoClock) {
            this.clock = Objects.requireNonNull(nanoClock, "clock");
            return this;
        }

        /** Half-life of the decayed revocation counts STABILITY weighs ({@link #DEFAULT_REVOCATION_HALF_LIFE_NANOS} by default). */
        public Builder revocationHalfLifeNanos(long nanos) {
            if (nanos <= 0) {
                throw new IllegalArgumentException("revocation half-life must be positive, got " + nanos + " ns");
            }
            this.revocationHalfLifeNanos = nanos;
            return this;
        }

        /**
         * How long a lender's event thread waits for the accesses under way on a lease it revokes
         * before it leaves the lease to them ({@value #DEFAULT_DRAIN_WAIT_NANOS} ns by default; 0:
         * never waits). A read or write stops at its next step once the revocation has begun, so
         * the wait is usually a step; a lease that drains within it ends on the event thread, with
         * no hand-off to the revocation thread.
         */
        public Builder drainWaitNanos(long nanos) {
            if (nanos < 0) {
                throw new IllegalArgumentException("drain wait must not be negative, got " + nanos + " ns");
            }
            this.drainWaitNanos = nanos;
            return this;
        }

        public PeerClient build() {
            return new PeerClient(this);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A client over {@code lenders} with the policy called {@code policy} (see {@link PlacementPolicy#named}). */
    public static PeerClient of(List<? extends PeerLender> lenders, String policy) {
        return builder().lenders(lenders).policy(policy).build();
    }

    // ---------------------------------------------------------------- state

    /** One peer as this client keeps it. Counters guarded by the client's lock; histograms thread-safe. */
    private final class PeerState implements LenderEvents {
        final int index;                 // position in peers
        final PeerLender lender;
        final DecayedCount recent;       // decayed revocations
        final SynchronizedHistogram drain = new SynchronizedHistogram(3);     // ns, revocation event -> drained
        final SynchronizedHistogram callback = new SynchronizedHistogram(3);  // ns, revocation event -> callbacks start
        final SynchronizedHistogram revokeToCallback = new SynchronizedHistogram(3); // ns, the lender's revocation -> callbacks start (RECLAIMED)
        boolean lost;                    // peerLost seen, and no peerReattached since
        long reattachments;              // peerReattached seen
        long borrowedBytes;              // sum of sizes of leases not ended
        long leaseCount;                 // leases not ended
        long allocs;
        long failedAllocs;
        final long[] revocations = new long[RevocationReason.values().length];
        long lateFences;
        long reclaimsOfFreed;            // reclaims that met a lease already freed or being freed: acknowledged, not revocations
        volatile long finishHereFrom;    // System.nanoTime from which drained leases are finished on the event thread again

        PeerState(int index, PeerLender lender, long now) {
            this.index = index;
            this.lender = lender;
            this.recent = new DecayedCount(revocationHalfLifeNanos, now);
            this.finishHereFrom = System.nanoTime();
        }

        @Override
        public void revocationRequested(LentRegion region, long revokedAtNanos, long deadlineNanos) {
            long received = System.nanoTime();
            boolean ackNow = false;
            LeaseEntry here = null; // ended on this thread: drained at once, or (awaitHere) once its copies stop
            boolean awaitHere = false;
            lock.lock();
            try {
                LeaseEntry e = leases.get(region.lease()); // by lease (peer, region, epoch): a lender may pass another instance
                if (e == null) {
                    ackNow = true; // already freed and given back: nothing to drain
                    reclaimsOfFreed++;
                } else {
                    switch (e.phase) {
                        case OPEN -> {
                            e.askedAtNanos = Math.min(revokedAtNanos, received);
                            AfterBegin next = beginRevocation(e, RevocationReason.RECLAIMED, received, drainWaitNanos > 0);
                            here = next == AfterBegin.NOTHING ? null : e;
                            awaitHere = next == AfterBegin.AWAIT_DRAIN_HERE;
                        }
                        case FREEING -> {
                            if (!e.revocationAsked) {
                                e.revocationAsked = true; // the free acknowledges it
                                reclaimsOfFreed++;
                            }
                        }
                        case REVOKING, ENDED -> {
                        }
                    }
                }
            } finally {
                lock.unlock();
            }
            if (ackNow) {
                lender.acknowledge(region);
            } else if (awaitHere) {
                awaitDrainHere(here);
            } else if (here != null) {
                finishHere(here);
            }
        }

        @Override
        public void fenced(LentRegion region) {
            long received = System.nanoTime();
            LeaseEntry here = null; // drained at once: finished on this thread
            lock.lock();
            try {
                LeaseEntry e = leases.get(region.lease());
                if (e == null || e.phase == LeasePhase.ENDED) {
                    LeaseEntry gone = ended.get(region.lease());
                    if (gone != null && gone.reason == RevocationReason.RECLAIMED) {
                        lateFences++;
                    }
                    return;
                }
                switch (e.phase) {
                    case OPEN -> here = beginRevocation(e, RevocationReason.FENCED, received, false) == AfterBegin.FINISH_HERE ? e : null;
                    case REVOKING -> {
                        if (e.reason == RevocationReason.RECLAIMED) {
                            e.reason = RevocationReason.FENCED;
                        }
                    }
                    case FREEING, ENDED -> {
                    }
                }
            } finally {
                lock.unlock();
            }
            if (here != null) {
                finishHere(here);
            }
        }

        @Override
        public void peerLost(int peer) {
            long received = System.nanoTime();
            List<LeaseEntry> here = new ArrayList<>(); // drained at once: finished on this thread
            lock.lock();
            try {
                lost = true;
                for (LeaseEntry e : leases.values()) {
                    if (e.peer != this) {
                        continue;
                    }
                    switch (e.phase) {
                        case OPEN -> {
                            if (beginRevocation(e, RevocationReason.PEER_LOST, received, false) == AfterBegin.FINISH_HERE) {
                                here.add(e);
                            }
                        }
                        case REVOKING -> e.reason = RevocationReason.PEER_LOST;
                        case FREEING, ENDED -> {
                        }
                    }
                }
            } finally {
                lock.unlock();
            }
            for (LeaseEntry e : here) {
                finishHere(e);
            }
        }

        /** The peer lends again; its leases from before the loss were all turned to PEER_LOST by {@link #peerLost}. */
        @Override
        public void peerReattached(int peer) {
            lock.lock();
            try {
                lost = false;
                reattachments++;
            } finally {
                lock.unlock();
            }
        }
    }

    /** One named consumer. Guarded by the client's lock. */
    private static final class ConsumerState {
        final String name;
        final ConsumerLimits limits;
        final TokenBucket bucket;        // null without a rate limit
        final long[] bytesPerPeer;       // by peer index
        long borrowedBytes;
        long leaseCount;
        long allocs;
        long refusedBytes;
        long refusedRate;
        long misses;

        ConsumerState(String name, ConsumerLimits limits, int peers, long now) {
            this.name = name;
            this.limits = limits;
            this.bucket = limits.rateLimited() ? new TokenBucket(limits.allocationsPerSecond(), limits.burst(), now) : null;
            this.bytesPerPeer = new long[peers];
        }
    }

    /** One lease. {@code phase}, {@code reason}, {@code revocationAsked}, {@code receivedAtNanos} guarded by the client's lock. */
    private static final class LeaseEntry {
        final PeerLease lease;
        final LentRegion region;
        final PeerState peer;
        final ConsumerState consumer;
        final LeaseGuard guard = new LeaseGuard();
        final List<RevocationCallback> callbacks = new ArrayList<>(1); // guarded by this entry's monitor
        boolean callbacksTaken;                                        // guarded by this entry's monitor
        LeasePhase phase = LeasePhase.OPEN;
        RevocationReason reason;       // set when revocation begins; may turn into FENCED or PEER_LOST until ENDED
        boolean revocationAsked;       // a revocation arrived while FREEING: the free acknowledges
        boolean freed;                 // ended by free (no callbacks)
        long receivedAtNanos;          // System.nanoTime when the revocation event arrived
        long askedAtNanos;             // System.nanoTime when the lender revoked (RECLAIMED only; 0 otherwise)
        long drainedAtNanos;           // System.nanoTime when the last access left a revoked lease (0: drained at the revocation)
        long drainNanos = -1;          // revoked and finished: revocation event -> last access left, ns; -1 before (guarded by lock)

        LeaseEntry(PeerLease lease, LentRegion region, PeerState peer, ConsumerState consumer) {
            this.lease = lease;
            this.region = region;
            this.peer = peer;
            this.consumer = consumer;
        }
    }

    private final List<PeerState> peers;
    private final Map<Integer, PeerState> peersById = new HashMap<>();
    private final PlacementPolicy policy;
    private final LongSupplier clock;
    private final long revocationHalfLifeNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final ConcurrentHashMap<PeerLease, LeaseEntry> leases = new ConcurrentHashMap<>(); // leases not yet ended
    private final LinkedHashMap<PeerLease, LeaseEntry> ended = new LinkedHashMap<>() {         // guarded by lock, bounded
        @Override
        protected boolean removeEldestEntry(Map.Entry<PeerLease, LeaseEntry> eldest) {
            return size() > REMEMBERED_ENDS;
        }
    };
    private final LinkedHashMap<String, ConsumerState> consumers = new LinkedHashMap<>();     // guarded by lock
    private final ConsumerState defaultConsumer;
    private final LinkedBlockingQueue<LeaseEntry> toDrain = new LinkedBlockingQueue<>();       // handed to the revocation thread
    private final Thread revocationThread;
    private volatile boolean closed;
    private volatile boolean revocationIdle = true;   // the revocation thread has nothing queued or draining
    private final AtomicInteger finishingHere = new AtomicInteger(); // revocations being finished on a lender's event thread
    private final AtomicInteger awaitingDrain = new AtomicInteger(); // revoked leases whose last access has yet to exit
    private long allocMisses;                          // guarded by lock
    private long callbackFailures;                     // guarded by lock
    private final LongAdder abandonedCopies = new LongAdder(); // copies stopped between steps by their lease's revocation; any thread
    private final long drainWaitNanos;                 // how long an event thread waits for a revoked lease's accesses

    private PeerClient(Builder b) {
        if (b.lenders.isEmpty()) {
            throw new IllegalArgumentException("a peer client needs at least one lender");
        }
        this.policy = b.policy;
        this.clock = b.clock;
        this.revocationHalfLifeNanos = b.revocationHalfLifeNanos;
        this.drainWaitNanos = b.drainWaitNanos;
        long now = clock.getAsLong();
        List<PeerState> list = new ArrayList<>();
        for (PeerLender l : b.lenders) {
            PeerState p = new PeerState(list.size(), l, now);
            if (peersById.putIfAbsent(l.id(), p) != null) {
                throw new IllegalArgumentException("two lenders share peer id " + l.id() + ": '" + peersById.get(l.id()).lender.name()
                        + "' and '" + l.name() + "'");
            }
            list.add(p);
        }
        this.peers = List.copyOf(list);
        this.defaultConsumer = new ConsumerState(DEFAULT_CONSUMER, ConsumerLimits.UNLIMITED, peers.size(), now);
        consumers.put(DEFAULT_CONSUMER, defaultConsumer);
        this.revocationThread = Thread.ofPlatform().daemon().name("strata-peer-client-revocations").unstarted(this::runRevocations);
        revocationThread.start();
        for (PeerState p : peers) {
            p.lender.listen(p);
        }
    }

    /** The placement policy in use. */
    public PlacementPolicy policy() {
        return policy;
    }

    /**
     * A view of this client for one named consumer (e.g. {@code kv}, {@code experts}): its
     * allocations count against {@code limits} and are labelled in the stats. Calling again with
     * the same name returns a view of the same consumer.
     *
     * @throws IllegalArgumentException when the name is taken with other limits
     */
    public ConsumerView forConsumer(String name, ConsumerLimits limits) {
        Objects.requireNonNull(limits, "limits");
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("a consumer needs a non-blank name, got '" + name + "'");
        }
        lock.lock();
        try {
            ConsumerState c = consumers.get(name);
            if (c == null) {
                c = new ConsumerState(name, limits, peers.size(), clock.getAsLong());
                consumers.put(name, c);
            } else if (!c.limits.equals(limits)) {
                throw new IllegalArgumentException("consumer '" + name + "' already has limits " + c.limits + ", not " + limits);
            }
            return new ConsumerView(c);
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- PeerMemory

    @Override
    public Optional<PeerLease> alloc(long size, LeaseHints hints) {
        return alloc(defaultConsumer, size, hints, null);
    }

    /** As {@link #alloc(long, LeaseHints)}, with {@code callback} registered before any revocation can run. */
    public Optional<PeerLease> alloc(long size, LeaseHints hints, RevocationCallback callback) {
        return alloc(defaultConsumer, size, hints, Objects.requireNonNull(callback, "callback"));
    }

    @Override
    public void free(PeerLease lease) {
        LeaseEntry e = leases.get(lease);
        if (e == null) {
            return;
        }
        lock.lock();
        try {
            if (e.phase != LeasePhase.OPEN) {
                return;
            }
            e.phase = LeasePhase.FREEING;
            e.guard.close();
        } finally {
            lock.unlock();
        }
        awaitDrained(e.guard);
        boolean acknowledge;
        lock.lock();
        try {
            acknowledge = e.revocationAsked;
            e.freed = true;
            end(e);
        } finally {
            lock.unlock();
        }
        synchronized (e) {
            e.callbacksTaken = true;
            e.callbacks.clear();
        }
        if (acknowledge) {
            e.peer.lender.acknowledge(e.region);
        } else {
            e.peer.lender.giveBack(e.region);
        }
    }

    /**
     * Registers {@code callback} to run once when {@code lease} is revoked. A lease whose revocation
     * already ended (remembered for the last 65536 ended leases) has the callback run at once, on the
     * calling thread, with its reason; a freed lease never calls it.
     *
     * @throws IllegalArgumentException when the lease is unknown to this client
     */
    @Override
    public void onRevoke(PeerLease lease, RevocationCallback callback) {
        Objects.requireNonNull(callback, "callback");
        LeaseEntry e = leases.get(lease);
        if (e == null) {
            lock.lock();
            try {
                e = ended.get(lease);
            } finally {
                lock.unlock();
            }
            if (e == null) {
                throw new IllegalArgumentException(lease + " is not a lease of this client (or ended too long ago)");
            }
        }
        boolean runNow;
        synchronized (e) {
            runNow = e.callbacksTaken;
            if (!runNow) {
                e.callbacks.add(callback);
            }
        }
        if (runNow && !e.freed) {
            RevocationReason reason;
            lock.lock();
            try {
                reason = e.reason;
            } finally {
                lock.unlock();
            }
            callback.revoked(lease, reason);
        }
    }

    @Override
    public boolean write(PeerLease lease, long offset, MemorySegment src) {
        return copy(lease, offset, src, true);
    }

    @Override
    public boolean read(PeerLease lease, long offset, MemorySegment dst) {
        return copy(lease, offset, dst, false);
    }

    /**
     * Copies between {@code local} and the lent region at {@code offset}, inside both guards (the
     * lease's, then the lender's region's); false when either refuses.
     *
     * <p>The copy moves {@link #COPY_STEP_BYTES} at a time and looks at the lease's guard between
     * steps: once the lease's revocation has begun, the copy stops and returns false (counted in
     * {@link PeerClientStats#abandonedCopies}), so a revocation waits for at most one step of an
     * access under way, not for the whole object. A read that stops leaves {@code local} partly
     * written; a write, the lent region, which the lender takes back anyway.
     */
    private boolean copy(PeerLease lease, long offset, MemorySegment local, boolean toPeer) {
        long length = local.byteSize();
        checkBounds(lease, offset, length);
        LeaseEntry e = leases.get(lease);
        if (e == null || !e.guard.enter()) {
            return false;
        }
        try {
            LentRegion r = e.region;
            if (!r.enter()) {
                return false;
            }
            try {
                MemorySegment lent = r.memory();
                for (long done = 0; done < length; ) {
                    long n = Math.min(COPY_STEP_BYTES, length - done);
                    if (toPeer) {
                        MemorySegment.copy(local, done, lent, offset + done, n);
                    } else {
                        MemorySegment.copy(lent, offset + done, local, done, n);
                    }
                    done += n;
                    if (done < length && !e.guard.isOpen()) {
                        abandonedCopies.increment(); // its revocation began: the lease goes back now
                        return false;
                    }
                }
            } finally {
                r.exit();
            }
            return true;
        } finally {
            e.guard.exit();
        }
    }

    /**
     * Runs {@code body} on {@code length} bytes of the lent region at {@code offset}, inside the
     * lease's guard: a revocation waits for it to return (drain). The view must not be kept past the
     * call. Used for transfers that are not a single copy (checksums in place, gather/scatter).
     *
     * @return false, without calling {@code body}, when the lease is no longer valid
     * @throws IndexOutOfBoundsException when the range exceeds the lease
     */
    public boolean access(PeerLease lease, long offset, long length, Consumer<MemorySegment> body) {
        checkBounds(lease, offset, length);
        LeaseEntry e = leases.get(lease);
        if (e == null || !e.guard.enter()) {
            return false;
        }
        try {
            LentRegion r = e.region;
            if (!r.enter()) {
                return false;
            }
            try {
                body.accept(r.memory().asSlice(offset, length));
            } finally {
                r.exit();
            }
            return true;
        } finally {
            e.guard.exit();
        }
    }

    /**
     * True while accesses through {@code lease} can succeed: the client has not begun to end it and
     * the lender's guard still admits it (a lender may refuse before its revocation event arrives).
     * Once false, never true again.
     */
    @Override
    public boolean valid(PeerLease lease) {
        LeaseEntry e = leases.get(lease);
        if (e == null || !e.guard.isOpen() || e.peer.lost) {
            return false;
        }
        if (!e.region.enter()) {
            return false;
        }
        e.region.exit();
        return true;
    }

    @Override
    public List<PeerStatus> peers() {
        lock.lock();
        try {
            List<PeerStatus> out = new ArrayList<>(peers.size());
            for (PeerState p : peers) {
                PeerLender l = p.lender;
                long revoked = 0;
                for (long n : p.revocations) {
                    revoked += n;
                }
                out.add(new PeerStatus(l.id(), l.name(), l.distance(), l.alive() ? l.lendableBytes() : 0,
                        p.borrowedBytes, revoked, !p.lost && l.alive()));
            }
            return out;
        } finally {
            lock.unlock();
        }
    }

    /**
     * True while this client is revoking {@code lease}: the peer's event arrived, new accesses are
     * refused, and the drain or the callbacks are still to finish.
     */
    public boolean revoking(PeerLease lease) {
        LeaseEntry e = leases.get(lease);
        if (e == null) {
            return false;
        }
        lock.lock();
        try {
            return e.phase == LeasePhase.REVOKING;
        } finally {
            lock.unlock();
        }
    }

    /**
     * When the lender revoked {@code lease}, on the {@link System#nanoTime} scale, as the lender
     * passed it with the revocation; 0 if the lease was not reclaimed by its lender (not revoked, or
     * ended by a fence or the peer's loss) or is no longer remembered (the client keeps the most
     * recent ended leases only). Any thread.
     */
    public long revokedAtNanos(PeerLease lease) {
        lock.lock();
        try {
            LeaseEntry e = knownLocked(lease);
            return e == null || e.reason != RevocationReason.RECLAIMED ? 0 : e.askedAtNanos;
        } finally {
            lock.unlock();
        }
    }

    /**
     * How long the revocation of {@code lease} waited for the accesses under way: from the
     * revocation reaching this client to the last of them leaving, in nanoseconds (0 when none was
     * under way), as the {@code strata_peer_drain_seconds} summary records it; -1 if the lease was
     * not revoked (freed, or still open), its revocation has not finished, or it is no longer
     * remembered (the client keeps the most recent ended leases only). Any thread.
     */
    public long drainNanos(PeerLease lease) {
        lock.lock();
        try {
            LeaseEntry e = knownLocked(lease);
            return e == null ? -1 : e.drainNanos;
        } finally {
            lock.unlock();
        }
    }

    /** The entry of {@code lease}, not yet ended or among the ended ones remembered, or null; under the lock. */
    private LeaseEntry knownLocked(PeerLease lease) {
        LeaseEntry e = leases.get(lease);
        return e != null ? e : ended.get(lease);
    }

    /** The leases not yet ended (open, being freed or being revoked), as of now. */
    public List<PeerLease> liveLeases() {
        return List.copyOf(leases.keySet());
    }

    /** True when no revocation is queued, draining or running its callbacks. */
    public boolean revocationsIdle() {
        return revocationIdle && toDrain.isEmpty() && finishingHere.get() == 0 && awaitingDrain.get() == 0;
    }

    /**
     * Gives every lease back (waiting for their accesses to end), lets revocations under way finish
     * (up to 5 s), stops the revocation thread and closes every lender. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        for (PeerLease lease : liveLeases()) {
            free(lease);
        }
        long until = System.nanoTime() + CLOSE_WAIT_NANOS;
        while (!revocationsIdle() && System.nanoTime() < until) {
            LockSupport.parkNanos(100_000);
        }
        closed = true;
        revocationThread.interrupt();
        try {
            revocationThread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (PeerState p : peers) {
            p.lender.close();
        }
    }

    // ---------------------------------------------------------------- stats and checks

    public PeerClientStats stats() {
        lock.lock();
        try {
            long now = clock.getAsLong();
            List<PeerClientStats.Peer> ps = new ArrayList<>(peers.size());
            for (PeerState p : peers) {
                PeerLender l = p.lender;
                boolean alive = !p.lost && l.alive();
                ps.add(new PeerClientStats.Peer(l.id(), l.name(), l.distance(), alive, alive ? l.lendableBytes() : 0,
                        p.borrowedBytes, p.leaseCount, p.allocs, p.failedAllocs,
                        p.revocations[RevocationReason.RECLAIMED.ordinal()], p.revocations[RevocationReason.FENCED.ordinal()],
                        p.revocations[RevocationReason.PEER_LOST.ordinal()], p.lateFences, p.recent.valueAt(now),
                        p.drain.getTotalCount(), p.drain.getValueAtPercentile(50), p.drain.getValueAtPercentile(99),
                        p.drain.getMaxValue(), p.callback.getValueAtPercentile(50), p.callback.getValueAtPercentile(99),
                        p.callback.getMaxValue(), p.reattachments, p.revokeToCallback.getTotalCount(),
                        p.revokeToCallback.getValueAtPercentile(50), p.revokeToCallback.getValueAtPercentile(99),
                        p.revokeToCallback.getMaxValue(), p.reclaimsOfFreed));
            }
            List<PeerClientStats.Consumer> cs = new ArrayList<>(consumers.size());
            for (ConsumerState c : consumers.values()) {
                cs.add(new PeerClientStats.Consumer(c.name, c.limits.maxBytes(), c.borrowedBytes, c.leaseCount, c.allocs,
                        c.refusedBytes, c.refusedRate, c.misses));
            }
            return new PeerClientStats(ps, cs, allocMisses, callbackFailures, abandonedCopies.sum());
        } finally {
            lock.unlock();
        }
    }

    /**
     * Checks the accounting against the leases not yet ended: bytes and counts per peer and per
     * consumer. Throws {@link IllegalStateException} naming the first mismatch.
     */
    public void checkInvariants() {
        lock.lock();
        try {
            long[] peerBytes = new long[peers.size()];
            long[] peerLeases = new long[peers.size()];
            Map<ConsumerState, long[]> perConsumer = new HashMap<>();
            for (LeaseEntry e : leases.values()) {
                if (e.phase == LeasePhase.ENDED) {
                    throw new IllegalStateException(e.lease + " ended but is still in the lease table");
                }
                if (e.phase == LeasePhase.OPEN && !e.guard.isOpen()) {
                    throw new IllegalStateException(e.lease + " is open but its guard is closed");
                }
                peerBytes[e.peer.index] += e.lease.size();
                peerLeases[e.peer.index]++;
                long[] c = perConsumer.computeIfAbsent(e.consumer, k -> new long[2 + peers.size()]);
                c[0] += e.lease.size();
                c[1]++;
                c[2 + e.peer.index] += e.lease.size();
            }
            for (PeerState p : peers) {
                if (p.borrowedBytes != peerBytes[p.index] || p.leaseCount != peerLeases[p.index]) {
                    throw new IllegalStateException("peer '" + p.lender.name() + "': counted " + p.borrowedBytes + " bytes in "
                            + p.leaseCount + " leases but live leases hold " + peerBytes[p.index] + " bytes in " + peerLeases[p.index]);
                }
            }
            for (ConsumerState c : consumers.values()) {
                long[] got = perConsumer.getOrDefault(c, new long[2 + peers.size()]);
                if (c.borrowedBytes != got[0] || c.leaseCount != got[1]) {
                    throw new IllegalStateException("consumer '" + c.name + "': counted " + c.borrowedBytes + " bytes in " + c.leaseCount
                            + " leases but live leases hold " + got[0] + " bytes in " + got[1]);
                }
                if (c.borrowedBytes > c.limits.maxBytes()) {
                    throw new IllegalStateException("consumer '" + c.name + "' holds " + c.borrowedBytes + " bytes over its cap "
                            + c.limits.maxBytes());
                }
                for (PeerState p : peers) {
                    if (c.bytesPerPeer[p.index] != got[2 + p.index]) {
                        throw new IllegalStateException("consumer '" + c.name + "' on peer '" + p.lender.name() + "': counted "
                                + c.bytesPerPeer[p.index] + " bytes but live leases hold " + got[2 + p.index]);
                    }
                }
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return "PeerClient[" + peers.size() + " peer(s), " + policy.name() + "]";
    }

    // ---------------------------------------------------------------- internals

    private Optional<PeerLease> alloc(ConsumerState consumer, long size, LeaseHints hints, RevocationCallback callback) {
        Objects.requireNonNull(hints, "hints");
        if (size <= 0) {
            throw new IllegalArgumentException("peer allocation size must be positive, got " + size);
        }
        if (closed) {
            throw new IllegalStateException("peer client is closed; cannot allocate " + size + " bytes");
        }
        lock.lock();
        try {
            if (size > consumer.limits.maxBytes() - consumer.borrowedBytes) {
                consumer.refusedBytes++;
                return Optional.empty();
            }
            long now = clock.getAsLong();
            if (consumer.bucket != null && !consumer.bucket.tryTake(now)) {
                consumer.refusedRate++;
                return Optional.empty();
            }
            List<PeerCandidate> candidates = new ArrayList<>(peers.size());
            PeerCandidate preferred = null;
            for (PeerState p : peers) {
                PeerLender l = p.lender;
                if (p.lost || !l.alive() || l.distance() > hints.maxDistance()
                        || l.firstByteLatencyNanos() > hints.latencyBoundNanos()) {
                    continue;
                }
                long lendable = l.lendableBytes();
                if (lendable < size) {
                    continue;
                }
                PeerCandidate c = new PeerCandidate(l.id(), l.name(), l.distance(), lendable, l.firstByteLatencyNanos(),
                        p.recent.valueAt(now), consumer.bytesPerPeer[p.index]);
                if (l.id() == hints.preferredPeer()) {
                    preferred = c;
                } else {
                    candidates.add(c);
                }
            }
            Comparator<PeerCandidate> order = policy.order(size);
            candidates.sort(order);
            if (preferred != null) {
                candidates.addFirst(preferred);
            }
            for (PeerCandidate c : candidates) {
                PeerState p = peersById.get(c.peer());
                LentRegion region = p.lender.borrow(size);
                if (region == null) {
                    p.failedAllocs++;
                    continue;
                }
                PeerLease lease = region.lease();
                if (lease.peer() != c.peer() || lease.size() != size) {
                    p.lender.giveBack(region);
                    throw new IllegalStateException("lender '" + p.lender.name() + "' (peer " + c.peer() + ") lent " + lease
                            + " for a request of " + size + " bytes");
                }
                LeaseEntry e = new LeaseEntry(lease, region, p, consumer);
                if (callback != null) {
                    e.callbacks.add(callback);
                }
                leases.put(lease, e);
                p.borrowedBytes += size;
                p.leaseCount++;
                p.allocs++;
                consumer.borrowedBytes += size;
                consumer.bytesPerPeer[p.index] += size;
                consumer.leaseCount++;
                consumer.allocs++;
                return Optional.of(lease);
            }
            if (consumer.bucket != null) {
                consumer.bucket.giveBack();
            }
            consumer.misses++;
            allocMisses++;
            return Optional.empty();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Under lock: OPEN -> REVOKING; closes the guard. With no access in flight once it is closed
     * (none can begin after) the lease is drained: FINISH_HERE, and the caller, the lender's event
     * thread, finishes it itself ({@link #finishHere}) after releasing the lock, unless the peer's
     * callbacks were slow there lately (then the revocation thread does: NOTHING). With an access
     * under way and {@code mayAwait} (and the peer not penalised), AWAIT_DRAIN_HERE: the caller
     * waits for it briefly outside the lock ({@link #awaitDrainHere}). Otherwise the access that
     * leaves last hands the lease to the revocation thread ({@link #drained}): NOTHING.
     */
    private AfterBegin beginRevocation(LeaseEntry e, RevocationReason reason, long receivedNanos, boolean mayAwait) {
        e.phase = LeasePhase.REVOKING;
        e.reason = reason;
        e.receivedAtNanos = receivedNanos;
        e.guard.close();
        boolean hereAllowed = receivedNanos - e.peer.finishHereFrom >= 0;
        if (e.guard.inFlight() != 0) {
            if (mayAwait && hereAllowed) {
                finishingHere.incrementAndGet(); // this thread holds it until it drains or is handed on
                return AfterBegin.AWAIT_DRAIN_HERE;
            }
            awaitingDrain.incrementAndGet();
            if (e.guard.runWhenDrained(() -> drained(e))) {
                return AfterBegin.NOTHING;
            }
            awaitingDrain.decrementAndGet(); // drained meanwhile: as if no access had been under way
        }
        if (hereAllowed) {
            finishingHere.incrementAndGet();
            return AfterBegin.FINISH_HERE;
        }
        handOver(e);
        return AfterBegin.NOTHING;
    }

    /**
     * On the lender's event thread, outside the lock, for a lease {@link #beginRevocation} left with
     * accesses under way: waits up to {@link #drainWaitNanos} for them (a copy stops at its next
     * step), then finishes the revocation here, with no hand-off; an access still under way after
     * that hands the lease to the revocation thread when it leaves, as without the wait.
     *
     * <p>The thread spins for {@value #DRAIN_SPIN_NANOS} ns, about one copy step at 4 GB/s, so that
     * an access seen at its next step boundary ends the wait without a wake-up (with a spin of
     * 20 µs, drains of 20–90 µs cost a park and a wake-up: the in-process in-flight
     * revoke-to-callback p99 of {@code bench peer} was 1.86–2.41 reads' medians in seven runs on
     * a two-processor machine; with 60 µs, 0.63, 2.06 and 2.42 in three, and 0.99 twice in a
     * harness of the same measure), then parks, and the access that leaves last wakes it. Polling with
     * {@code Thread.yield()} would give the core away for a whole scheduler slice (milliseconds)
     * whenever another thread is runnable there: a fair scheduler that honours a yield moves the
     * yielding thread behind the others. Who finishes is settled by one compare-and-set
     * on {@code state}: the leaving access ({@link #DRAIN_DONE}: it wakes this thread) or this
     * thread at its deadline ({@link #DRAIN_GAVE_UP}: the access hands the lease over when it leaves).
     */
    private void awaitDrainHere(LeaseEntry e) {
        long deadline = System.nanoTime() + drainWaitNanos;
        Thread waiter = Thread.currentThread();
        AtomicInteger state = new AtomicInteger(DRAIN_WAITING);
        awaitingDrain.incrementAndGet(); // before the last access can hand the lease over
        boolean registered = e.guard.runWhenDrained(() -> {
            e.drainedAtNanos = System.nanoTime(); // published to the waiter by the compare-and-set, to the revocation thread by its queue
            if (state.compareAndSet(DRAIN_WAITING, DRAIN_DONE)) {
                LockSupport.unpark(waiter);
            } else { // the waiter gave up
                handOver(e);
                awaitingDrain.decrementAndGet(); // after the hand-over: revocationsIdle never sees a gap
            }
        });
        if (registered) {
            long spinUntil = Math.min(deadline, System.nanoTime() + DRAIN_SPIN_NANOS);
            while (state.get() == DRAIN_WAITING && System.nanoTime() - spinUntil < 0) {
                Thread.onSpinWait(); // most drains end within microseconds: no wake-up for them
            }
            while (state.get() == DRAIN_WAITING) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    if (state.compareAndSet(DRAIN_WAITING, DRAIN_GAVE_UP)) {
                        finishingHere.decrementAndGet(); // after awaitingDrain rose: revocationsIdle never sees a gap
                        return;
                    }
                    break; // drained meanwhile
                }
                LockSupport.parkNanos(left); // a spurious return looks again
            }
        } else {
            e.drainedAtNanos = System.nanoTime(); // drained before the registration: the action will not run
        }
        awaitingDrain.decrementAndGet();
        finishHere(e);
    }

    /** On the thread whose access left a revoked lease last: stamps the drain and hands the lease over. */
    private void drained(LeaseEntry e) {
        e.drainedAtNanos = System.nanoTime();
        handOver(e);
        awaitingDrain.decrementAndGet(); // after the hand-over: revocationsIdle never sees a gap
    }

    /** Queues a lease for the revocation thread; only a drained one (closed guard, nothing in flight). */
    private void handOver(LeaseEntry e) {
        revocationIdle = false;
        toDrain.add(e);
    }

    /**
     * On the lender's event thread, outside the lock: finishes a revocation that drained at once
     * (see {@link #beginRevocation}). Callbacks that take longer than {@value #SLOW_CALLBACKS_NANOS}
     * ns here send the peer's next revocations to the revocation thread for
     * {@value #SLOW_CALLBACKS_PENALTY_NANOS} ns, so a slow callback holds up the lender's other
     * events (its other leases' revocations and fences) once, not at every revocation.
     */
    private void finishHere(LeaseEntry e) {
        try {
            long callbackNanos = finishRevocation(e);
            if (callbackNanos > SLOW_CALLBACKS_NANOS) {
                e.peer.finishHereFrom = System.nanoTime() + SLOW_CALLBACKS_PENALTY_NANOS;
                LOG.log(System.Logger.Level.DEBUG, () -> "revocation callbacks of " + e.lease + " took " + callbackNanos / 1000
                        + " us on the lender's event thread; the peer's revocations end on the revocation thread for "
                        + SLOW_CALLBACKS_PENALTY_NANOS / 1_000_000 + " ms");
            }
        } finally {
            finishingHere.decrementAndGet();
        }
    }

    /** Under lock: removes a lease from the table and the accounting. */
    private void end(LeaseEntry e) {
        e.phase = LeasePhase.ENDED;
        leases.remove(e.lease);
        ended.put(e.lease, e);
        PeerState p = e.peer;
        p.borrowedBytes -= e.lease.size();
        p.leaseCount--;
        ConsumerState c = e.consumer;
        c.borrowedBytes -= e.lease.size();
        c.bytesPerPeer[p.index] -= e.lease.size();
        c.leaseCount--;
    }

    /** The revocation thread: drains leases handed over, then ends them, runs callbacks, acknowledges. */
    private void runRevocations() {
        while (!closed) {
            LeaseEntry e;
            try {
                e = toDrain.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException ie) {
                continue; // close() interrupts after setting closed; otherwise keep serving
            }
            if (e != null) {
                finishRevocation(e); // handed over drained: its guard is closed and empty (handOver)
            }
            if (toDrain.isEmpty()) {
                revocationIdle = true;
                if (!toDrain.isEmpty()) {
                    revocationIdle = false; // raced with a new hand-over
                }
            }
        }
    }

    /**
     * After the lease's guard drained, on the revocation thread or (drained at once) the lender's
     * event thread: ends the lease, runs its callbacks once, acknowledges a reclaim.
     *
     * @return nanoseconds the callbacks took; 0 if the lease had ended already
     */
    private long finishRevocation(LeaseEntry e) {
        long drained = e.drainedAtNanos != 0 ? e.drainedAtNanos : System.nanoTime();
        RevocationReason reason;
        long drainNanos;
        lock.lock();
        try {
            if (e.phase != LeasePhase.REVOKING) {
                return 0;
            }
            if (e.reason == RevocationReason.RECLAIMED && e.region.takenBack()) {
                e.reason = RevocationReason.FENCED; // fenced before its event arrived: no acknowledgement
            }
            reason = e.reason;
            drainNanos = Math.max(0, drained - e.receivedAtNanos);
            e.drainNanos = drainNanos;
            end(e);
            PeerState p = e.peer;
            p.revocations[reason.ordinal()]++;
            p.recent.add(clock.getAsLong());
        } finally {
            lock.unlock();
        }
        e.peer.drain.recordValue(drainNanos);
        List<RevocationCallback> run;
        synchronized (e) {
            e.callbacksTaken = true;
            run = List.copyOf(e.callbacks);
            e.callbacks.clear();
        }
        long callbacksStart = System.nanoTime();
        e.peer.callback.recordValue(Math.max(0, callbacksStart - e.receivedAtNanos));
        if (reason == RevocationReason.RECLAIMED && e.askedAtNanos != 0) {
            e.peer.revokeToCallback.recordValue(Math.max(0, callbacksStart - e.askedAtNanos));
        }
        for (RevocationCallback cb : run) {
            try {
                cb.revoked(e.lease, reason);
            } catch (RuntimeException | Error t) {
                lock.lock();
                try {
                    callbackFailures++;
                } finally {
                    lock.unlock();
                }
                LOG.log(System.Logger.Level.WARNING, "revocation callback of " + e.lease + " (" + reason + ") failed", t);
            }
        }
        long callbackNanos = Math.max(1, System.nanoTime() - callbacksStart);
        if (reason == RevocationReason.RECLAIMED) {
            try {
                e.peer.lender.acknowledge(e.region);
            } catch (RuntimeException t) {
                LOG.log(System.Logger.Level.WARNING, "acknowledging the revocation of " + e.lease + " failed", t);
            }
        }
        return callbackNanos;
    }

    private static void awaitDrained(LeaseGuard guard) {
        int spins = 0;
        while (guard.inFlight() != 0) {
            if (++spins < 100) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(10_000);
            }
        }
    }

    private static void checkBounds(PeerLease lease, long offset, long length) {
        if (offset < 0 || length < 0 || offset > lease.size() - length) {
            throw new IndexOutOfBoundsException("access of " + length + " bytes at offset " + offset + " is outside " + lease);
        }
    }

    /**
     * The {@link PeerMemory} of one consumer of a {@link PeerClient}: allocations count against the
     * consumer's limits; everything else is the client's. {@link #close()} frees the consumer's
     * leases and leaves the client open.
     *
     * <p>Threads: any, as the client.
     */
    public final class ConsumerView implements PeerMemory {
        private final ConsumerState consumer;

        private ConsumerView(ConsumerState consumer) {
            this.consumer = consumer;
        }

        public String name() {
            return consumer.name;
        }

        public ConsumerLimits limits() {
            return consumer.limits;
        }

        /** The client this view belongs to. */
        public PeerClient client() {
            return PeerClient.this;
        }

        @Override
        public Optional<PeerLease> alloc(long size, LeaseHints hints) {
            return PeerClient.this.alloc(consumer, size, hints, null);
        }

        /** As {@link #alloc(long, LeaseHints)}, with {@code callback} registered before any revocation can run. */
        public Optional<PeerLease> alloc(long size, LeaseHints hints, RevocationCallback callback) {
            return PeerClient.this.alloc(consumer, size, hints, Objects.requireNonNull(callback, "callback"));
        }

        @Override
        public void free(PeerLease lease) {
            PeerClient.this.free(lease);
        }

        @Override
        public void onRevoke(PeerLease lease, RevocationCallback callback) {
            PeerClient.this.onRevoke(lease, callback);
        }

        @Override
        public boolean write(PeerLease lease, long offset, MemorySegment src) {
            return PeerClient.this.write(lease, offset, src);
        }

        @Override
        public boolean read(PeerLease lease, long offset, MemorySegment dst) {
            return PeerClient.this.read(lease, offset, dst);
        }

        /** See {@link PeerClient#access}. */
        public boolean access(PeerLease lease, long offset, long length, Consumer<MemorySegment> body) {
            return PeerClient.this.access(lease, offset, length, body);
        }

        @Override
        public boolean valid(PeerLease lease) {
            return PeerClient.this.valid(lease);
        }

        @Override
        public List<PeerStatus> peers() {
            return PeerClient.this.peers();
        }

        /** Frees this consumer's leases; the client stays open. */
        @Override
        public void close() {
            List<PeerLease> mine = new ArrayList<>();
            for (LeaseEntry e : leases.values()) {
                if (e.consumer == consumer) {
                    mine.add(e.lease);
                }
            }
            for (PeerLease l : mine) {
                PeerClient.this.free(l);
            }
        }

        @Override
        public String toString() {
            return "PeerClient.ConsumerView['" + consumer.name + "', " + consumer.limits + "]";
        }
    }
}
