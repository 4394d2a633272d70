package dev.strata.node.peer;

import static dev.strata.node.peer.LendingFileLayout.*;

import dev.strata.cache.peer.LenderEvents;
import dev.strata.cache.peer.LentRegion;
import dev.strata.cache.peer.PeerLease;
import dev.strata.cache.peer.PeerLender;
import dev.strata.memory.shm.ProcessLiveness;
import dev.strata.memory.shm.ShmFiles;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import dev.strata.node.rpc.Backoff;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The client side of a {@code strata peer} agent: a {@link PeerLender} over the agent's lending
 * file ({@link LendingFileLayout}), mapped into this process.
 *
 * <p>Design note: {@link #borrow} claims a run of FREE regions in the table itself (one CAS per
 * region; {@code ceil(size / regionSize)} contiguous regions, first fit) and needs no round trip
 * to the agent. Every access goes through {@link LentRegion#enter}/{@link LentRegion#exit} of the
 * lease's head region ({@link LendingTable}: increment the in-flight count, then re-check state
 * and epoch). One event thread per lender polls, every {@code pollInterval}, the state word of
 * each region this process holds and the agent's header:
 * <ul>
 *   <li>REVOKING at the lease's epoch: {@link LenderEvents#revocationRequested} once, with the
 *       deadline converted to {@link System#nanoTime()}; the client drains and calls
 *       {@link #acknowledge} (without a listener the lender drains and acknowledges itself);</li>
 *   <li>any other state or epoch (fenced at the deadline, reaped): {@link LenderEvents#fenced}
 *       once; the region is no longer this process's;</li>
 *   <li>the agent STOPPED, its pid dead, or its heartbeat older than {@code heartbeatTimeout}:
 *       {@link LenderEvents#peerLost} once; from then on every enter fails, borrow returns null
 *       and the regions still held are given back (harmless if the agent is gone, necessary if it
 *       was only stuck).</li>
 * </ul>
 * {@link #giveBack} and {@link #acknowledge} shut the lease's gate (which waits for this
 * process's accesses under way) before the regions leave it, so the agent never reuses memory an
 * access of this process may still touch.
 *
 * <p>Threads: every method from any thread; events arrive on the lender's event thread, one at a
 * time. {@link #close} only once accesses have stopped.
 */
public final class ShmPeerLender implements PeerLender {
    private static final System.Logger LOG = System.getLogger(ShmPeerLender.class.getName());

    private final int id;
    private final String name;
    private final Path path;
    private final ShmLenderOptions options;
    private final Arena arena;
    private final MemorySegment file;
    private final LendingTable table;
    private final Geometry geometry;
    private final long agentPid;
    private final long agentStartMillis;
    private final long pid = ProcessHandle.current().pid();
    private final long startMillis = ProcessLiveness.currentStartMillis();
    private final ConcurrentHashMap<PeerLease, Region> held = new ConcurrentHashMap<>(); // by lease: (head, epoch) is unique
    private final Thread eventThread;
    private final Object pollLock = new Object();
    private long nextLiveness = System.nanoTime(); // guarded by pollLock
    private volatile LenderEvents listener;
    private volatile boolean lost;
    private volatile String lostBecause;
    private volatile boolean closed;

    private ShmPeerLender(int id, Path path, ShmLenderOptions options, Arena arena, MemorySegment file, Geometry geometry,
                          long agentPid, long agentStartMillis) {
        this.id = id;
        this.path = path;
        this.options = options;
        this.name = options.name() != null ? options.name() : String.valueOf(path.getFileName());
        this.arena = arena;
        this.file = file;
        this.geometry = geometry;
        this.table = new LendingTable(file, geometry);
        this.agentPid = agentPid;
        this.agentStartMillis = agentStartMillis;
        this.eventThread = Thread.ofPlatform().daemon().name("strata-peer-lender-" + id).unstarted(this::watch);
    }

    /**
     * Maps the lending file at {@code path} and starts watching it.
     *
     * @param id this peer's id among the lenders the caller sees
     * @throws ShmFormatException   naming the file, the field and the value if it is not a lending file this code speaks
     * @throws UncheckedIOException   if the file cannot be opened or mapped
     */
    public static ShmPeerLender open(Path path, int id, ShmLenderOptions options) {
        return open(path, id, options, true);
    }

    /**
     * As {@link #open(Path, int, ShmLenderOptions)}; without an event thread ({@code watch} false)
     * nothing is delivered until the caller runs {@link #poll} (tests that choose when events come).
     */
    static ShmPeerLender open(Path path, int id, ShmLenderOptions options, boolean watch) {
        Objects.requireNonNull(options, "options");
        if (id < 0) {
            throw new IllegalArgumentException("peer id " + id + " must be >= 0");
        }
        if (ProcessHandle.current().pid() > MAX_PID) {
            throw new IllegalStateException("pid " + ProcessHandle.current().pid() + " does not fit the lending table's "
                    + "24-bit pid field");
        }
        Arena arena = Arena.ofShared();
        try {
            ShmFiles.requireAttachable(path);
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException(e.getMessage(), e);
        }
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            Header h = Header.of(ShmFiles.readHeader(ch, (int) HEADER_SIZE));
            Geometry g = h.validate(path);
            MemorySegment mapped = ShmFiles.mapReadWrite(ch, g.totalSize(), arena);
            ShmPeerLender lender = new ShmPeerLender(id, path, options, arena, mapped, g, h.prefix().ownerPid(),
                    h.prefix().ownerStartMillis());
            if (watch) {
                lender.eventThread.start();
            }
            return lender;
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("opening lending file " + path, e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** Opens with {@link ShmLenderOptions#defaults()}. */
    public static ShmPeerLender open(Path path, int id) {
        return open(path, id, ShmLenderOptions.defaults());
    }

    @Override
    public int id() {
        return id;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int distance() {
        return options.distance();
    }

    /** Bytes in the FREE regions now (advisory: a borrow of a long run may still find none contiguous). */
    @Override
    public long lendableBytes() {
        if (lost || closed) {
            return 0;
        }
        long free = 0;
        for (long r = 0, n = geometry.regionCount(); r < n; r++) {
            if (state(table.stateWord(r)) == FREE) {
                free++;
            }
        }
        return free * geometry.regionSize();
    }

    @Override
    public boolean alive() {
        return !lost && !closed;
    }

    /** Why the peer was lost, or null while it is alive. */
    public String lostBecause() {
        return lostBecause;
    }

    /** The geometry of the lending file. */
    public Geometry geometry() {
        return geometry;
    }

    /** Regions this process holds now (leases, not counting members of runs). */
    public int heldLeases() {
        return held.size();
    }

    /** Regions by state and the agent's counters, as this process sees the file now. */
    public LendingStats stats() {
        return LendingStats.of(table, (long) LONG.getOpaque(file, DEMAND_OFFSET));
    }

    /**
     * Claims {@code ceil(size / regionSize)} contiguous FREE regions.
     *
     * @return the region, or null when the agent is lost or stopped or no such run is FREE now
     * @throws IllegalArgumentException if {@code size} is not positive
     */
    @Override
    public LentRegion borrow(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("borrow of " + size + " bytes from peer '" + name + "': size must be positive");
        }
        if (lost || closed || (long) LONG.getAcquire(file, AGENT_STATE_OFFSET) != AGENT_LENDING) {
            return null;
        }
        long regions = (size + geometry.regionSize() - 1) / geometry.regionSize();
        if (regions > geometry.regionCount()) {
            return null;
        }
        LendingTable.Claim claim = table.claim(regions, pid, startMillis, size, System.currentTimeMillis());
        if (claim == null) {
            return null;
        }
        Region region = new Region(new PeerLease(id, claim.head(), size, claim.epoch()), regions,
                table.data(claim.head(), size));
        held.put(region.lease(), region);
        if (lost) { // lost while claiming: the watcher may have missed this one
            end(region);
            return null;
        }
        return region;
    }

    @Override
    public void giveBack(LentRegion region) {
        Region r = ours(region);
        if (held.remove(r.lease, r)) {
            if (!end(r)) {
                held.put(r.lease, r);
                throw new IllegalStateException("peer '" + name + "': " + r.lease() + " still has "
                        + table.inFlight(r.head, r.epoch) + " accesses under way after " + options.drainTimeout().toMillis()
                        + " ms: give a region back only after its accesses exit");
            }
        }
    }

    @Override
    public void acknowledge(LentRegion region) {
        giveBack(region);
    }

    @Override
    public void listen(LenderEvents events) {
        this.listener = Objects.requireNonNull(events, "events");
    }

    private Region ours(LentRegion region) {
        if (region instanceof Region r && r.owner() == this) {
            return r;
        }
        throw new IllegalArgumentException("region " + region + " was not lent by peer '" + name + "' (id " + id + ")");
    }

    /**
     * Shuts the lease's gate once this process's accesses under way have exited, then hands the
     * run back (FREE if still lent, HELD if the agent was revoking it).
     *
     * @return false if accesses were still under way after the drain timeout (nothing released)
     */
    private boolean end(Region r) {
        r.ended = true;
        long revoking = word(REVOKING, pid, r.epoch);
        Backoff backoff = new Backoff(200, 20, 10_000, 1_000_000);
        long deadline = System.nanoTime() + options.drainTimeout().toNanos();
        while (!table.shutGate(r.head, r.epoch)) {
            long w = table.stateWord(r.head);
            if (w != r.lentWord && w != revoking) {
                return true; // fenced or reaped: the agent takes it from here
            }
            if (System.nanoTime() - deadline > 0) {
                r.ended = false;
                return false;
            }
            backoff.idle();
        }
        if (table.release(r.head, r.epoch, pid) == REVOKING) {
            table.count(ACKNOWLEDGED_OFFSET);
        }
        return true;
    }

    /** The event thread: {@link #poll} every {@code pollInterval} until closed or lost. */
    private void watch() {
        long pollNanos = options.pollInterval().toNanos();
        while (!closed && !lost) {
            try {
                poll();
            } catch (RuntimeException e) {
                if (closed) {
                    return;
                }
                LOG.log(System.Logger.Level.ERROR, "peer '" + name + "': event thread failed", e);
            }
            LockSupport.parkNanos(pollNanos);
        }
    }

    /**
     * One look at the agent and at every region held: delivers the events due, in order. Run by
     * the event thread; tests in this package open a lender without one and call this to deliver
     * events on their own thread at chosen points.
     */
    void poll() {
        synchronized (pollLock) {
            if (closed || lost) {
                return;
            }
            long nowMillis = System.currentTimeMillis();
            String problem = agentProblem(nowMillis);
            if (problem == null && System.nanoTime() - nextLiveness >= 0) {
                nextLiveness = System.nanoTime() + options.livenessInterval().toNanos();
                if (!ProcessLiveness.isAlive(agentPid, agentStartMillis)) {
                    problem = "agent pid " + agentPid + " is dead";
                }
            }
            if (problem != null) {
                lose(problem);
                return;
            }
            for (Region r : held.values()) {
                check(r, nowMillis);
            }
        }
    }

    private String agentProblem(long nowMillis) {
        long state = (long) LONG.getAcquire(file, AGENT_STATE_OFFSET);
        if (state == AGENT_STOPPED) {
            return "agent pid " + agentPid + " stopped";
        }
        long heartbeat = ShmHeader.heartbeat(file);
        long age = nowMillis - heartbeat;
        if (age > options.heartbeatTimeout().toMillis()) {
            return "agent pid " + agentPid + " heartbeat is " + age + " ms old (timeout " + options.heartbeatTimeout().toMillis()
                    + " ms)";
        }
        return null;
    }

    private void check(Region r, long nowMillis) {
        long w = table.stateWord(r.head);
        if (w == r.lentWord) {
            return;
        }
        if (w == word(REVOKING, pid, r.epoch)) {
            if (r.revocationSeen) {
                return;
            }
            r.revocationSeen = true;
            long deadlineMillis = table.field(r.head, R_DEADLINE);
            long deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(deadlineMillis - nowMillis);
            LenderEvents events = listener;
            if (events == null) {
                giveBack(r); // no one to tell: drain and acknowledge here
                return;
            }
            try {
                events.revocationRequested(r, deadlineNanos);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "peer '" + name + "': revocation listener failed for " + r.lease(), e);
            }
            return;
        }
        if (held.remove(r.lease, r)) {
            r.ended = true;
            LenderEvents events = listener;
            if (events != null) {
                try {
                    events.fenced(r);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "peer '" + name + "': fence listener failed for " + r.lease(), e);
                }
            }
        }
    }

    private void lose(String because) {
        lostBecause = because;
        lost = true;
        LOG.log(System.Logger.Level.WARNING, "peer '" + name + "' (" + path + ") lost: " + because);
        List<Region> regions = new ArrayList<>(held.values());
        held.clear();
        for (Region r : regions) {
            r.ended = true;
            // Best effort: an agent that was only stuck gets its memory back; a dead one loses nothing.
            if (table.shutGate(r.head, r.epoch)) {
                table.release(r.head, r.epoch, pid);
            }
        }
        LenderEvents events = listener;
        if (events != null) {
            try {
                events.peerLost(id);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "peer '" + name + "': peer-lost listener failed", e);
            }
        }
    }

    /** Stops the event thread, gives back every region still held, and unmaps the file. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        if (eventThread.isAlive()) {
            LockSupport.unpark(eventThread);
            try {
                eventThread.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (pollLock) {
            // a poll under way (the event thread's or a caller's) finishes before the regions go
        }
        for (Region r : new ArrayList<>(held.values())) {
            if (held.remove(r.lease, r) && !lost && !end(r)) {
                LOG.log(System.Logger.Level.WARNING, "peer '" + name + "': " + r.lease() + " still in use at close; left to the agent");
            }
        }
        arena.close();
    }

    /** One lease of this lender: its head region, epoch and memory. */
    private final class Region implements LentRegion {
        private final PeerLease lease;
        private final long head;
        private final long epoch;
        private final long lentWord;
        private final long runLength;
        private final MemorySegment memory;
        private volatile boolean ended;        // given back, acknowledged, fenced or lost: enter fails at once
        private volatile boolean revocationSeen; // event thread only (volatile for giveBack's reads)

        Region(PeerLease lease, long runLength, MemorySegment memory) {
            this.lease = lease;
            this.head = lease.region();
            this.epoch = lease.epoch();
            this.lentWord = word(LENT, pid, epoch);
            this.runLength = runLength;
            this.memory = memory;
        }

        ShmPeerLender owner() {
            return ShmPeerLender.this;
        }

        @Override
        public PeerLease lease() {
            return lease;
        }

        @Override
        public boolean enter() {
            if (ended || lost || closed) {
                return false;
            }
            return table.enter(head, epoch, lentWord);
        }

        @Override
        public MemorySegment memory() {
            return memory;
        }

        @Override
        public void exit() {
            table.exit(head, epoch);
        }

        @Override
        public String toString() {
            return lease + " (" + runLength + " region" + (runLength == 1 ? "" : "s") + " of peer '" + name + "')";
        }
    }
}
