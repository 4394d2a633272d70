package dev.strata.cache.split;

import dev.strata.cache.curve.DecayedReuseHistogram;
import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.curve.ReuseDistanceTracker;
import java.util.ArrayList;
import java.util.List;

/**
 * The live miss-curve estimate the {@link SplitController} decides on: exact reuse distances of
 * both reference streams (one {@link ReuseDistanceTracker} per MoE layer for the expert stream, one
 * for the KV block stream), counted into {@link DecayedReuseHistogram}s that age once per burst, so
 * the curves follow a workload as it moves.
 *
 * <p>Design note. Only warm references (reuse) shape the curves the controller compares:
 * first sights miss at every split alike and, counted in, would pull the split toward whichever
 * stream has simply been seen less (a cold-start pathology), so {@link #view} hands the controller
 * curves without them. The KV stream's peak occupancy of the burst (blocks held at once) is taken
 * from the caller, who knows the batch; it raises the floor the split must leave.
 *
 * <p>Confined to one thread (the one that drives the engine's steps).
 */
public final class SplitEstimator {
    private final ReuseDistanceTracker[] expertTrackers; // [layers]
    private final DecayedReuseHistogram[] expertHistograms; // [layers], capacities 0..experts
    private final ReuseDistanceTracker kvTracker;
    private final DecayedReuseHistogram kvHistogram; // capacities 0..maxKvBlocks
    private final int experts;
    private long peakKvBlocks; // of the burst in progress
    private long lastPeak; // of the last finished burst

    /**
     * @param layers      MoE layers
     * @param experts     experts per layer
     * @param maxKvBlocks largest KV pool the estimate resolves (the most blocks the budget could hold)
     * @param decay       weight a burst keeps per later burst, in (0, 1]
     */
    public SplitEstimator(int layers, int experts, int maxKvBlocks, double decay) {
        if (layers < 1 || experts < 1 || maxKvBlocks < 1) {
            throw new IllegalArgumentException("estimator needs layers, experts and KV capacity >= 1, got " + layers + ", "
                    + experts + ", " + maxKvBlocks);
        }
        this.experts = experts;
        this.expertTrackers = new ReuseDistanceTracker[layers];
        this.expertHistograms = new DecayedReuseHistogram[layers];
        for (int l = 0; l < layers; l++) {
            expertTrackers[l] = new ReuseDistanceTracker(experts);
            expertHistograms[l] = new DecayedReuseHistogram(experts, decay);
        }
        this.kvTracker = new ReuseDistanceTracker(Math.min(maxKvBlocks, 1 << 16));
        this.kvHistogram = new DecayedReuseHistogram(maxKvBlocks, decay);
    }

    /** Layer {@code layer} needs expert {@code expert} resident (once per layer per step). */
    public void expertAccess(int layer, int expert) {
        expertHistograms[layer].record(expertTrackers[layer].access(expert));
    }

    /** A step reads KV block {@code block} (its chained hash or any stable id). */
    public void kvAccess(long block) {
        kvHistogram.record(kvTracker.access(block));
    }

    /** The KV pool holds {@code blocks} in use at once now; the burst's peak is kept. */
    public void kvOccupancy(long blocks) {
        peakKvBlocks = Math.max(peakKvBlocks, blocks);
    }

    /** Ends the burst: ages the histograms and adds the burst's counts. */
    public void endBurst() {
        for (DecayedReuseHistogram h : expertHistograms) {
            h.endBurst();
        }
        kvHistogram.endBurst();
        lastPeak = peakKvBlocks;
        peakKvBlocks = 0;
    }

    /** The last finished burst's estimate, warm references only, with {@code costs}. */
    public SplitController.BurstView view(MissCosts costs) {
        List<MissCurve> layers = new ArrayList<>(expertHistograms.length);
        for (DecayedReuseHistogram h : expertHistograms) {
            layers.add(warmOnly(h.missCurve()));
        }
        return new SplitController.BurstView(ExpertDemand.perLayer(layers, experts), warmOnly(kvHistogram.missCurve()),
                lastPeak, costs);
    }

    /** The expert curve of layer {@code layer} as estimated now (first sights included). */
    public MissCurve expertCurve(int layer) {
        return expertHistograms[layer].missCurve();
    }

    /** The KV curve as estimated now (first sights included). */
    public MissCurve kvCurve() {
        return kvHistogram.missCurve();
    }

    private static MissCurve warmOnly(MissCurve c) {
        double[] warm = c.warmMissesByCapacity();
        double[] histogram = new double[warm.length];
        for (int d = 0; d < warm.length; d++) {
            histogram[d] = warm[d] - (d + 1 < warm.length ? warm[d + 1] : 0);
            if (histogram[d] < 0) {
                histogram[d] = 0; // rounding of decayed sums
            }
        }
        return MissCurve.fromReuseHistogram(histogram, 0);
    }
}
