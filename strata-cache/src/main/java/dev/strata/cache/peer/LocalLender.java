package dev.strata.cache.peer;

import dev.strata.memory.alloc.BestFitAllocator;
import dev.strata.memory.host.OffHeapRegion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An in-process peer: the lending agent and its {@link PeerLender} transport in one object,
 * lending regions carved from one long-lived arena of a configured budget.
 *
 * <p>Design note (the agent's protocol).
 * <ul>
 *   <li><b>Offer.</b> The agent's own demand ({@link #demand(long)}; 0 at start, or set as its
 *       complement by {@link #lendable(long)}) decides its offer by the {@link LendingRule} every
 *       Strata lender follows. {@link #borrow} carves a best-fit range ({@link BestFitAllocator},
 *       sizes rounded to the alignment) and refuses (null) when the rule refuses the loan (the
 *       memory held, lent, being revoked or waiting to be released, plus the request would pass
 *       the offer) or no free range fits.</li>
 *   <li><b>Revocation.</b> When the demand leaves a shortfall (the bytes not lent, or lent and
 *       already asked back, fall short of it), the agent asks back the regions the rule chooses:
 *       the smallest covering what is short, else the largest, ties to the newest lease. Each one:
 *       gate REVOKING (new accesses refused at once), a deadline {@code now + grace}, and
 *       {@link LenderEvents#revocationRequested} on the event thread.</li>
 *   <li><b>Release.</b> On {@link #acknowledge} (or {@link #giveBack}) the region's epoch advances
 *       and its range is freed once no access begun under the old epoch is in flight (normally at
 *       once: the client drained before acknowledging).</li>
 *   <li><b>Fencing.</b> The agent thread fences a region still REVOKING at its deadline: the epoch
 *       advances (every later {@code enter} through the old lease fails), the client is told
 *       {@link LenderEvents#fenced}, and the range is freed only when the region's in-flight count
 *       is zero. A late acknowledgement is a no-op.</li>
 *   <li><b>Death.</b> {@link #kill()} simulates the agent dying: every region's epoch advances, every
 *       later enter and borrow fails, the client is told {@link LenderEvents#peerLost}. The ranges
 *       are freed (as the OS would reclaim a dead process's memory) once their accesses ended.</li>
 * </ul>
 *
 * <p>Invariants (checked by {@link #checkInvariants()}): the region table and the allocator's live
 * ranges are the same set; free + lent + revoking + releasing = budget; an access that entered
 * successfully never overlaps the reuse of its range (the {@link LocalRegion} handshake).
 *
 * <p>Threads: every method may be called from any thread. One lock guards the table, the allocator
 * and the counters; it is never held while calling the listener. Events are delivered one at a
 * time on this lender's event thread; deadlines and releases run on its agent thread, so a
 * listener that blocks delays events but never a fence.
 */
public final class LocalLender implements PeerLender {
    private static final System.Logger LOG = System.getLogger(LocalLender.class.getName());
    private static final long RELEASE_POLL_NANOS = 50_000;        // agent re-checks in-flight counts of closed regions this often
    private static final long CLOSE_DRAIN_NANOS = 2_000_000_000L; // close() waits this long for accesses to end before freeing the arena

    /** Where a lent region is in its life. */
    public enum Phase {
        /** Lent and accessible. */
        LENT,
        /** Asked back; new accesses refused; waiting for the client's acknowledgement or the deadline. */
        REVOKING,
        /** Epoch advanced; the range is freed once the accesses begun under the old epoch end. */
        RELEASING,
        /** Freed; the memory may belong to another lease. */
        RELEASED
    }

    /**
     * How a local lender is set up.
     *
     * @param id                    peer id, unique among the lenders one client sees, {@code >= 0}
     * @param name                  human name, e.g. {@code gpu1}
     * @param distance              topology distance from the client (0 same device, 1 direct link, 2 via host)
     * @param budgetBytes           bytes of the arena, the most the agent ever lends
     * @param alignment             bytes, power of two; region offsets and held sizes are multiples
     * @param firstByteLatencyNanos modelled first-byte latency of a fetch from this peer, ns
     * @param graceNanos            time a client has to acknowledge a revocation before it is fenced, ns
     */
    public record Config(int id, String name, int distance, long budgetBytes, long alignment,
                         long firstByteLatencyNanos, long graceNanos) {
        public Config {
            if (id < 0 || name == null || name.isBlank() || distance < 0 || budgetBytes <= 0 || alignment <= 0
                    || Long.bitCount(alignment) != 1 || firstByteLatencyNanos < 0 || graceNanos <= 0) {
                throw new IllegalArgumentException("local lender config: id " + id + " must be >= 0, name '" + name
                        + "' non-blank, distance " + distance + " >= 0, budget " + budgetBytes + " bytes > 0, alignment "
                        + alignment + " a power of two, first-byte latency " + firstByteLatencyNanos
                        + " ns >= 0, grace " + graceNanos + " ns > 0");
            }
        }

        /** Distance 1, 64-byte alignment, 2 µs first-byte latency, 100 ms grace. */
        public static Config of(int id, String name, long budgetBytes) {
            return new Config(id, name, 1, budgetBytes, 64, 2_000, 100_000_000L);
        }

        public Config withDistance(int d) {
            return new Config(id, name, d, budgetBytes, alignment, firstByteLatencyNanos, graceNanos);
        }

        public Config withAlignment(long a) {
            return new Config(id, name, distance, budgetBytes, a, firstByteLatencyNanos, graceNanos);
        }

        public Config withFirstByteLatency(long nanos) {
            return new Config(id, name, distance, budgetBytes, alignment, nanos, graceNanos);
        }

        public Config withGrace(long nanos) {
            return new Config(id, name, distance, budgetBytes, alignment, firstByteLatencyNanos, nanos);
        }
    }

    /**
     * A snapshot of the lender's memory and counters. {@code lentBytes + revokingBytes +
     * releasingBytes + freeBytes == budgetBytes} (held sizes, rounded to the alignment).
     *
     * @param budgetBytes        arena bytes
     * @param offerBytes         bytes the agent offers now: the budget less its demand ({@link #demand(long)})
     * @param lentBytes          held by regions LENT
     * @param revokingBytes      held by regions REVOKING
     * @param releasingBytes     held by closed regions whose accesses have not all ended
     * @param freeBytes          not held by any region
     * @param regions            regions in the table (every phase but RELEASED)
     * @param borrows            successful borrows
     * @param refusedBorrows     borrows refused (offer, fragmentation, dead)
     * @param revocationRequests regions asked back
     * @param acknowledgements   revocations acknowledged in time
     * @param giveBacks          regions given back before any revocation
     * @param fences             regions fenced at their deadline
     * @param lateAcknowledgements acknowledgements that arrived after the fence
     * @param alive              false after {@link #kill()} or {@link #close()}
     */
    public record Stats(long budgetBytes, long offerBytes, long lentBytes, long revokingBytes, long releasingBytes,
                        long freeBytes, int regions, long borrows, long refusedBorrows, long revocationRequests,
                        long acknowledgements, long giveBacks, long fences, long lateAcknowledgements, boolean alive) {
    }

    private final Config config;
    private final Arena arena;                        // shared, one for the lender's life
    private final MemorySegment memory;               // budgetBytes, the lendable memory
    private final BestFitAllocator allocator;         // ranges of memory, guarded by its own lock and ours
    private final LendingRule rule;                   // budgetBytes, granule 1 byte (held sizes are already aligned)
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition agentWake = lock.newCondition();
    private final HashMap<Long, LocalRegion> regions = new HashMap<>(); // offset (= region id) -> region not yet RELEASED
    private final ArrayDeque<LocalRegion> revoking = new ArrayDeque<>(); // REVOKING in deadline order (deadline = request + grace)
    private final ArrayList<LocalRegion> releasing = new ArrayList<>();  // RELEASING with accesses still in flight
    private final LinkedBlockingQueue<Runnable> events = new LinkedBlockingQueue<>(); // deliveries for the event thread
    private final java.util.concurrent.atomic.AtomicLong undelivered = new java.util.concurrent.atomic.AtomicLong(); // posted, not yet run to the end
    private final Thread eventThread;
    private final Thread agentThread;

    private volatile LenderEvents listener;
    private volatile boolean alive = true;
    private volatile boolean closed;
    private long demandBytes;       // guarded by lock: the agent's own demand, 0 .. budget (budget once dead)
    private long nextEpoch = 1;     // guarded by lock; epochs are unique across the lender's regions
    private long lentBytes;         // guarded by lock: held sizes of LENT regions
    private long revokingBytes;     // guarded by lock: held sizes of REVOKING regions
    private long releasingBytes;    // guarded by lock: held sizes of RELEASING regions
    private long borrows;
    private long refusedBorrows;
    private long revocationRequests;
    private long acknowledgements;
    private long giveBacks;
    private long fences;
    private long lateAcknowledgements;

    /**
     * Reserves the budget (zeroed, touched once here, on huge pages where the kernel gives them) and
     * starts the event and agent threads.
     */
    public LocalLender(Config config) {
        this.config = config;
        this.arena = Arena.ofShared();
        this.memory = OffHeapRegion.reserve(config.budgetBytes(), Math.max(config.alignment(), OffHeapRegion.PAGE), arena, true);
        this.allocator = new BestFitAllocator(config.budgetBytes(), config.alignment());
        this.rule = new LendingRule(config.budgetBytes(), 1);
        this.eventThread = Thread.ofPlatform().daemon().name("strata-peer-" + config.name() + "-events").unstarted(this::deliverEvents);
        this.agentThread = Thread.ofPlatform().daemon().name("strata-peer-" + config.name() + "-agent").unstarted(this::runAgent);
        eventThread.start();
        agentThread.start();
    }

    public Config config() {
        return config;
    }

    @Override
    public int id() {
        return config.id();
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public int distance() {
        return config.distance();
    }

    @Override
    public long firstByteLatencyNanos() {
        return config.firstByteLatencyNanos();
    }

    @Override
    public long lendableBytes() {
        if (!alive) {
            return 0;
        }
        lock.lock();
        try {
            return rule.headroomBytes(demandBytes, allocator.used());
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean alive() {
        return alive;
    }

    @Override
    public LentRegion borrow(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("borrow size must be positive, got " + size + " (lender '" + name() + "')");
        }
        lock.lock();
        try {
            long rounded = roundUp(size);
            if (!alive || !rule.mayLend(demandBytes, allocator.used(), rounded)) {
                refusedBorrows++;
                return null;
            }
            long offset = allocator.allocate(size);
            if (offset < 0) {
                refusedBorrows++;
                return null;
            }
            PeerLease lease = new PeerLease(config.id(), offset, size, nextEpoch++);
            LocalRegion region = new LocalRegion(this, lease, memory.asSlice(offset, size), offset, rounded);
            regions.put(offset, region);
            lentBytes += rounded;
            borrows++;
            return region;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void giveBack(LentRegion region) {
        LocalRegion r = mine(region);
        lock.lock();
        try {
            if (r.phase == Phase.LENT || r.phase == Phase.REVOKING) {
                giveBacks++;
                closeAndRelease(r);
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void acknowledge(LentRegion region) {
        LocalRegion r = mine(region);
        lock.lock();
        try {
            switch (r.phase) {
                case REVOKING -> {
                    acknowledgements++;
                    closeAndRelease(r);
                }
                case LENT -> {
                    // acknowledging a revocation that was never asked: the client gives the region up
                    giveBacks++;
                    closeAndRelease(r);
                }
                case RELEASING, RELEASED -> {
                    if (r.fenced) {
                        lateAcknowledgements++;
                    }
                }
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void listen(LenderEvents events) {
        this.listener = events;
    }

    // ---------------------------------------------------------------- agent side

    /**
     * Sets the agent's own demand, clamped to the budget; it offers the rest ({@link LendingRule}).
     * When the bytes not lent (free, or lent and already asked back) fall short of the demand,
     * the regions the rule chooses are asked back. A dead agent ignores this.
     */
    public void demand(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("demand must be >= 0 bytes, got " + bytes + " (lender '" + name() + "')");
        }
        lock.lock();
        try {
            if (!alive) {
                return;
            }
            demandBytes = Math.min(bytes, config.budgetBytes());
            long shortfall = rule.shortfallBytes(demandBytes, config.budgetBytes() - lentBytes);
            if (shortfall == 0) {
                return;
            }
            List<LendingRule.Loan> lent = new ArrayList<>();
            for (LocalRegion r : regions.values()) {
                if (r.phase == Phase.LENT) {
                    lent.add(new LendingRule.Loan(r.offset(), r.rounded(), r.lease().epoch()));
                }
            }
            for (LendingRule.Loan victim : rule.revocations(lent, shortfall)) {
                requestRevocation(regions.get(victim.id()));
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Sets how many bytes the agent offers, clamped to {@code [0, budget]}: its demand becomes the
     * rest of the budget ({@link #demand(long)}).
     */
    public void lendable(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("lendable bytes must be >= 0, got " + bytes + " (lender '" + name() + "')");
        }
        demand(config.budgetBytes() - Math.min(bytes, config.budgetBytes()));
    }

    /** Asks for one region back now (the agent's own choice); no-op unless it is LENT. */
    public void revoke(LentRegion region) {
        LocalRegion r = mine(region);
        lock.lock();
        try {
            if (alive && r.phase == Phase.LENT) {
                requestRevocation(r);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Simulates the agent dying: every region's epoch advances, every later enter and borrow fails
     * and the client is told {@link LenderEvents#peerLost}. Idempotent.
     */
    public void kill() {
        lock.lock();
        try {
            if (!alive) {
                return;
            }
            alive = false;
            demandBytes = config.budgetBytes();
            for (LocalRegion r : new ArrayList<>(regions.values())) {
                if (r.phase == Phase.LENT || r.phase == Phase.REVOKING) {
                    closeAndRelease(r);
                }
            }
            revoking.clear();
        } finally {
            lock.unlock();
        }
        int peer = id();
        post(() -> {
            LenderEvents l = listener;
            if (l != null) {
                l.peerLost(peer);
            }
        });
    }

    /** Where the region of {@code lease} is now; {@link Phase#RELEASED} when it is not in the table. */
    public Phase phase(PeerLease lease) {
        lock.lock();
        try {
            LocalRegion r = regions.get(lease.region());
            return r != null && r.lease().equals(lease) ? r.phase : Phase.RELEASED;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The epoch of the region {@code lease} names, as an access would check it now: the lease's own
     * epoch while it is lent or being revoked, an advanced one once closed; -1 when released.
     */
    public long epoch(PeerLease lease) {
        lock.lock();
        try {
            LocalRegion r = regions.get(lease.region());
            return r != null && r.lease().equals(lease) ? r.currentEpoch() : -1;
        } finally {
            lock.unlock();
        }
    }

    public Stats stats() {
        lock.lock();
        try {
            return new Stats(config.budgetBytes(), rule.offerBytes(demandBytes), lentBytes, revokingBytes, releasingBytes,
                    config.budgetBytes() - allocator.used(), regions.size(), borrows, refusedBorrows, revocationRequests,
                    acknowledgements, giveBacks, fences, lateAcknowledgements, alive);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Checks the table against the allocator and the byte counts; throws {@link IllegalStateException}
     * naming the first mismatch.
     */
    public void checkInvariants() {
        lock.lock();
        try {
            allocator.checkInvariants();
            long lent = 0;
            long rev = 0;
            long rel = 0;
            for (LocalRegion r : regions.values()) {
                long held = allocator.sizeIfAllocated(r.offset());
                if (held != r.rounded()) {
                    throw new IllegalStateException("lender '" + name() + "': " + r + " holds " + r.rounded()
                            + " bytes but the allocator has " + held + " at offset " + r.offset());
                }
                switch (r.phase) {
                    case LENT -> lent += held;
                    case REVOKING -> rev += held;
                    case RELEASING -> rel += held;
                    case RELEASED -> throw new IllegalStateException("lender '" + name() + "': released " + r + " still in the table");
                }
            }
            if (lent != lentBytes || rev != revokingBytes || rel != releasingBytes) {
                throw new IllegalStateException("lender '" + name() + "': counted lent/revoking/releasing " + lentBytes + "/"
                        + revokingBytes + "/" + releasingBytes + " bytes but the regions hold " + lent + "/" + rev + "/" + rel);
            }
            if (allocator.allocationCount() != regions.size()) {
                throw new IllegalStateException("lender '" + name() + "': allocator has " + allocator.allocationCount()
                        + " live ranges but the table " + regions.size() + " regions");
            }
            long free = config.budgetBytes() - allocator.used();
            if (lent + rev + rel + free != config.budgetBytes()) {
                throw new IllegalStateException("lender '" + name() + "': free " + free + " + lent " + (lent + rev + rel)
                        + " != budget " + config.budgetBytes());
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops the agent: every region is closed (epoch advanced), the threads stop, and the arena is
     * freed once no access is in flight (waiting up to 2 s). Idempotent.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            alive = false;
            demandBytes = config.budgetBytes();
            for (LocalRegion r : new ArrayList<>(regions.values())) {
                if (r.phase == Phase.LENT || r.phase == Phase.REVOKING) {
                    closeAndRelease(r);
                }
            }
            revoking.clear();
            agentWake.signalAll();
        } finally {
            lock.unlock();
        }
        eventThread.interrupt();
        join(eventThread);
        join(agentThread);
        long until = System.nanoTime() + CLOSE_DRAIN_NANOS;
        while (true) {
            long busy = 0;
            lock.lock();
            try {
                reapReleasing();
                busy = releasing.size();
            } finally {
                lock.unlock();
            }
            if (busy == 0) {
                break;
            }
            if (System.nanoTime() > until) {
                LOG.log(System.Logger.Level.WARNING, "lender ''{0}'' closes its arena with {1} region(s) still being accessed",
                        name(), busy);
                break;
            }
            LockSupport.parkNanos(RELEASE_POLL_NANOS);
        }
        arena.close();
    }

    @Override
    public String toString() {
        return "LocalLender[" + config.id() + " '" + config.name() + "', budget " + config.budgetBytes() + " bytes]";
    }

    // ---------------------------------------------------------------- internals

    private LocalRegion mine(LentRegion region) {
        if (region instanceof LocalRegion r && r.ownedBy(this)) {
            return r;
        }
        throw new IllegalArgumentException(region + " was not lent by lender '" + name() + "'");
    }

    private long roundUp(long size) {
        long a = config.alignment();
        return (size + a - 1) & -a;
    }

    /** Under lock: LENT -> REVOKING, deadline set, event queued. */
    private void requestRevocation(LocalRegion r) {
        r.beginRevocation();
        r.phase = Phase.REVOKING;
        long now = System.nanoTime();
        r.deadlineNanos = now + config.graceNanos();
        lentBytes -= r.rounded();
        revokingBytes += r.rounded();
        revocationRequests++;
        revoking.addLast(r);
        long deadline = r.deadlineNanos;
        post(() -> {
            LenderEvents l = listener;
            if (l != null) {
                l.revocationRequested(r, now, deadline);
            }
        });
        agentWake.signalAll();
    }

    /** Under lock: LENT or REVOKING -> RELEASING (epoch advanced), then RELEASED once no access is in flight. */
    private void closeAndRelease(LocalRegion r) {
        r.close(nextEpoch++);
        if (r.phase == Phase.LENT) {
            lentBytes -= r.rounded();
        } else {
            revokingBytes -= r.rounded();
        }
        r.phase = Phase.RELEASING;
        releasingBytes += r.rounded();
        if (r.inFlight() == 0) {
            release(r);
        } else {
            releasing.add(r);
            agentWake.signalAll();
        }
    }

    /** Under lock: frees a closed region's range. */
    private void release(LocalRegion r) {
        regions.remove(r.offset());
        allocator.free(r.offset());
        releasingBytes -= r.rounded();
        r.phase = Phase.RELEASED;
    }

    /** Under lock: releases every closed region whose accesses have ended. */
    private void reapReleasing() {
        for (Iterator<LocalRegion> it = releasing.iterator(); it.hasNext(); ) {
            LocalRegion r = it.next();
            if (r.inFlight() == 0) {
                it.remove();
                release(r);
            }
        }
    }

    /** The agent thread: fences at deadlines and releases closed regions when their accesses end. */
    private void runAgent() {
        lock.lock();
        try {
            while (!closed) {
                long now = System.nanoTime();
                long wait = TimeUnit.SECONDS.toNanos(1);
                while (!revoking.isEmpty()) {
                    LocalRegion r = revoking.peekFirst();
                    if (r.phase != Phase.REVOKING) {
                        revoking.pollFirst();
                    } else if (r.deadlineNanos - now <= 0) {
                        revoking.pollFirst();
                        fence(r);
                    } else {
                        wait = Math.min(wait, r.deadlineNanos - now);
                        break;
                    }
                }
                reapReleasing();
                if (!releasing.isEmpty()) {
                    wait = Math.min(wait, RELEASE_POLL_NANOS);
                }
                agentWake.awaitNanos(wait);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    /** Under lock: the deadline passed without an acknowledgement. */
    private void fence(LocalRegion r) {
        r.fenced = true;
        fences++;
        closeAndRelease(r);
        post(() -> {
            LenderEvents l = listener;
            if (l != null) {
                l.fenced(r);
            }
        });
    }

    /** Queues an event for the event thread; counted as undelivered until the listener returns from it. */
    private void post(Runnable event) {
        undelivered.incrementAndGet();
        events.add(event);
    }

    /**
     * Whether every event posted so far (revocation requests, fences, loss) has reached the listener
     * and the listener has returned from it. Any thread; a monitoring view, and what a caller waits
     * on to know a listener has seen what the counters in {@link #stats()} already show.
     */
    public boolean eventsDelivered() {
        return undelivered.get() == 0;
    }

    /** The event thread: delivers queued events one at a time, in order. */
    private void deliverEvents() {
        while (!closed) {
            Runnable event;
            try {
                event = events.take();
            } catch (InterruptedException e) {
                return;
            }
            try {
                event.run();
            } catch (RuntimeException | Error e) {
                LOG.log(System.Logger.Level.WARNING, "lender '" + name() + "': the listener failed on an event", e);
            } finally {
                undelivered.decrementAndGet();
            }
        }
    }

    private static void join(Thread t) {
        try {
            t.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
