package dev.strata.node.peer;

import static dev.strata.node.peer.LendingFileLayout.*;

import dev.strata.cache.peer.LenderEvents;
import dev.strata.cache.peer.LentRegion;
import dev.strata.cache.peer.PeerLease;
import dev.strata.cache.peer.PeerLender;
import dev.strata.memory.shm.Doorbell;
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
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 *       deadline converted to {@link System#nanoTime()} and the moment the agent revoked (its
 *       revocation stamp, {@code CLOCK_MONOTONIC} like this process's clock; the moment the event
 *       thread saw the revocation where there is none); the client drains and calls
 *       {@link #acknowledge} (without a listener the lender drains and acknowledges itself);</li>
 *   <li>any other state or epoch (fenced at the deadline, reaped): {@link LenderEvents#fenced}
 *       once; the region is no longer this process's;</li>
 *   <li>the agent STOPPED, its pid dead, or its heartbeat older than {@code heartbeatTimeout}:
 *       {@link LenderEvents#peerLost} once; from then on every enter of a region lent before
 *       fails, borrow returns null and the regions still held are given back (harmless if the
 *       agent is gone, necessary if it was only stuck).</li>
 * </ul>
 * {@link #giveBack} and {@link #acknowledge} shut the lease's gate (which waits for this
 * process's accesses under way) before the regions leave it, so the agent never reuses memory an
 * access of this process may still touch.
 *
 * <p>Doorbells (a file of minor version {@link LendingFileLayout#DOORBELL_MINOR} or later): between
 * polls the event thread sleeps on the file's borrowers' {@link Doorbell}, which the agent rings
 * when it revokes, fences or reaps a lease or stops, so an event reaches the client one
 * cross-process wake-up after the agent's change rather than up to a {@code pollInterval} later;
 * each sleep still ends after {@code pollInterval}, so a lost ring, an agent that never rings (an
 * older file) or a dead one costs what polling did. An acknowledgement rings the agent's bell, so
 * the agent takes the memory back at once rather than at its next tick. Without futex
 * ({@link Doorbell#available}) or in a minor-0 file the event thread parks for
 * {@code pollInterval} as before.
 *
 * <p>Re-attachment (a restarted agent): at most once per {@code reattachInterval} the event
 * thread looks at the path. A lending file there that is not the one mapped (another file, or
 * another owner in its {@link ShmHeader} prefix: pid, start instant, creation time), published,
 * LENDING, with a live owner ({@link ProcessLiveness}) and a fresh heartbeat, belongs to a new
 * agent: the lender loses the old one if it had not noticed yet (so an agent restarted before its
 * death was seen is caught too), maps the new file and tells the client
 * {@link LenderEvents#peerReattached}. A lost agent whose own file is still there and lends again
 * (it was only stuck) is taken back the same way, on the same mapping. Old leases stay dead:
 * every region lent before the loss is ended, and a lease's epoch carries the mapping's
 * generation above the table's 36-bit epoch ({@code generation << 36 | epoch}), so no lease of
 * the new file ever equals one of the old. The replaced mapping is unmapped only once this
 * process has no access under way in it and none can begin ({@link LendingTable#shutGatesOf}
 * over its own lendings there) and no call is using it; until then it is kept, so an access
 * under way never touches unmapped memory. A missing or unusable file costs one look per
 * interval and changes nothing: the peer stays lost, and borrows return null at once.
 *
 * <p>Threads: every method from any thread; events arrive on the lender's event thread, one at a
 * time. {@link #close} only once accesses have stopped.
 */
public final class ShmPeerLender implements PeerLender {
    private static final System.Logger LOG = System.getLogger(ShmPeerLender.class.getName());
    /** Bits of a lease's epoch that hold the table's epoch; the mapping's generation lies above them. */
    private static final long MAX_STAMP_AGE_NANOS = 600_000_000_000L; // an older revocation stamp is taken for another clock's
    private static final int GENERATION_SHIFT = Long.bitCount(EPOCH_MASK);

    private final int id;
    private final String name;
    private final Path path;
    private final ShmLenderOptions options;
    private final long pid = ProcessHandle.current().pid();
    private final long startMillis = ProcessLiveness.currentStartMillis();
    private final ConcurrentHashMap<PeerLease, Region> held = new ConcurrentHashMap<>(); // by lease: (head, epoch) is unique
    private final Thread eventThread;
    private final Object pollLock = new Object();
    private final List<Mapping> replaced = new ArrayList<>(); // guarded by pollLock: replaced mappings not yet unmapped
    private long nextLiveness = System.nanoTime();     // guarded by pollLock
    private long nextPathLook = System.nanoTime();     // guarded by pollLock
    private String pathProblem;                        // guarded by pollLock: why the last look found no agent (logged once)
    private volatile Mapping mapping;                  // the file lent through now (or, while lost, last)
    private volatile long reattachments;               // written under pollLock
    private volatile LenderEvents listener;
    private volatile boolean lost;
    private volatile String lostBecause;
    private volatile boolean closed;

    private ShmPeerLender(int id, Path path, ShmLenderOptions options, Mapping first) {
        this.id = id;
        this.path = path;
        this.options = options;
        this.name = options.name() != null ? options.name() : String.valueOf(path.getFileName());
        this.mapping = first;
        this.eventThread = Thread.ofPlatform().daemon().name("strata-peer-lender-" + id).unstarted(this::watch);
    }

    /**
     * One lending file as this lender mapped it: the agent that owned it then, and the mapping's
     * generation (0 for the file opened first, one more for each new file re-attached to).
     *
     * <p>Invariant: the arena is closed only after {@link #retired} was set, {@link #users} read
     * zero and this process's gates in the table were shut (event thread, under pollLock); a
     * caller that {@link #pin pinned} it before that keeps it mapped until it unpins.
     */
    private static final class Mapping {
        final Arena arena;
        final MemorySegment file;
        final Geometry geometry;
        final LendingTable table;
        final Object fileKey;           // identity of the file mapped; null where the file system has none
        final ShmHeader.Prefix prefix;  // as read when mapped: the owner (pid, start instant) and creation time
        final long generation;
        final Doorbell agentBell;       // null in a file without doorbells (minor 0)
        final Doorbell lenderBell;      // null in a file without doorbells (minor 0)
        final AtomicInteger users = new AtomicInteger(); // calls under way on this mapping (not accesses: gates count those)
        volatile boolean retired;       // replaced: no new call may begin on it

        Mapping(Arena arena, MemorySegment file, Geometry geometry, Object fileKey, ShmHeader.Prefix prefix, long generation) {
            this.arena = arena;
            this.file = file;
            this.geometry = geometry;
            this.table = new LendingTable(file, geometry);
            this.fileKey = fileKey;
            this.prefix = prefix;
            this.generation = generation;
            boolean bells = hasDoorbells(prefix);
            this.agentBell = bells ? Doorbell.at(file, AGENT_BELL_OFFSET) : null;
            this.lenderBell = bells ? Doorbell.at(file, LENDER_BELL_OFFSET) : null;
        }

        long agentPid() {
            return prefix.ownerPid();
        }

        /** True if the file at the path, with {@code key} and {@code found}, is this very file of this very agent. */
        boolean same(Object key, ShmHeader.Prefix found) {
            return Objects.equals(key, fileKey) && found.ownerPid() == prefix.ownerPid()
                    && found.ownerStartMillis() == prefix.ownerStartMillis() && found.createdAtMillis() == prefix.createdAtMillis();
        }

        /** Registers a call that will touch the mapping; false (nothing registered) once it is replaced. */
        boolean pin() {
            users.incrementAndGet();
            if (retired) {
                users.decrementAndGet();
                return false;
            }
            return true;
        }

        void unpin() {
            users.decrementAndGet();
        }
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
        Object key;
        try {
            ShmFiles.requireAttachable(path);
            key = ShmFiles.fileKey(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
        ShmPeerLender lender = new ShmPeerLender(id, path, options, map(path, key, 0));
        if (watch) {
            lender.eventThread.start();
        }
        return lender;
    }

    /**
     * Maps the lending file at {@code path}, whose identity was {@code key} just before.
     *
     * @throws ShmFormatException   if it is not a lending file this code speaks
     * @throws UncheckedIOException if it cannot be opened or mapped
     */
    private static Mapping map(Path path, Object key, long generation) {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            Header h = Header.of(ShmFiles.readHeader(ch, (int) HEADER_SIZE));
            Geometry g = h.validate(path);
            MemorySegment mapped = ShmFiles.mapReadWrite(ch, g.totalSize(), arena);
            if (!hasDoorbells(h.prefix())) {
                LOG.log(System.Logger.Level.INFO, "lending file " + path + " is version " + h.prefix().major() + "."
                        + h.prefix().minor() + ", without doorbells: its events are polled for");
            }
            return new Mapping(arena, mapped, g, key, h.prefix(), generation);
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
        Mapping m = pinCurrent();
        try {
            long free = 0;
            for (long r = 0, n = m.geometry.regionCount(); r < n; r++) {
                if (state(m.table.stateWord(r)) == FREE) {
                    free++;
                }
            }
            return free * m.geometry.regionSize();
        } finally {
            m.unpin();
        }
    }

    @Override
    public boolean alive() {
        return !lost && !closed;
    }

    /** Why the peer was lost, or null while it is alive. */
    public String lostBecause() {
        return lostBecause;
    }

    /** Times this lender took its peer back after losing it (a restarted agent, or one that recovered). */
    public long reattachments() {
        return reattachments;
    }

    /** The geometry of the lending file mapped now. */
    public Geometry geometry() {
        return mapping.geometry;
    }

    /** Regions this process holds now (leases, not counting members of runs). */
    public int heldLeases() {
        return held.size();
    }

    /** Mappings of replaced lending files still kept because an access of this process may be under way in them. */
    int replacedMappings() {
        synchronized (pollLock) {
            return replaced.size();
        }
    }

    /** Regions by state and the agent's counters, as this process sees the file mapped now. */
    public LendingStats stats() {
        Mapping m = pinCurrent();
        try {
            return LendingStats.of(m.table, (long) LONG.getOpaque(m.file, DEMAND_OFFSET));
        } finally {
            m.unpin();
        }
    }

    /** The mapping now, pinned (the caller unpins); a mapping replaced meanwhile is skipped for its successor. */
    private Mapping pinCurrent() {
        while (true) {
            Mapping m = mapping;
            if (m.pin()) {
                return m;
            }
            // replaced between the read and the pin: the field names its successor already
        }
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
        if (lost || closed) {
            return null;
        }
        Mapping m = pinCurrent();
        try {
            if ((long) LONG.getAcquire(m.file, AGENT_STATE_OFFSET) != AGENT_LENDING) {
                return null;
            }
            long regions = (size + m.geometry.regionSize() - 1) / m.geometry.regionSize();
            if (regions > m.geometry.regionCount()) {
                return null;
            }
            LendingTable.Claim claim = m.table.claim(regions, pid, startMillis, size, System.currentTimeMillis());
            if (claim == null) {
                return null;
            }
            PeerLease lease = new PeerLease(id, claim.head(), size, m.generation << GENERATION_SHIFT | claim.epoch());
            Region region = new Region(m, lease, claim.epoch(), regions, m.table.data(claim.head(), size));
            held.put(lease, region);
            if (lost || mapping != m) { // lost (or replaced) while claiming: the watcher may have missed this one
                held.remove(lease, region);
                end(region);
                return null;
            }
            return region;
        } finally {
            m.unpin();
        }
    }

    @Override
    public void giveBack(LentRegion region) {
        Region r = ours(region);
        if (held.remove(r.lease, r)) {
            if (!r.mapping.pin()) {
                r.ended = true; // its file was replaced: the agent that lent it is gone
                return;
            }
            try {
                if (!end(r)) {
                    held.put(r.lease, r);
                    throw new IllegalStateException("peer '" + name + "': " + r.lease() + " still has "
                            + r.mapping.table.inFlight(r.head, r.epoch) + " accesses under way after "
                            + options.drainTimeout().toMillis() + " ms: give a region back only after its accesses exit");
                }
            } finally {
                r.mapping.unpin();
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
     * run back (FREE if still lent, HELD if the agent was revoking it). The caller keeps the
     * region's mapping pinned (or is the event thread, which alone unmaps).
     *
     * @return false if accesses were still under way after the drain timeout (nothing released)
     */
    private boolean end(Region r) {
        r.ended = true;
        LendingTable table = r.mapping.table;
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
            if (r.mapping.agentBell != null) {
                r.mapping.agentBell.ring(); // the agent takes the run back at once, not at its next tick
            }
        }
        return true;
    }

    /**
     * The event thread: {@link #poll}, then sleep on the borrowers' doorbell for at most
     * {@code pollInterval} (or park that long without one), until closed.
     */
    private void watch() {
        long pollNanos = options.pollInterval().toNanos();
        while (!closed) {
            Mapping m = mapping;
            Doorbell bell = m.lenderBell;
            int seen = bell != null ? bell.sequence() : 0; // read before the poll: a ring during it is not lost
            try {
                poll();
            } catch (RuntimeException e) {
                if (closed) {
                    return;
                }
                LOG.log(System.Logger.Level.ERROR, "peer '" + name + "': event thread failed", e);
            }
            if (closed) {
                return;
            }
            if (mapping != m) {
                continue; // re-attached during the poll (the old mapping may be unmapped): poll the new one at once
            }
            if (bell != null) {
                bell.await(seen, pollNanos); // only this thread unmaps the current mapping, so it stays mapped
            } else {
                LockSupport.parkNanos(pollNanos);
            }
        }
    }

    /**
     * Rings the agent's doorbell: its next tick starts now rather than at its interval (for a
     * caller that changed the agent's demand signal). Does nothing for a file without doorbells,
     * or once the peer is lost or this lender closed. Any thread.
     */
    public void wakeAgent() {
        if (lost || closed) {
            return;
        }
        Mapping m = pinCurrent();
        try {
            if (m.agentBell != null) {
                m.agentBell.ring();
            }
        } finally {
            m.unpin();
        }
    }

    /** True if the file mapped now has doorbells and this machine can ring them ({@link Doorbell#available}). */
    public boolean doorbells() {
        return mapping.lenderBell != null && Doorbell.available();
    }

    /**
     * One look at the agent and at every region held: delivers the events due, in order; every
     * {@code reattachInterval}, one look at the path too (see the class note). Run by the event
     * thread; tests in this package open a lender without one and call this to deliver events on
     * their own thread at chosen points.
     */
    void poll() {
        synchronized (pollLock) {
            if (closed) {
                return;
            }
            long now = System.nanoTime();
            if (now - nextPathLook >= 0) {
                nextPathLook = now + options.reattachInterval().toNanos();
                unmapReplaced();
                lookAtPath();
            }
            if (lost) {
                return;
            }
            Mapping m = mapping;
            long nowMillis = System.currentTimeMillis();
            String problem = agentProblem(m, nowMillis);
            if (problem == null && System.nanoTime() - nextLiveness >= 0) {
                nextLiveness = System.nanoTime() + options.livenessInterval().toNanos();
                if (!m.prefix.ownerAlive()) {
                    problem = "agent pid " + m.agentPid() + " is dead";
                }
            }
            if (problem != null) {
                lose(problem);
                return;
            }
            for (Region r : held.values()) {
                if (r.mapping == m) {
                    check(r, nowMillis);
                }
            }
        }
    }

    private String agentProblem(Mapping m, long nowMillis) {
        long state = (long) LONG.getAcquire(m.file, AGENT_STATE_OFFSET);
        if (state == AGENT_STOPPED) {
            return "agent pid " + m.agentPid() + " stopped";
        }
        long heartbeat = ShmHeader.heartbeat(m.file);
        long age = nowMillis - heartbeat;
        if (age > options.heartbeatTimeout().toMillis()) {
            return "agent pid " + m.agentPid() + " heartbeat is " + age + " ms old (timeout " + options.heartbeatTimeout().toMillis()
                    + " ms)";
        }
        return null;
    }

    /**
     * Under pollLock: whether the file at the path is still the agent mapped now; if a live agent
     * lends through another file there, loses the old one (if not lost yet) and maps the new one;
     * if the lost agent's own file lends again, takes it back.
     */
    private void lookAtPath() {
        Mapping m = mapping;
        Object key;
        ShmFiles.Found found;
        try {
            key = ShmFiles.fileKey(path);
            if (!lost && Objects.equals(key, m.fileKey) && m.same(key, ShmHeader.Prefix.of(m.file))) {
                return; // the file mapped is still the path's and still its agent's: the common case, one stat
            }
            ShmFiles.requireAttachable(path);
            found = ShmFiles.readHeader(path, (int) HEADER_SIZE);
        } catch (NoSuchFileException e) {
            noAgent("no file at the path");
            return;
        } catch (IOException e) {
            noAgent(e.getMessage());
            return;
        }
        Header h = Header.of(found);
        String problem = agentProblem(h);
        if (problem != null) {
            noAgent(problem);
            return;
        }
        if (m.same(key, h.prefix())) {
            if (lost && agentProblem(m, System.currentTimeMillis()) == null) {
                reattach(m, "agent pid " + m.agentPid() + " lends again");
            }
            return;
        }
        Mapping next = null;
        try {
            next = map(path, key, m.generation + 1);
            if (!Objects.equals(ShmFiles.fileKey(path), key) || !next.same(key, h.prefix())) {
                next.arena.close(); // replaced again while being mapped: the next look takes the newest
                return;
            }
        } catch (IOException | RuntimeException e) {
            if (next != null) {
                next.arena.close();
            }
            noAgent("mapping it failed: " + e.getMessage());
            return;
        }
        if (!lost) {
            lose("the lending file " + path + " now belongs to agent pid " + next.agentPid() + ": agent pid " + m.agentPid()
                    + " was replaced");
        }
        mapping = next;
        m.retired = true;
        replaced.add(m);
        reattach(next, "agent pid " + next.agentPid() + " lends through a new file");
        unmapReplaced();
    }

    /** Why a lending file's header, read from the path, names no agent to borrow from now; null if it does. */
    private String agentProblem(Header h) {
        try {
            h.validate(path);
        } catch (ShmFormatException e) {
            return e.getMessage();
        }
        if (h.agentState() != AGENT_LENDING) {
            return "its agent pid " + h.prefix().ownerPid() + " is " + (h.agentState() == AGENT_STOPPED ? "stopped" : "starting");
        }
        if (!h.prefix().ownerAlive()) {
            return "its agent pid " + h.prefix().ownerPid() + " is dead";
        }
        if (System.currentTimeMillis() - h.prefix().heartbeatMillis() > options.heartbeatTimeout().toMillis()) {
            return "the heartbeat of its agent pid " + h.prefix().ownerPid() + " is older than " + options.heartbeatTimeout().toMillis()
                    + " ms"; // no age in the text: it is logged once, not once a look
        }
        return null;
    }

    /** Under pollLock: the look at the path found no agent to take; logged once per distinct reason while lost. */
    private void noAgent(String why) {
        if (lost && !why.equals(pathProblem)) {
            pathProblem = why;
            LOG.log(System.Logger.Level.INFO, "peer '" + name + "' (" + path + ") still lost: " + why);
        }
    }

    /** Under pollLock: the peer lends again through {@code m}; the client hears it after the loss it ends. */
    private void reattach(Mapping m, String why) {
        pathProblem = null;
        nextLiveness = System.nanoTime();
        lostBecause = null;
        lost = false;
        reattachments++;
        LOG.log(System.Logger.Level.INFO, "peer '" + name + "' (" + path + ") re-attached: " + why + " (generation "
                + m.generation + ")");
        LenderEvents events = listener;
        if (events != null) {
            try {
                events.peerReattached(id);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "peer '" + name + "': re-attach listener failed", e);
            }
        }
    }

    /**
     * Under pollLock: unmaps every replaced mapping in which this process can no longer touch
     * memory: no call pinned it (it is retired, so none can pin it any more) and every gate of
     * this process's lendings in it is shut (an access under way keeps its gate open). A file
     * re-initialised in place by a new agent is mapped twice over the same pages; the old
     * mapping's table is the new one's then, so it is kept as it is until the file changes.
     */
    private void unmapReplaced() {
        Mapping now = mapping;
        for (int i = 0; i < replaced.size(); ) {
            Mapping old = replaced.get(i);
            boolean alias = old.fileKey != null && old.fileKey.equals(now.fileKey);
            if (!alias && old.users.get() == 0 && old.table.shutGatesOf(pid)) {
                replaced.remove(i);
                old.arena.close();
            } else {
                i++;
            }
        }
    }

    private void check(Region r, long nowMillis) {
        LendingTable table = r.mapping.table;
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
            long now = System.nanoTime();
            long deadlineNanos = now + TimeUnit.MILLISECONDS.toNanos(deadlineMillis - nowMillis);
            long revokedAtNanos = plausibleStamp(table.revocationStamp(r.head, r.epoch), now);
            LenderEvents events = listener;
            if (events == null) {
                giveBack(r); // no one to tell: drain and acknowledge here
                return;
            }
            try {
                events.revocationRequested(r, revokedAtNanos, deadlineNanos);
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

    /**
     * The agent's stamp of a revocation if it is one this process's clock can use: not in the
     * future and at most {@value #MAX_STAMP_AGE_NANOS} ns old (a host whose processes do not share
     * {@code CLOCK_MONOTONIC}, such as one with time namespaces, fails this); else {@code now}, the
     * moment the revocation reached this process.
     */
    static long plausibleStamp(long stamp, long now) {
        long age = now - stamp;
        return stamp != 0 && age >= 0 && age <= MAX_STAMP_AGE_NANOS ? stamp : now;
    }

    /** Under pollLock: the agent is gone; every region held ends, the client hears {@code peerLost}. */
    private void lose(String because) {
        lostBecause = because;
        lost = true;
        LOG.log(System.Logger.Level.WARNING, "peer '" + name + "' (" + path + ") lost: " + because);
        List<Region> regions = new ArrayList<>(held.values());
        held.clear();
        for (Region r : regions) {
            r.ended = true;
            // Best effort: an agent that was only stuck gets its memory back; a dead one loses nothing.
            // A gate left open by an access under way is shut before the file is ever unmapped.
            LendingTable table = r.mapping.table;
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

    /** Stops the event thread, gives back every region still held, and unmaps every file mapped. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        if (eventThread.isAlive()) {
            Doorbell bell = mapping.lenderBell;
            if (bell != null) {
                bell.ring(); // wakes the event thread from its sleep (other borrowers just look once)
            }
            LockSupport.unpark(eventThread);
            try {
                eventThread.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (pollLock) {
            // a poll under way (the event thread's or a caller's) finishes before the regions go
            for (Region r : new ArrayList<>(held.values())) {
                if (held.remove(r.lease, r) && !lost && !end(r)) {
                    LOG.log(System.Logger.Level.WARNING, "peer '" + name + "': " + r.lease() + " still in use at close; left to the agent");
                }
            }
            for (Mapping old : replaced) {
                old.arena.close();
            }
            replaced.clear();
            mapping.arena.close();
        }
    }

    /** One lease of this lender: its mapping, head region, the table's epoch of the lending, and its memory. */
    private final class Region implements LentRegion {
        private final Mapping mapping;
        private final PeerLease lease;
        private final long head;
        private final long epoch;              // the table's epoch (the lease's carries the generation above it)
        private final long lentWord;
        private final long runLength;
        private final MemorySegment memory;
        private volatile boolean ended;        // given back, acknowledged, fenced or lost: enter fails at once
        private volatile boolean revocationSeen; // event thread only (volatile for giveBack's reads)

        Region(Mapping mapping, PeerLease lease, long epoch, long runLength, MemorySegment memory) {
            this.mapping = mapping;
            this.lease = lease;
            this.head = lease.region();
            this.epoch = epoch;
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
            try {
                return mapping.table.enter(head, epoch, lentWord);
            } catch (IllegalStateException e) {
                if (mapping.arena.scope().isAlive()) {
                    throw e;
                }
                return false; // ended and its replaced file unmapped since the check above
            }
        }

        @Override
        public MemorySegment memory() {
            return memory;
        }

        @Override
        public void exit() {
            mapping.table.exit(head, epoch);
        }

        /** The head's state word is neither LENT nor REVOKING at this lending's epoch (fenced or reaped). */
        @Override
        public boolean takenBack() {
            if (!mapping.arena.scope().isAlive()) {
                return false; // its agent's file was replaced and unmapped: the lease ended with the agent (peerLost)
            }
            long w = mapping.table.stateWord(head);
            return w != lentWord && w != word(REVOKING, pid, epoch);
        }

        @Override
        public String toString() {
            return lease + " (" + runLength + " region" + (runLength == 1 ? "" : "s") + " of peer '" + name + "')";
        }
    }
}
