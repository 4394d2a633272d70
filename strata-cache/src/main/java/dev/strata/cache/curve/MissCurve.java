package dev.strata.cache.curve;

import java.util.Arrays;

/**
 * The misses an LRU cache would take on one reference stream at every capacity, in items (expert
 * slots, KV blocks). A reference whose reuse distance is {@code d} (the number of distinct other
 * items referenced since its previous reference) hits a cache of capacity {@code c} exactly when
 * {@code d < c}, so {@code warmMisses(c)} is the number of references with {@code d ≥ c}; first
 * sights (compulsory misses) miss at every capacity and are kept apart, because they do not
 * depend on the capacity and would swamp the marginal value of a slot.
 *
 * <p>Counts are doubles so that decayed (exponentially weighted) histograms give curves too.
 * Capacities above {@link #maxCapacity()} miss as many as {@code maxCapacity()} does: the
 * last bucket of the histogram a curve is made from collects every longer distance.
 *
 * <p>Immutable; any thread.
 */
public final class MissCurve {
    private final double[] warm; // [c] for c in [0, maxCapacity]: references with reuse distance >= c
    private final double compulsory; // first sights
    private final double references; // all references counted, first sights included

    private MissCurve(double[] warm, double compulsory, double references) {
        this.warm = warm;
        this.compulsory = compulsory;
        this.references = references;
    }

    /**
     * A curve from a histogram of reuse distances: {@code histogram[d]} references had reuse
     * distance {@code d}; the last entry counts every distance at or beyond it.
     *
     * @param histogram  reuse-distance counts, non-negative, at least one bucket; its length - 1
     *                   is the largest capacity resolved, and the references of the last bucket
     *                   count as misses at every capacity (give an empty last bucket when every
     *                   distance is below it)
     * @param compulsory first-sight references, non-negative
     * @throws IllegalArgumentException naming the first negative or non-finite count
     */
    public static MissCurve fromReuseHistogram(double[] histogram, double compulsory) {
        check("compulsory misses", compulsory);
        if (histogram.length == 0) {
            throw new IllegalArgumentException("a reuse-distance histogram needs at least one bucket");
        }
        double[] warm = new double[histogram.length];
        double sum = 0;
        for (int d = histogram.length - 1; d >= 0; d--) {
            check("reuse-distance count at distance " + d, histogram[d]);
            sum += histogram[d];
            warm[d] = sum;
        }
        return new MissCurve(warm, compulsory, sum + compulsory);
    }

    /** Largest capacity the curve resolves. */
    public int maxCapacity() {
        return warm.length - 1;
    }

    /** Misses at {@code capacity}, first sights included. */
    public double misses(int capacity) {
        return warmMisses(capacity) + compulsory;
    }

    /** Misses at {@code capacity} of references seen before (reuse misses). */
    public double warmMisses(int capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException("capacity must not be negative, got " + capacity);
        }
        return warm[Math.min(capacity, warm.length - 1)];
    }

    /** First-sight references: misses at every capacity. */
    public double compulsory() {
        return compulsory;
    }

    /** All references counted. */
    public double references() {
        return references;
    }

    /** Hit ratio at {@code capacity}, in [0, 1]; 0 for an empty stream. */
    public double hitRatio(int capacity) {
        return references == 0 ? 0 : 1 - misses(capacity) / references;
    }

    /** The warm misses at every capacity {@code 0..maxCapacity()}, a copy. */
    public double[] warmMissesByCapacity() {
        return warm.clone();
    }

    @Override
    public String toString() {
        return "MissCurve[refs=" + references + ", compulsory=" + compulsory + ", warm=" + Arrays.toString(
                Arrays.copyOf(warm, Math.min(warm.length, 8))) + (warm.length > 8 ? "..." : "") + "]";
    }

    private static void check(String what, double v) {
        if (!(v >= 0) || Double.isInfinite(v)) {
            throw new IllegalArgumentException(what + " must be a non-negative finite count, got " + v);
        }
    }
}
