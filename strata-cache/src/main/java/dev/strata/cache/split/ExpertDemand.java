package dev.strata.cache.split;

import dev.strata.cache.curve.MissCurve;
import java.util.List;

/**
 * The expert stream's misses as a function of the per-layer cap {@code k}: how many expert fetches
 * a cache of {@code k} slots in every layer takes. Built from one LRU miss curve per layer (each
 * layer's cache is its own LRU of {@code k} slots, so the misses add up) or from one aggregate curve
 * over (layer, expert) items when the slots of all layers form one shared cache of
 * {@code layers × k} items.
 *
 * <p>Counts are kept apart as warm misses (reuse misses, which depend on {@code k}) and first
 * sights (which do not). Immutable; any thread.
 */
public final class ExpertDemand {
    private final double[] warm; // [k] for k in [0, experts]: warm misses summed over layers at per-layer cap k
    private final double compulsory; // first sights, all layers
    private final int experts; // experts per layer: the largest meaningful cap

    private ExpertDemand(double[] warm, double compulsory, int experts) {
        this.warm = warm;
        this.compulsory = compulsory;
        this.experts = experts;
    }

    /**
     * Per-layer caches: layer {@code l}'s LRU of {@code k} slots misses {@code curves.get(l).misses(k)}.
     *
     * @param experts experts per layer (the largest cap)
     */
    public static ExpertDemand perLayer(List<MissCurve> curves, int experts) {
        checkExperts(experts);
        if (curves.isEmpty()) {
            throw new IllegalArgumentException("per-layer expert demand needs at least one layer's curve");
        }
        double[] warm = new double[experts + 1];
        double compulsory = 0;
        for (MissCurve c : curves) {
            for (int k = 0; k <= experts; k++) {
                warm[k] += c.warmMisses(k);
            }
            compulsory += c.compulsory();
        }
        return new ExpertDemand(warm, compulsory, experts);
    }

    /**
     * One shared cache over (layer, expert) items: a per-layer cap {@code k} gives
     * {@code layers × k} items of capacity.
     */
    public static ExpertDemand aggregate(MissCurve curve, int layers, int experts) {
        checkExperts(experts);
        if (layers < 1) {
            throw new IllegalArgumentException("layers must be at least 1, got " + layers);
        }
        double[] warm = new double[experts + 1];
        for (int k = 0; k <= experts; k++) {
            warm[k] = curve.warmMisses((int) Math.min(Integer.MAX_VALUE, (long) layers * k));
        }
        return new ExpertDemand(warm, curve.compulsory(), experts);
    }

    /** Demand given directly as warm misses at each cap {@code 0..experts} (for tests and tools). */
    public static ExpertDemand ofWarmMisses(double[] warmByCap, double compulsory) {
        if (warmByCap.length < 2) {
            throw new IllegalArgumentException("warm misses are needed for caps 0..experts, at least two entries");
        }
        for (int k = 0; k < warmByCap.length; k++) {
            if (!(warmByCap[k] >= 0) || Double.isInfinite(warmByCap[k])) {
                throw new IllegalArgumentException("warm misses at cap " + k + " must be non-negative and finite, got " + warmByCap[k]);
            }
        }
        return new ExpertDemand(warmByCap.clone(), compulsory, warmByCap.length - 1);
    }

    /** Experts per layer: the largest cap. */
    public int experts() {
        return experts;
    }

    /** Reuse misses at per-layer cap {@code k} (summed over layers). */
    public double warmMisses(int k) {
        if (k < 0) {
            throw new IllegalArgumentException("expert cap must not be negative, got " + k);
        }
        return warm[Math.min(k, experts)];
    }

    /** All misses at cap {@code k}, first sights included. */
    public double misses(int k) {
        return warmMisses(k) + compulsory;
    }

    /** First sights over all layers. */
    public double compulsory() {
        return compulsory;
    }

    /**
     * The working set: the smallest cap whose warm misses are at most {@code fraction} of the warm
     * misses at cap 0 (every reuse). With {@code fraction = 0.01} this is the cap that keeps 99% of
     * the reuse the stream offers.
     */
    public int workingSet(double fraction) {
        double limit = warm[0] * fraction;
        for (int k = 0; k <= experts; k++) {
            if (warm[k] <= limit) {
                return k;
            }
        }
        return experts;
    }

    private static void checkExperts(int experts) {
        if (experts < 1) {
            throw new IllegalArgumentException("experts per layer must be at least 1, got " + experts);
        }
    }
}
