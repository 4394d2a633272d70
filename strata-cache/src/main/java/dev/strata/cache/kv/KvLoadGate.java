package dev.strata.cache.kv;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Decides how much of a cached prefix is worth loading: a cached block is loaded only where
 * loading it beats recomputing it, so a slow tier (a busy disk, the cluster over a slow network)
 * never makes a request wait longer than the prefill it would have run.
 *
 * <p>Design note.
 * <ol>
 *   <li><b>What a block costs.</b> Loading: per location (PEER, HOST, POOL, DISK, SHARED), the
 *       seconds one block takes, measured on this manager's own loads: each {@link KvBlockManager#load}
 *       starts its blocks of one location together, and when the last of them has landed, the
 *       time from the start to the last landing divided by the blocks landed is a sample (so
 *       blocks loaded in parallel cost what they cost together, and a lone block its latency).
 *       A block on DEVICE is shared by reference and costs nothing. Recomputing: the engine's
 *       prefill seconds per token ({@link #recordPrefill}), times the tokens of a block; a
 *       prefill of less than a block is no sample (its fixed cost would read as a per-token
 *       cost). Each figure is an exponentially weighted moving average (weight
 *       {@value #ALPHA} on the newest sample; the first sample is taken as it is).</li>
 *   <li><b>The decision.</b> A block is usable only after every block before it, so the choice
 *       is a prefix: of the {@code m} matched blocks, the {@code k} that save the most, where
 *       loading block {@code i} saves the recompute cost less its load cost; ties go to the longer
 *       prefix (a load leaves the compute to other requests). With the engine waiting for the
 *       loads before it computes the rest, the request's time is the loads' plus the prefill's,
 *       and this {@code k} makes it least.</li>
 *   <li><b>Until measured, and again later.</b> Before the prefill speed is measured every
 *       matched block is loaded. A location not yet measured counts as free: its blocks are
 *       loaded, which measures it. Of a location whose last sample is older than
 *       {@value #PROBE_INTERVAL_NANOS} ns, the first block of a match counts as free (a probe)
 *       and the others cost the old estimate: so a location found slow is measured again about
 *       once a second at the price of one block's load, and a tier that became fast again is
 *       used again.</li>
 * </ol>
 *
 * <p>Threads: {@link #recordPrefill}, {@link #start}, {@link #landed} and
 * {@link #blocksWorthLoading} on the manager's scheduler thread; {@link #secondsPerBlock} and
 * {@link #recomputeSecondsPerBlock} from any thread (each estimate is published whole).
 *
 * <p>Invariants: every estimate is positive or NaN (not measured); a batch is sampled once, when
 * its last started block has landed or failed.
 */
final class KvLoadGate {
    static final double ALPHA = 0.2; // EWMA weight of the newest sample
    static final long PROBE_INTERVAL_NANOS = 1_000_000_000L; // a location's estimate is trusted this long after its last sample
    private static final VarHandle CELL = MethodHandles.arrayElementVarHandle(double[].class);

    private final int blockTokens; // tokens per block
    private final double[] loadSeconds; // [location] seconds to load one block, NaN until measured
    private final long[] sampledAt; // [location] System.nanoTime of the last sample
    private volatile double recomputeSecondsPerToken = Double.NaN; // prefill seconds per token, NaN until measured

    /** The blocks of one location that one load started together. Scheduler thread. */
    static final class Batch {
        final BlockLocation source;
        final long startNanos; // System.nanoTime when the load started them
        int pending; // started and not yet landed or failed
        int landed; // landed so far
        long lastLandingNanos; // System.nanoTime of the latest landing

        Batch(BlockLocation source, long startNanos) {
            this.source = source;
            this.startNanos = startNanos;
        }
    }

    KvLoadGate(int blockTokens) {
        if (blockTokens < 1) {
            throw new IllegalArgumentException("a block holds at least one token, got " + blockTokens);
        }
        this.blockTokens = blockTokens;
        this.loadSeconds = new double[BlockLocation.values().length];
        this.sampledAt = new long[loadSeconds.length];
        java.util.Arrays.fill(loadSeconds, Double.NaN);
    }

    /** One prefill of the engine: {@code tokens} computed in {@code nanos}; under a block of tokens it is ignored. */
    void recordPrefill(long tokens, long nanos) {
        if (tokens < blockTokens || nanos <= 0) {
            return;
        }
        double sample = nanos / 1e9 / tokens;
        double old = recomputeSecondsPerToken;
        recomputeSecondsPerToken = Double.isNaN(old) ? sample : old + ALPHA * (sample - old);
    }

    /** Counts one block of {@code batch} as started (the batch was created at the load's start). */
    void start(Batch batch) {
        batch.pending++;
    }

    /**
     * One block of {@code batch} ended at {@code endNanos}, landed or failed; after the batch's
     * last block, a batch that landed any block gives its location a sample.
     */
    void landed(Batch batch, long endNanos, boolean ok) {
        batch.pending--;
        if (ok) {
            batch.landed++;
            batch.lastLandingNanos = Math.max(batch.lastLandingNanos, endNanos);
        }
        if (batch.pending == 0 && batch.landed > 0) {
            double sample = Math.max(1, batch.lastLandingNanos - batch.startNanos) / 1e9 / batch.landed;
            int l = batch.source.ordinal();
            double old = (double) CELL.getOpaque(loadSeconds, l);
            CELL.setOpaque(loadSeconds, l, Double.isNaN(old) ? sample : old + ALPHA * (sample - old));
            sampledAt[l] = batch.lastLandingNanos;
        }
    }

    /**
     * How many leading blocks of {@code match} to load, {@code nowNanos} being the time of the
     * decision: the prefix that saves the most against recomputing (see the class note).
     */
    int blocksWorthLoading(PrefixMatch match, long nowNanos) {
        double perToken = recomputeSecondsPerToken;
        int m = match.blocks();
        if (Double.isNaN(perToken)) {
            return m;
        }
        double recompute = perToken * blockTokens;
        double saved = 0;
        double best = 0;
        int bestBlocks = 0;
        int probed = 0; // [location bit] stale locations whose one free block this decision has given
        for (int i = 0; i < m; i++) {
            BlockLocation l = match.location(i);
            double cost = 0; // DEVICE, or a location never measured
            if (l != BlockLocation.DEVICE && !Double.isNaN(loadSeconds[l.ordinal()])) {
                int bit = 1 << l.ordinal();
                boolean stale = nowNanos - sampledAt[l.ordinal()] > PROBE_INTERVAL_NANOS;
                if (stale && (probed & bit) == 0) {
                    probed |= bit; // the probe: this block is loaded whatever the old estimate says
                } else {
                    cost = loadSeconds[l.ordinal()];
                }
            }
            saved += recompute - cost;
            if (saved >= best) {
                best = saved;
                bestBlocks = i + 1;
            }
        }
        return bestBlocks;
    }

    /** The measured seconds to load one block from {@code l}, NaN if never measured. Any thread. */
    double secondsPerBlock(BlockLocation l) {
        return (double) CELL.getOpaque(loadSeconds, l.ordinal());
    }

    /** The measured seconds to recompute one block, NaN if never measured. Any thread. */
    double recomputeSecondsPerBlock() {
        return recomputeSecondsPerToken * blockTokens;
    }
}
