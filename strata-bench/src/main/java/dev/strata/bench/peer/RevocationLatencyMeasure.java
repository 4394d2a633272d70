package dev.strata.bench.peer;

import dev.strata.bench.Figure;
import dev.strata.bench.Goal;
import dev.strata.bench.Paired;
import dev.strata.bench.Series;
import dev.strata.bench.Trials;
import dev.strata.bench.Verdict;
import dev.strata.cache.Durability;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.PeerLease;
import dev.strata.cache.peer.RevocationCallback;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * How long a revocation takes to reach the client that borrowed the memory, and how long it waits
 * for an access under way: the two delays Harvest's runtime puts between a peer wanting its memory
 * back and the memory being free (drain in-flight transfers, then invoke the callback).
 *
 * <ul>
 *   <li><b>Revocation to callback, idle lease.</b> A lease is borrowed and written; the agent is
 *       asked to take its budget back; the time from the agent's revocation of the lease (its
 *       {@code System.nanoTime()}, which the lender passes with the revocation: the same
 *       {@code CLOCK_MONOTONIC} in every process of the host) to the client's revocation callback
 *       is recorded. Baseline, same run: one hand-off of a timestamp to a thread blocked on a queue
 *       (the floor of any notification between threads; the revocation path makes one: the
 *       lender's event thread, which finds the lease drained, ends it and runs the callback). The
 *       time from the rig's demand to the callback, which adds the agent's reaction to the demand
 *       (across processes: the demand file, the agent's wake-up and tick), is reported beside it.</li>
 *   <li><b>Revocation to callback with a read in flight.</b> Another thread reads the lease over and
 *       over ({@code readBytes} per read); the agent takes the memory back at a random point of a
 *       read. The callback runs only after that read has left the lease, so this is drain plus
 *       notification. Baseline: the median duration of one such read, measured in the same block
 *       (a bound on how long an access can hold a revocation up; a read looks at its lease's guard
 *       every {@link dev.strata.cache.peer.PeerClient#COPY_STEP_BYTES} and stops there, so it holds
 *       it up for one step at most); the reads' own p99 is in the note.</li>
 *   <li><b>Drain</b>, as the client itself measures it (from the revocation event to the last access
 *       leaving, {@link dev.strata.cache.peer.PeerClient#drainNanos}), of the in-flight revocations
 *       alone, in the same blocks; same baseline. (The client's drain summary also counts the idle
 *       revocations, which drain at once, so its p99 is not the in-flight drains' p99.)</li>
 * </ul>
 *
 * <p>The measuring thread parks rather than spins while it waits, and so does the reader between
 * leases: on a machine of two cores a spinning waiter would take the core the revocation needs.
 *
 * <p>Threads: runs on the calling thread and starts one reader and one hand-off thread.
 */
public final class RevocationLatencyMeasure {
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final long AWAIT_PARK_NANOS = 10_000_000; // longest park while waiting for a callback
    private static final long WAIT_STEP_NANOS = 20_000; // park between looks at the reader's progress
    private static final long WARM_UP_NANOS = TimeUnit.SECONDS.toNanos(10); // longest warm-up of a run of 500 rounds or more
    private static final String IDLE_GOAL = "<= 3"; // revocation to callback, p50 and p99, against the hand-off's
    private static final String IN_FLIGHT_P50_GOAL = "<= 1.5"; // against the reads' median
    private static final String IN_FLIGHT_P99_GOAL = "<= 2";
    private static final String DRAIN_P50_GOAL = "<= 1";
    private static final String DRAIN_P99_GOAL = "<= 1.5";

    private RevocationLatencyMeasure() {
    }

    /** Figures for one rig; {@code rounds} revocations of each kind. */
    public static List<Figure> figures(RevocationRig rig, int rounds, long leaseBytes, long readBytes) throws InterruptedException {
        return figures(rig, rounds, leaseBytes, readBytes, new ArrayList<>());
    }

    /**
     * Figures for one rig; {@code rounds} revocations of each kind, measured in paired blocks
     * (between 1 and {@link Trials#FULL_ROUNDS}, of about ten revocations or more each: with nine,
     * a full run's spread is the median's confidence interval, not the whole range): a block of hand-offs and a block of
     * idle revocations back to back, in alternating order, and the reads under way timed in the
     * same block as the in-flight revocations; each block's percentiles make one pair. In a full
     * run (nine blocks) a kind whose figures are not all decided after nine blocks is measured on
     * to {@link Trials#SECOND_LOOK_ROUNDS} blocks of the same size and judged again on all of them,
     * as {@link Trials#pairedUntilDecided} does for rounds. Adds the latency distributions (CDFs
     * over all blocks) to {@code plots}.
     */
    public static List<Figure> figures(RevocationRig rig, int rounds, long leaseBytes, long readBytes, List<Series> plots)
            throws InterruptedException {
        int blocks = Math.clamp(rounds / 10, 1, Trials.FULL_ROUNDS);
        int maxBlocks = blocks == Trials.FULL_ROUNDS ? Trials.SECOND_LOOK_ROUNDS : blocks; // a second look in full runs
        Histogram handoffAll = new Histogram(3);
        Histogram idle = new Histogram(3);
        Histogram fromDemand = new Histogram(3); // ns, the rig asking the lender for its memory -> the callback, idle leases
        Histogram inFlight = new Histogram(3);
        Histogram drains = new Histogram(3); // ns, revocation event -> last access left, in-flight rounds
        Histogram reads = new Histogram(3);
        double[][] idleP = new double[2][maxBlocks]; // [p50, p99][block], us
        double[][] handoffP = new double[2][maxBlocks];
        double[][] inFlightP = new double[2][maxBlocks];
        double[][] drainP = new double[2][maxBlocks];
        double[] readP50 = new double[maxBlocks];
        try (Arena arena = Arena.ofShared()) {
            MemorySegment fill = arena.allocate(readBytes, 64);
            SplittableRandom r = new SplittableRandom(0x7E70CA7EL);
            for (long o = 0; o + 8 <= readBytes; o += 8) {
                fill.set(ValueLayout.JAVA_LONG_UNALIGNED, o, r.nextLong());
            }
            // a tenth of the rounds warms up, and in a full run more, until the JIT has compiled the revocation path
            Trials.warmUntilCompiled(Math.max(1, rounds / 10), warmUpNanos(rounds), () -> revokeIdle(rig, leaseBytes, fill,
                    new Histogram(3)));
            int idleBlocks = Trials.roundsUntilDecided(blocks, maxBlocks, b -> {
                int n = blockSize(rounds, blocks, b);
                Histogram h = null;
                Histogram idleBlock = new Histogram(3);
                for (int k = 0; k < 2; k++) {
                    if ((k == 0) == (b % 2 == 0)) {
                        h = handoff(n);
                    } else {
                        for (int i = 0; i < n; i++) {
                            idleBlock.recordValue(revokeIdle(rig, leaseBytes, fill, fromDemand));
                        }
                    }
                }
                handoffAll.add(h);
                idle.add(idleBlock);
                percentiles(h, handoffP, b);
                percentiles(idleBlock, idleP, b);
            }, () -> undecided(blocks, handoffP, idleP, IDLE_GOAL, IDLE_GOAL));
            Recorder readRecorder = new Recorder(3);
            Reader reader = new Reader(rig, arena.allocate(readBytes, 64), readRecorder);
            Thread t = Thread.ofPlatform().name("strata-bench-peer-reader").daemon().start(reader);
            int inFlightBlocks;
            try {
                Trials.warmUntilCompiled(Math.max(1, rounds / 10), warmUpNanos(rounds), // the reads and the drain
                        () -> revokeInFlight(rig, readBytes, fill, reader, r, new Histogram(3)));
                readRecorder.getIntervalHistogram(); // reset
                inFlightBlocks = Trials.roundsUntilDecided(blocks, maxBlocks, b -> {
                    Histogram block = new Histogram(3);
                    Histogram blockDrains = new Histogram(3);
                    for (int i = 0, n = blockSize(rounds, blocks, b); i < n; i++) {
                        block.recordValue(revokeInFlight(rig, readBytes, fill, reader, r, blockDrains));
                    }
                    Histogram blockReads = readRecorder.getIntervalHistogram();
                    inFlight.add(block);
                    drains.add(blockDrains);
                    reads.add(blockReads);
                    percentiles(block, inFlightP, b);
                    percentiles(blockDrains, drainP, b);
                    readP50[b] = blockReads.getValueAtPercentile(50) / 1e3;
                }, () -> undecided(blocks, new double[][] {readP50, readP50}, inFlightP, IN_FLIGHT_P50_GOAL, IN_FLIGHT_P99_GOAL)
                        || undecided(blocks, new double[][] {readP50, readP50}, drainP, DRAIN_P50_GOAL, DRAIN_P99_GOAL));
            } finally {
                reader.stop = true;
                t.join(10_000);
            }
            String label = rig.label();
            List<Figure> out = new ArrayList<>();
            String handoffName = "thread hand-off through a blocking queue";
            String idlePaired = paired(idleBlocks, blocks);
            out.add(Figure.paired("peer_revoke_to_callback_p50_" + label, "us", handoffName + " p50",
                    Paired.firstRounds(handoffP[0], idleP[0], idleBlocks, blocks), IDLE_GOAL)
                    .withNote(idle.getTotalCount() + " revocations of an idle " + leaseBytes + "-byte lease, each timed from the"
                            + " lender's revocation (its clock reading, passed with the revocation) to the callback, which runs on"
                            + " the lender's event thread when the revocation reaches it; from the rig asking the lender for the"
                            + " memory to the callback: p50 " + micros(fromDemand, 50) + " us, p99 " + micros(fromDemand, 99)
                            + " us" + idlePaired));
            out.add(Figure.paired("peer_revoke_to_callback_p99_" + label, "us", handoffName + " p99",
                    Paired.firstRounds(handoffP[1], idleP[1], idleBlocks, blocks), IDLE_GOAL));
            String readName = "one " + readBytes + "-byte read of the lease, median";
            String inFlightPaired = paired(inFlightBlocks, blocks);
            out.add(Figure.paired("peer_revoke_to_callback_in_flight_p50_" + label, "us", readName,
                    Paired.firstRounds(readP50, inFlightP[0], inFlightBlocks, blocks), IN_FLIGHT_P50_GOAL)
                    .withNote(inFlight.getTotalCount() + " revocations with a read under way when the agent takes the memory"
                            + " back: drain, then the callback; reads timed in the same blocks" + inFlightPaired));
            out.add(Figure.paired("peer_revoke_to_callback_in_flight_p99_" + label, "us", readName,
                    Paired.firstRounds(readP50, inFlightP[1], inFlightBlocks, blocks), IN_FLIGHT_P99_GOAL)
                    .withNote("the reads themselves in the same blocks: p99 " + micros(reads, 99) + " us, p99.9 "
                            + micros(reads, 99.9) + " us, for a median of " + micros(reads, 50) + " us"));
            out.add(Figure.paired("peer_drain_p50_" + label, "us", readName,
                            Paired.firstRounds(readP50, drainP[0], inFlightBlocks, blocks), DRAIN_P50_GOAL)
                    .withNote("the client's drain of each in-flight revocation alone (PeerClient.drainNanos: from the revocation"
                            + " reaching the client to the last access leaving; " + drains.getTotalCount() + " drains, p99.9 "
                            + micros(drains, 99.9) + " us)" + inFlightPaired));
            out.add(Figure.paired("peer_drain_p99_" + label, "us", readName,
                    Paired.firstRounds(readP50, drainP[1], inFlightBlocks, blocks), DRAIN_P99_GOAL));
            String plot = "revocation to callback, " + label + " (CDF)";
            plots.add(cdf(plot, "idle lease", idle));
            plots.add(cdf(plot, "idle lease, from the rig's demand", fromDemand));
            plots.add(cdf(plot, "read in flight", inFlight));
            plots.add(cdf(plot, handoffName + " (baseline)", handoffAll));
            return out;
        }
    }

    /**
     * True if the p50 or the p99 figure of the first {@code blocks} blocks ({@code baseline[k]}
     * against {@code subject[k]}, {@code k} 0 for p50 and 1 for p99) is inconclusive at its goal.
     */
    static boolean undecided(int blocks, double[][] baseline, double[][] subject, String p50Goal, String p99Goal) {
        String[] goals = {p50Goal, p99Goal};
        for (int k = 0; k < 2; k++) {
            if (Paired.firstRounds(baseline[k], subject[k], blocks, blocks).judge(Goal.parse(goals[k])) == Verdict.INCONCLUSIVE) {
                return true;
            }
        }
        return false;
    }

    /** The end of a note: how many paired blocks, and whether they were a second look. */
    private static String paired(int n, int blocks) {
        return "; " + n + " paired blocks, each block's percentile"
                + (n > blocks ? " (a second look: " + blocks + " blocks left the verdict open)" : "");
    }

    private static String micros(Histogram h, double percentile) {
        return String.format(java.util.Locale.ROOT, "%.1f", h.getValueAtPercentile(percentile) / 1e3);
    }

    /**
     * How long a warm-up of {@code rounds} revocations may go on until the JIT has compiled their
     * path: up to {@link #WARM_UP_NANOS} for a run of 500 or more, one batch for a smaller (quick) one.
     */
    private static long warmUpNanos(int rounds) {
        return rounds >= 500 ? WARM_UP_NANOS : 0;
    }

    /**
     * Revocations in block {@code b} of {@code blocks}: an even share, the last block taking the
     * rest; a block of a second look ({@code b >= blocks}) an even share.
     */
    private static int blockSize(int rounds, int blocks, int b) {
        int share = Math.max(1, rounds / blocks);
        return b != blocks - 1 ? share : Math.max(1, rounds - share * (blocks - 1));
    }

    /** Stores {@code h}'s p50 and p99, in microseconds, at {@code [0][b]} and {@code [1][b]}. */
    private static void percentiles(Histogram h, double[][] into, int b) {
        into[0][b] = h.getValueAtPercentile(50) / 1e3;
        into[1][b] = h.getValueAtPercentile(99) / 1e3;
    }

    /** The distribution of {@code h} (nanoseconds) as a CDF in microseconds ({@link Series#latencyCdf}). */
    static Series cdf(String plot, String label, Histogram h) {
        return Series.latencyCdf(plot, label, h);
    }

    /**
     * Borrows, writes, has the agent take everything back; returns nanoseconds from the lender's
     * revocation (its stamp, passed with the revocation) to the callback, and records in
     * {@code fromDemand} the time from the rig's call to the callback.
     */
    private static long revokeIdle(RevocationRig rig, long leaseBytes, MemorySegment fill, Histogram fromDemand)
            throws InterruptedException {
        PeerLease lease = borrow(rig, leaseBytes);
        rig.client().write(lease, 0, fill.asSlice(0, Math.min(leaseBytes, fill.byteSize())));
        AtomicLong calledAt = new AtomicLong();
        rig.client().onRevoke(lease, stamp(calledAt));
        long t0 = System.nanoTime();
        rig.takeBack();
        long at = awaitNonZero(calledAt, rig.label() + ": no revocation callback for " + lease);
        long revoked = revokedAt(rig, lease);
        settle(rig);
        rig.offerAll();
        fromDemand.recordValue(Math.max(0, at - t0));
        return Math.max(0, at - revoked);
    }

    /** When the lender revoked {@code lease}, as it told the client with the revocation. */
    private static long revokedAt(RevocationRig rig, PeerLease lease) {
        long revoked = rig.client().revokedAtNanos(lease);
        if (revoked == 0) {
            throw new IllegalStateException(rig.label() + ": the client knows no revocation time for " + lease);
        }
        return revoked;
    }

    /**
     * Revokes a lease while a read of it is under way; returns nanoseconds from the lender's
     * revocation to the callback, and records in {@code drains} the client's drain of the lease.
     */
    private static long revokeInFlight(RevocationRig rig, long readBytes, MemorySegment fill, Reader reader, SplittableRandom r,
                                       Histogram drains) throws InterruptedException {
        PeerLease lease = borrow(rig, readBytes);
        rig.client().write(lease, 0, fill);
        AtomicLong calledAt = new AtomicLong();
        rig.client().onRevoke(lease, stamp(calledAt));
        long started = reader.reads.get();
        reader.lease = lease;
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (reader.reads.get() < started + 2) { // two whole reads done, the next one under way
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(rig.label() + ": reads of " + lease + " did not succeed within 5 s");
            }
            LockSupport.parkNanos(WAIT_STEP_NANOS);
        }
        // then a random point of a read (the reader reads back to back, so one is under way whenever the park ends)
        LockSupport.parkNanos(r.nextLong(1, Math.max(2, reader.lastReadNanos)));
        rig.takeBack();
        long at = awaitNonZero(calledAt, rig.label() + ": no revocation callback for " + lease + " with a read in flight");
        long revoked = revokedAt(rig, lease);
        long drained = rig.client().drainNanos(lease); // set before the callbacks run
        if (drained < 0) {
            throw new IllegalStateException(rig.label() + ": the client knows no drain time for " + lease + " after its callback");
        }
        drains.recordValue(drained);
        reader.lease = null;
        settle(rig);
        rig.offerAll();
        return Math.max(0, at - revoked);
    }

    /** Borrows {@code bytes}, retrying while the agent has not yet made its memory lendable again (it may do so on its next tick). */
    private static PeerLease borrow(RevocationRig rig, long bytes) {
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (true) {
            var lease = rig.client().alloc(bytes, LeaseHints.of(Durability.LOSSY));
            if (lease.isPresent()) {
                return lease.get();
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(rig.label() + ": the lender refused a lease of " + bytes + " bytes for 5 s");
            }
            LockSupport.parkNanos(50_000);
        }
    }

    /**
     * A callback that stamps the clock into {@code calledAt}, then wakes the measuring thread (the
     * calling thread), which waits for it in {@link #awaitNonZero}.
     */
    private static RevocationCallback stamp(AtomicLong calledAt) {
        Thread measuring = Thread.currentThread();
        return (lease, reason) -> {
            calledAt.set(System.nanoTime());
            LockSupport.unpark(measuring);
        };
    }

    /**
     * Waits for the callback's timestamp, parked until the callback wakes this thread (the callback
     * stamps the clock itself, so how soon this thread wakes does not matter; spinning, or waking
     * every few microseconds to look, would take a core from the threads measured). Each park ends
     * after at most {@value #AWAIT_PARK_NANOS} ns, so a wake-up lost to a spurious return costs no
     * more than that.
     */
    private static long awaitNonZero(AtomicLong v, String failure) {
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        long x;
        while ((x = v.get()) == 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(failure + " within 5 s");
            }
            LockSupport.parkNanos(AWAIT_PARK_NANOS);
        }
        return x;
    }

    private static void settle(RevocationRig rig) throws InterruptedException {
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (!rig.settled()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(rig.label() + ": revocation did not settle within 5 s");
            }
            Thread.sleep(0, 50_000);
        }
    }

    /** Reads the current lease over and over, timing each successful read; a failed read is retried until the lease changes. */
    private static final class Reader implements Runnable {
        final RevocationRig rig;
        final MemorySegment dst; // readBytes
        final Recorder histogram; // ns per successful read; the measuring thread takes interval histograms
        final AtomicLong reads = new AtomicLong(); // successful reads
        volatile PeerLease lease; // set and cleared by the measuring thread
        volatile boolean stop;
        volatile long lastReadNanos = 1;

        Reader(RevocationRig rig, MemorySegment dst, Recorder histogram) {
            this.rig = rig;
            this.dst = dst;
            this.histogram = histogram;
        }

        @Override
        public void run() {
            while (!stop) {
                PeerLease l = lease;
                if (l == null) {
                    LockSupport.parkNanos(20_000);
                    continue;
                }
                long t0 = System.nanoTime();
                if (rig.client().read(l, 0, dst)) {
                    long ns = System.nanoTime() - t0;
                    lastReadNanos = ns;
                    histogram.recordValue(ns);
                    reads.incrementAndGet();
                } else {
                    LockSupport.parkNanos(20_000); // revoked: leave the cores to the revocation until the next lease
                }
            }
        }
    }

    /** Nanoseconds from handing a timestamp to a thread blocked on a queue until it reads the clock, {@code rounds} times. */
    static Histogram handoff(int rounds) throws InterruptedException {
        Histogram h = new Histogram(3);
        LinkedBlockingQueue<Long> q = new LinkedBlockingQueue<>();
        LinkedBlockingQueue<Boolean> done = new LinkedBlockingQueue<>();
        Thread t = Thread.ofPlatform().name("strata-bench-handoff").daemon().start(() -> {
            try {
                while (true) {
                    long t0 = q.take();
                    if (t0 < 0) {
                        return;
                    }
                    long ns = System.nanoTime() - t0;
                    synchronized (h) {
                        h.recordValue(Math.max(1, ns));
                    }
                    done.put(Boolean.TRUE);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        for (int i = 0; i < rounds + rounds / 10; i++) {
            Thread.sleep(0, 100_000); // let the consumer block, as the event threads do between revocations
            q.put(System.nanoTime());
            done.take();
            if (i + 1 == rounds / 10) {
                synchronized (h) {
                    h.reset();
                }
            }
        }
        q.put(-1L);
        t.join(5_000);
        synchronized (h) {
            return h.copy();
        }
    }
}
