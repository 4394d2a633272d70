package dev.strata.analysis.routing;

import dev.strata.cache.curve.DecayedReuseHistogram;
import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.curve.ReuseDistanceTracker;
import dev.strata.cache.routing.BurstStart;
import dev.strata.cache.routing.RequestStart;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceHeader;

/**
 * Reuse distances of a routing trace's expert stream: one {@link ReuseDistanceTracker} per MoE
 * layer (item = expert id: a per-layer expert cache) and one over all layers (item = layer and
 * expert: a cache shared by the layers), plus, when asked, a {@link DecayedReuseHistogram} beside
 * each, aged at every burst start.
 *
 * <p>The reference stream of a step: layer by layer (the order the forward pass runs), and at
 * each layer the union of the tokens' top-k in order of first appearance, each expert once: a
 * batch needs an expert resident once per layer, however many of its tokens chose it. A single
 * token's step references exactly its top-k.
 *
 * <p>Confined to one thread.
 */
public final class RoutingReuseDistances {
    private final RoutingTraceHeader header;
    private final ReuseDistanceTracker[] layers; // [layers]
    private final ReuseDistanceTracker all;
    private final DecayedReuseHistogram[] decayedLayers; // [layers], null when not asked for
    private final DecayedReuseHistogram decayedAll;
    private final int[] seenAt; // [experts] the step-layer stamp that last saw each expert
    private int stamp;
    private long steps;

    /** Exact curves only. */
    public RoutingReuseDistances(RoutingTraceHeader header) {
        this(header, 0, 1);
    }

    /**
     * Exact curves and, when {@code decayMaxCapacity > 0}, decayed histograms resolving
     * capacities up to {@code decayMaxCapacity} per layer ({@code × layers} for the shared cache).
     */
    public RoutingReuseDistances(RoutingTraceHeader header, int decayMaxCapacity, double decay) {
        this.header = header;
        this.layers = new ReuseDistanceTracker[header.layers()];
        for (int l = 0; l < layers.length; l++) {
            layers[l] = new ReuseDistanceTracker(Math.min(header.experts(), 1 << 16));
        }
        this.all = new ReuseDistanceTracker(Math.min(header.experts() * header.layers(), 1 << 20));
        if (decayMaxCapacity > 0) {
            decayedLayers = new DecayedReuseHistogram[header.layers()];
            for (int l = 0; l < layers.length; l++) {
                decayedLayers[l] = new DecayedReuseHistogram(decayMaxCapacity, decay);
            }
            decayedAll = new DecayedReuseHistogram(decayMaxCapacity * header.layers(), decay);
        } else {
            decayedLayers = null;
            decayedAll = null;
        }
        this.seenAt = new int[header.experts()];
    }

    /** Feeds one record: steps are referenced, burst starts age the decayed histograms, request starts are ignored. */
    public void accept(RoutingRecord record) {
        switch (record) {
            case RoutingStep s -> accept(s);
            case BurstStart b -> endBurst();
            case RequestStart r -> {
                // a new request does not change what is resident
            }
        }
    }

    /** References the experts of one step. */
    public void accept(RoutingStep step) {
        int tokens = step.tokens();
        int k = step.topK();
        for (int l = 0; l < header.layers(); l++) {
            if (++stamp == 0) {
                java.util.Arrays.fill(seenAt, 0);
                stamp = 1;
            }
            ReuseDistanceTracker tracker = layers[l];
            long layerKey = (long) l << 32;
            for (int t = 0; t < tokens; t++) {
                for (int s = 0; s < k; s++) {
                    int e = step.expert(l, t, s);
                    if (seenAt[e] == stamp) {
                        continue;
                    }
                    seenAt[e] = stamp;
                    int d = tracker.access(e);
                    int da = all.access(layerKey | e);
                    if (decayedLayers != null) {
                        decayedLayers[l].record(d);
                        decayedAll.record(da);
                    }
                }
            }
        }
        steps++;
    }

    /** Ends a burst in the decayed histograms (no effect on the exact curves). */
    public void endBurst() {
        if (decayedLayers != null) {
            for (DecayedReuseHistogram h : decayedLayers) {
                h.endBurst();
            }
            decayedAll.endBurst();
        }
    }

    /** Steps fed. */
    public long steps() {
        return steps;
    }

    /** Exact miss curve of layer {@code layer}'s own cache, capacities {@code 0..experts}. */
    public MissCurve layerCurve(int layer) {
        return layers[layer].missCurve(header.experts());
    }

    /** Exact miss curve of one cache shared by every layer (key = layer and expert), capacities {@code 0..layers × experts}. */
    public MissCurve sharedCurve() {
        return all.missCurve(header.experts() * header.layers());
    }

    /** The tracker of layer {@code layer}. */
    public ReuseDistanceTracker layerTracker(int layer) {
        return layers[layer];
    }

    /** The tracker over every layer. */
    public ReuseDistanceTracker sharedTracker() {
        return all;
    }

    /** Decayed curve of layer {@code layer}, or null when decayed histograms were not asked for. */
    public MissCurve decayedLayerCurve(int layer) {
        return decayedLayers == null ? null : decayedLayers[layer].missCurve();
    }

    /** Decayed curve of the shared cache, or null when decayed histograms were not asked for. */
    public MissCurve decayedSharedCurve() {
        return decayedAll == null ? null : decayedAll.missCurve();
    }

    /**
     * Misses summed over per-layer caches of {@code capacity} slots each: the per-layer expert cap
     * of a pager whose layers each have their own scratch.
     */
    public double perLayerMisses(int capacity) {
        double m = 0;
        for (int l = 0; l < layers.length; l++) {
            m += layerCurve(l).misses(capacity);
        }
        return m;
    }
}
