package dev.strata.node.peer;

import static dev.strata.node.peer.LendingFileLayout.*;

import dev.strata.cache.peer.LendingRule;
import dev.strata.memory.Sizes;
import dev.strata.memory.shm.Doorbell;
import dev.strata.memory.shm.OwnedShmFile;
import dev.strata.memory.shm.ProcessLiveness;
import dev.strata.memory.shm.ShmHeader;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code strata peer}: the process that owns a budget of memory, lends what it does not need
 * itself through a lending file ({@link LendingFileLayout}) and takes it back when its own demand
 * rises. Borrowers in other processes use {@link ShmPeerLender}.
 *
 * <p>Design note (the agent's side of the protocol in {@link dev.strata.cache.peer.PeerLender}):
 * borrowers claim FREE regions themselves (one CAS per region, no round trip to the agent); the
 * agent owns everything else. Every {@code tick} it
 * <ol>
 *   <li>refreshes its heartbeat and reads its {@link DemandSignal}: its reserve under the
 *       {@link LendingRule} every Strata lender follows (the demand rounded up to whole regions)
 *       is the number of regions it must HOLD for itself;</li>
 *   <li>fences every REVOKING lease past its deadline (state FENCED, epoch + 1: later enters under
 *       the old epoch fail) and finishes every fence whose gate it can shut (no access of the
 *       fenced lending under way) or whose borrower is dead: the run becomes HELD;</li>
 *   <li>every {@code livenessInterval}, reaps the leases of dead borrowers (pid and start time):
 *       fenced and taken back at once, and frees the half-claimed regions they left;</li>
 *   <li>balances: too few HELD regions, it takes FREE ones first, then revokes the lent runs the
 *       rule chooses for the rest (state REVOKING, deadline now + {@code grace}): the smallest run
 *       that covers the shortfall, else the largest, ties to the most recently lent, then the
 *       higher head (first fit places later runs higher); too many, it frees the excess. A
 *       borrower that acknowledges hands the run back as HELD, so a revoked region is never
 *       re-borrowed before the agent uses it.</li>
 * </ol>
 * With {@code stampReclaimed} the agent writes its own bytes over every region as it becomes
 * HELD: that is its reuse of the memory, and it happens only once the lending's gate is shut.
 *
 * <p>Doorbells ({@link Doorbell}, in the file's header): a tick that revoked, fenced or reaped a
 * lease rings the borrowers' bell, so their event threads look at once instead of at their next
 * poll; between ticks the tick thread sleeps on the agent's bell for at most {@code tick}, so a
 * borrower's acknowledgement (or {@link #wake}) starts the next tick at once. Without futex
 * (see {@link Doorbell#available}) both sides poll at their intervals.
 *
 * <p>Lifecycle: {@link #start} creates the file in a temporary file beside the path (refusing if a
 * live agent lends at the path: an OS lock on {@code <path>.lock}), publishes the header, renames
 * it over the path, starts the tick thread and prints one line starting with
 * {@code strata peer ready}. {@link #close} marks the file STOPPED (borrowers see their peer lost),
 * stops the thread, removes the file if it is still this agent's and unmaps it.
 *
 * <p>Threads: {@link #start}, {@link #close}, {@link #stats} from any thread; the table is managed
 * by the tick thread, or by the caller of {@link #step} for an agent created without one.
 */
public final class PeerAgent implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PeerAgent.class.getName());
    /** How often dead borrowers are looked for, in ticks at most this far apart. */
    private static final long LIVENESS_INTERVAL_MILLIS = 50;

    private final PeerAgentConfig config;
    private final Geometry geometry;
    private final OwnedShmFile owned;       // the lending file; holds the lock on <path>.lock while this agent lives
    private final MemorySegment file;       // owned.segment()
    private final LendingTable table;
    private final Doorbell agentBell;       // rung by borrowers; the tick thread sleeps on it between ticks
    private final Doorbell lenderBell;      // rung by the agent when a lease is revoked, fenced or reaped, or it stops
    private boolean leasesChanged;          // tick thread: this tick revoked, fenced or reaped (ring the borrowers)
    private final LendingRule rule;         // geometry.budget(), granule geometry.regionSize()
    private final MemorySegment stamp;      // regionSize bytes: what the agent writes over a region it takes back
    private final boolean[] stamped;        // [region] HELD and already overwritten (tick thread only)
    private final long startNanos;
    private final long pid = ProcessHandle.current().pid();
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final Object tickLock = new Object();
    private long nextLivenessMillis;
    private long lastDemand;
    private volatile boolean running;
    private volatile boolean closing;
    private volatile boolean closed;
    private Thread ticker;
    private PrintStream out;

    private PeerAgent(PeerAgentConfig config, Geometry geometry, OwnedShmFile owned) {
        this.config = config;
        this.geometry = geometry;
        this.owned = owned;
        this.file = owned.segment();
        this.table = new LendingTable(file, geometry);
        this.agentBell = Doorbell.at(file, AGENT_BELL_OFFSET);
        this.lenderBell = Doorbell.at(file, LENDER_BELL_OFFSET);
        this.rule = new LendingRule(geometry.budget(), geometry.regionSize());
        this.stamp = owned.arena().allocate(geometry.regionSize(), 64);
        SplittableRandom random = new SplittableRandom(pid);
        for (long i = 0; i < geometry.regionSize(); i += 8) {
            stamp.set(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong() | 1L);
        }
        this.stamped = new boolean[(int) geometry.regionCount()];
        this.startNanos = System.nanoTime();
    }

    /**
     * Creates the lending file, publishes it, starts the tick thread and prints the ready line.
     *
     * @throws IllegalStateException if a live agent already lends at the path
     * @throws UncheckedIOException  if the file cannot be created, sized or mapped
     */
    public static PeerAgent start(PeerAgentConfig config, PrintStream out) {
        PeerAgent agent = create(config);
        agent.out = out;
        agent.startTicking();
        if (out != null) {
            out.println("strata peer ready: pid " + agent.pid + ", lending " + Sizes.format(agent.geometry.budget()) + " in "
                    + agent.geometry.regionCount() + " regions of " + Sizes.format(agent.geometry.regionSize()) + " at "
                    + config.file() + ", " + config.demand().describe() + ", grace " + config.grace().toMillis() + " ms");
            out.flush();
        }
        return agent;
    }

    /**
     * Creates and publishes the lending file without a tick thread: the caller drives the agent
     * with {@link #step} (tests, simulations).
     */
    public static PeerAgent create(PeerAgentConfig config) {
        Path path = config.file();
        Geometry g = new Geometry(config.regionCount(), config.regionSize());
        OwnedShmFile owned = OwnedShmFile.create(path, KIND.noun(), g.totalSize(), (int) HEADER_SIZE, found -> {
            Header h = Header.of(found);
            return h.prefix().magic() == MAGIC && h.agentState() != AGENT_STOPPED && h.prefix().ownerAlive()
                    ? "lending file " + path + " is lent by a live agent (pid " + h.prefix().ownerPid()
                            + "): stop it first or choose another file"
                    : null;
        }, lockPath -> "lending file " + path + " is lent by another live process (it holds " + lockPath
                + "): stop it first or choose another file");
        try {
            MemorySegment mapped = owned.segment();
            writeHeader(mapped, g, config.clock().millis());
            PeerAgent agent = new PeerAgent(config, g, owned);
            LONG.setRelease(mapped, AGENT_STATE_OFFSET, AGENT_LENDING);
            ShmHeader.publish(mapped, KIND);
            owned.renameOverPath();
            agent.step();
            return agent;
        } catch (IOException e) {
            owned.discard();
            throw new UncheckedIOException("publishing lending file " + owned.tempPath() + " as " + path, e);
        } catch (RuntimeException | Error e) {
            owned.discard();
            throw e;
        }
    }

    private void startTicking() {
        synchronized (this) {
            if (ticker != null || closing) {
                throw new IllegalStateException("peer agent for " + config.file() + " was already "
                        + (closed ? "closed" : "started"));
            }
            running = true;
            ticker = Thread.ofPlatform().name("strata-peer-agent").daemon().unstarted(this::tickLoop);
            ticker.start();
        }
    }

    private void tickLoop() {
        long tickNanos = config.tick().toNanos();
        while (running) {
            int seen = agentBell.sequence(); // a ring during the tick starts the next one at once
            try {
                step();
            } catch (RuntimeException | Error e) {
                if (!running) {
                    return;
                }
                LOG.log(System.Logger.Level.ERROR, "peer agent for " + config.file() + ": tick failed", e);
                throw e;
            }
            if (running) {
                agentBell.await(seen, tickNanos);
            }
        }
    }

    /** Starts the next tick now rather than at its interval (its demand signal changed); any thread. */
    public void wake() {
        if (!closing) {
            agentBell.ring();
        }
    }

    /**
     * Runs one tick: heartbeat, demand, deadlines, fences, dead borrowers, balance. Called by the
     * tick thread; callable directly for an agent made by {@link #create}.
     */
    public void step() {
        synchronized (tickLock) {
            if (closed) {
                return;
            }
            long now = config.clock().millis();
            ShmHeader.beat(file, now);
            long demand = Math.clamp(config.demand().demandBytes(System.nanoTime() - startNanos), 0L, geometry.budget());
            lastDemand = demand;
            LONG.setOpaque(file, DEMAND_OFFSET, demand);
            long wanted = rule.reservedBytes(demand) / geometry.regionSize(); // regions to hold
            boolean livenessDue = now >= nextLivenessMillis;
            if (livenessDue) {
                nextLivenessMillis = now + LIVENESS_INTERVAL_MILLIS;
            }
            Map<Long, LentRun> lent = new HashMap<>(); // head -> a LENT run as this sweep saw it
            Map<Long, Boolean> pidAlive = new HashMap<>(); // pid -> alive, for MEMBER and CLAIMING regions (one check per pid per sweep)
            Map<PidStart, Boolean> borrowers = new HashMap<>(); // (pid, start) -> alive, for lease heads
            long incoming = 0;
            long n = geometry.regionCount();
            for (long r = 0; r < n; r++) {
                long w = table.stateWord(r);
                int s = state(w);
                switch (s) {
                    case LENT -> {
                        if (livenessDue && !borrowers.computeIfAbsent(new PidStart(pid(w), table.field(r, R_BORROWER_START)),
                                k -> ProcessLiveness.isAlive(k.pid(), k.startMillis()))) {
                            if (table.fence(r, w)) {
                                reap(r, table.stateWord(r));
                            }
                        } else {
                            lent.put(r, new LentRun(new LendingRule.Loan(r, table.field(r, R_RUN_LENGTH) * geometry.regionSize(),
                                    table.field(r, R_LENT_AT)), w));
                        }
                    }
                    case REVOKING -> {
                        long deadline = table.field(r, R_DEADLINE);
                        if (livenessDue && !borrowers.computeIfAbsent(new PidStart(pid(w), table.field(r, R_BORROWER_START)),
                                k -> ProcessLiveness.isAlive(k.pid(), k.startMillis()))) {
                            if (table.fence(r, w)) {
                                reap(r, table.stateWord(r));
                            }
                        } else if (now >= deadline) {
                            if (table.fence(r, w)) {
                                leasesChanged = true;
                                table.count(FENCES_OFFSET);
                                LOG.log(System.Logger.Level.INFO, "peer agent " + config.file() + ": fenced region " + r
                                        + " of pid " + pid(w) + " (epoch " + epoch(w) + " -> " + (epoch(w) + 1)
                                        + "): not acknowledged by its deadline");
                                incoming += finish(r, table.stateWord(r)) ? 0 : table.field(r, R_RUN_LENGTH);
                            }
                        } else {
                            incoming += table.field(r, R_RUN_LENGTH);
                        }
                    }
                    case FENCED -> incoming += finish(r, w) ? 0 : table.field(r, R_RUN_LENGTH);
                    case CLAIMING, MEMBER -> {
                        if (livenessDue && pid(w) != 0 && !pidAlive.computeIfAbsent(pid(w), p -> ProcessLiveness.isAlive(p, 0))) {
                            table.clearOrphan(r, w);
                        }
                    }
                    default -> {
                        // FREE and HELD: counted below
                    }
                }
            }
            // Regions the loop above turned HELD (fences finished, reaps) are stamped now and counted.
            long held = 0;
            for (long r = 0; r < n; r++) {
                if (state(table.stateWord(r)) == HELD) {
                    if (!stamped[(int) r]) {
                        stampRegion(r);
                    }
                    held++;
                }
            }
            balance(demand, wanted, held, incoming, lent, now);
            if (leasesChanged) {
                leasesChanged = false;
                lenderBell.ring();
            }
        }
    }

    /** A LENT run as a sweep saw it: the rule's view of it (bytes, lent at in ms) and the state word to revoke it from. */
    private record LentRun(LendingRule.Loan loan, long word) {
    }

    /** A borrower as a lease head records it. */
    private record PidStart(long pid, long startMillis) {
    }

    private static boolean borrowerAlive(long word, long startMillis) {
        return ProcessLiveness.isAlive(pid(word), startMillis);
    }

    /** Takes back a run fenced because its borrower died. */
    private void reap(long head, long fencedWord) {
        leasesChanged = true; // fenced already: the borrower's next look ends its lease
        if (table.finishFence(head, fencedWord, true)) {
            table.count(REAPED_OFFSET);
            LOG.log(System.Logger.Level.INFO, "peer agent " + config.file() + ": borrower pid " + pid(fencedWord)
                    + " died holding region " + head + "; reaped");
        }
    }

    /** Finishes a fence if no access of the fenced lending is under way or its borrower is dead; true if done. */
    private boolean finish(long head, long fencedWord) {
        if (table.finishFence(head, fencedWord, false)) {
            return true;
        }
        if (!borrowerAlive(fencedWord, table.field(head, R_BORROWER_START))) {
            return table.finishFence(head, fencedWord, true);
        }
        return false;
    }

    /**
     * Holds FREE regions, then revokes the runs the rule chooses, until {@code wanted} regions are
     * held or coming back; or frees the HELD regions beyond it.
     *
     * @param lent head of each LENT run -> the run as the sweep saw it
     */
    private void balance(long demand, long wanted, long held, long incoming, Map<Long, LentRun> lent, long now) {
        long n = geometry.regionCount();
        if (held < wanted) {
            // free regions first, from the top (borrowers claim first-fit from the bottom)
            for (long r = n - 1; r >= 0 && held < wanted; r--) {
                long w = table.stateWord(r);
                if (state(w) == FREE && table.hold(r, w)) {
                    stampRegion(r);
                    held++;
                }
            }
            long regionSize = geometry.regionSize();
            long shortfall = rule.shortfallBytes(demand, Math.min(geometry.budget(), (held + incoming) * regionSize));
            while (shortfall > 0 && !lent.isEmpty()) {
                List<LendingRule.Loan> loans = new ArrayList<>(lent.size());
                for (LentRun run : lent.values()) {
                    loans.add(run.loan());
                }
                for (LendingRule.Loan victim : rule.revocations(loans, shortfall)) {
                    long head = victim.id();
                    if (!table.revoke(head, lent.remove(head).word(), now + config.grace().toMillis(), System.nanoTime())) {
                        break; // the run changed under the agent (given back, reaped): choose again for what is still short
                    }
                    table.count(REVOCATIONS_OFFSET);
                    leasesChanged = true;
                    shortfall -= victim.bytes();
                }
            }
        } else if (held > wanted) {
            for (long r = 0; r < n && held > wanted; r++) {
                long w = table.stateWord(r);
                if (state(w) == HELD && table.unhold(r, w)) {
                    stamped[(int) r] = false;
                    held--;
                }
            }
        }
    }

    private void stampRegion(long r) {
        stamped[(int) r] = true;
        if (config.stampReclaimed()) {
            MemorySegment.copy(stamp, 0, file, geometry.data(r), geometry.regionSize());
        }
    }

    /** Regions by state and the agent's counters, as of now. */
    public LendingStats stats() {
        return LendingStats.of(table, lastDemand);
    }

    public PeerAgentConfig config() {
        return config;
    }

    public Geometry geometry() {
        return geometry;
    }

    /**
     * Installs a shutdown hook (SIGTERM, SIGINT) that closes the agent, and blocks until it is
     * closed.
     */
    public void runUntilStopped() throws InterruptedException {
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().unstarted(this::close));
        stopped.await();
    }

    /** Waits up to {@code millis} for the agent to be closed; true if it was. */
    public boolean awaitStopped(long millis) throws InterruptedException {
        return stopped.await(millis, TimeUnit.MILLISECONDS);
    }

    /**
     * Marks the file STOPPED (borrowers see their peer lost and stop entering), stops the tick
     * thread, removes the file if it is still this agent's and unmaps it. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
            running = false;
        }
        LONG.setRelease(file, AGENT_STATE_OFFSET, AGENT_STOPPED);
        lenderBell.ring(); // borrowers see the agent stopped now, not at their next poll
        Thread t = ticker;
        if (t != null) {
            agentBell.ring(); // the tick thread sleeps on it
            LockSupport.unpark(t);
            try {
                t.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        LendingStats last;
        synchronized (tickLock) {
            last = stats();
            closed = true;
        }
        owned.remove();
        owned.arena().close();
        if (out != null) {
            out.println("strata peer stopped: " + config.file() + " removed; " + last);
            out.flush();
        }
        stopped.countDown();
    }
}
