package dev.strata.cache.curve;

import java.util.Arrays;

/**
 * An exponentially decayed histogram of reuse distances, for a live miss-curve estimate that
 * follows a workload as it moves: at the end of each burst the accumulated counts are multiplied
 * by {@code decay} and the burst's own counts are added, so a burst {@code b} bursts old weighs
 * {@code decay^b}. With {@code decay = 1} nothing is forgotten and the curve equals the exact one
 * of a {@link ReuseDistanceTracker} fed the same stream (at capacities up to the cap).
 *
 * <p>Distances are capped: buckets {@code 0..maxCapacity-1} hold their distance, bucket
 * {@code maxCapacity} collects every distance at or beyond it (the overflow bucket), which is what
 * {@link MissCurve#fromReuseHistogram} expects. First sights are kept apart, decayed alike, so a
 * controller can use warm misses only.
 *
 * <p>Design note: aging multiplies the {@code maxCapacity + 1} buckets once per burst, which costs
 * far less than the references of a burst for the caps used here (a few thousand slots).
 *
 * <p>Confined to one thread.
 */
public final class DecayedReuseHistogram {
    private final double decay; // per burst, in (0, 1]
    private final double[] aged; // [maxCapacity + 1] decayed counts of finished bursts; last = overflow
    private final long[] burst; // [maxCapacity + 1] counts of the burst in progress
    private double agedCompulsory;
    private long burstCompulsory;
    private long bursts; // bursts finished

    /**
     * @param maxCapacity largest capacity resolved, at least 1
     * @param decay       weight kept per burst, in (0, 1]
     */
    public DecayedReuseHistogram(int maxCapacity, double decay) {
        if (maxCapacity < 1) {
            throw new IllegalArgumentException("maxCapacity must be at least 1, got " + maxCapacity);
        }
        if (!(decay > 0 && decay <= 1)) {
            throw new IllegalArgumentException("decay must be in (0, 1], got " + decay);
        }
        this.decay = decay;
        this.aged = new double[maxCapacity + 1];
        this.burst = new long[maxCapacity + 1];
    }

    /** Counts one reference of the current burst with {@code distance}, or a first sight ({@link ReuseDistanceTracker#FIRST_SIGHT}). */
    public void record(int distance) {
        if (distance < 0) {
            burstCompulsory++;
        } else {
            burst[Math.min(distance, burst.length - 1)]++;
        }
    }

    /** Ends the current burst: ages everything before it by {@code decay} and adds its counts. */
    public void endBurst() {
        for (int d = 0; d < aged.length; d++) {
            aged[d] = aged[d] * decay + burst[d];
        }
        agedCompulsory = agedCompulsory * decay + burstCompulsory;
        Arrays.fill(burst, 0);
        burstCompulsory = 0;
        bursts++;
    }

    /** Bursts ended. */
    public long bursts() {
        return bursts;
    }

    /** Largest capacity resolved. */
    public int maxCapacity() {
        return aged.length - 1;
    }

    /** The decay factor per burst. */
    public double decay() {
        return decay;
    }

    /**
     * The miss curve of the finished bursts (the burst in progress is not included until it ends),
     * exact at capacities {@code 0..maxCapacity()} for decay 1.
     */
    public MissCurve missCurve() {
        return MissCurve.fromReuseHistogram(aged.clone(), agedCompulsory);
    }
}
