package dev.strata.analysis.routing;

import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.routing.BurstStart;
import dev.strata.cache.routing.RequestStart;
import dev.strata.cache.routing.RoutingPhase;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceHeader;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What a routing trace says about its expert working set: counts, the exact per-layer LRU miss
 * curve summed over layers at a few caps, the working-set figures of the WiSP paper's
 * measurements (a burst's expert union as a fraction of the pool, the overlap of consecutive
 * bursts, a session's cumulative footprint), the co-activation predictor's support estimate and,
 * when asked, its precision@k against a frequency-only baseline.
 *
 * <p>Feed records with {@link #accept}, then read {@link #report()}. Confined to one thread.
 */
public final class RoutingTraceStats {
    private final RoutingTraceHeader header;
    private final RoutingReuseDistances distances;
    private final CoActivationPredictor predictor;
    private final boolean[][] burstUnion; // [layer][expert] experts used in the current burst
    private final boolean[][] previousBurst; // [layer][expert] the previous burst's union
    private final boolean[][] sessionUnion; // [layer][expert] the current session's footprint
    private final List<RoutingRecord> kept; // records kept for the precision evaluation; null when not asked
    private long steps;
    private long prefillSteps;
    private long tokens;
    private long requests;
    private long sessions;
    private long lastSession = Long.MIN_VALUE;
    private long bursts;
    private boolean burstOpen;
    private double burstUnionSum; // sum over finished bursts of union / (layers × experts)
    private double overlapSum; // sum over bursts with a predecessor of |this ∩ previous| / |this|
    private long overlaps;
    private double footprintSum; // sum over finished sessions of footprint / (layers × experts)
    private long footprints;
    private boolean sessionOpen;

    /** Stats of a trace with {@code header}; {@code measurePrediction} keeps the steps to evaluate the predictor at the end. */
    public RoutingTraceStats(RoutingTraceHeader header, boolean measurePrediction) {
        this.header = header;
        this.distances = new RoutingReuseDistances(header);
        this.predictor = new CoActivationPredictor(header, 1, 1.0);
        this.burstUnion = new boolean[header.layers()][header.experts()];
        this.previousBurst = new boolean[header.layers()][header.experts()];
        this.sessionUnion = new boolean[header.layers()][header.experts()];
        this.kept = measurePrediction ? new ArrayList<>() : null;
    }

    /** Feeds one record. */
    public void accept(RoutingRecord record) {
        switch (record) {
            case RequestStart r -> {
                requests++;
                if (r.session() != lastSession) {
                    endSession();
                    sessions++;
                    lastSession = r.session();
                    sessionOpen = true;
                }
            }
            case BurstStart b -> {
                endBurst();
                burstOpen = true;
                bursts++;
            }
            case RoutingStep s -> {
                steps++;
                tokens += s.tokens();
                if (s.phase() == RoutingPhase.PREFILL) {
                    prefillSteps++;
                }
                distances.accept(s);
                predictor.observe(s);
                for (int l = 0; l < header.layers(); l++) {
                    for (int t = 0; t < s.tokens(); t++) {
                        for (int k = 0; k < s.topK(); k++) {
                            int e = s.expert(l, t, k);
                            burstUnion[l][e] = true;
                            sessionUnion[l][e] = true;
                        }
                    }
                }
                if (kept != null) {
                    kept.add(s);
                }
            }
        }
    }

    private void endBurst() {
        if (!burstOpen) {
            return;
        }
        long union = 0;
        long shared = 0;
        boolean hadPrevious = false;
        for (int l = 0; l < header.layers(); l++) {
            for (int e = 0; e < header.experts(); e++) {
                hadPrevious |= previousBurst[l][e];
                if (burstUnion[l][e]) {
                    union++;
                    shared += previousBurst[l][e] ? 1 : 0;
                }
            }
        }
        if (union > 0) {
            burstUnionSum += union / (double) (header.layers() * header.experts());
            if (hadPrevious) {
                overlapSum += shared / (double) union;
                overlaps++;
            }
            for (int l = 0; l < header.layers(); l++) {
                System.arraycopy(burstUnion[l], 0, previousBurst[l], 0, header.experts());
                java.util.Arrays.fill(burstUnion[l], false);
            }
        } else {
            bursts--; // an empty burst does not count
        }
        burstOpen = false;
    }

    private void endSession() {
        if (!sessionOpen) {
            return;
        }
        long n = 0;
        for (boolean[] layer : sessionUnion) {
            for (int e = 0; e < layer.length; e++) {
                n += layer[e] ? 1 : 0;
                layer[e] = false;
            }
        }
        footprintSum += n / (double) (header.layers() * header.experts());
        footprints++;
        sessionOpen = false;
    }

    /**
     * The summary.
     *
     * @param steps         steps read
     * @param prefillSteps  of which prefill
     * @param tokens        tokens routed
     * @param requests      request markers
     * @param sessions      distinct sessions (consecutive request markers with one session id)
     * @param bursts        bursts with at least one step
     * @param caps          per-layer caps the hit ratios are given at
     * @param hitRatios     hit ratio of per-layer LRU caches at each cap, all layers together, first sights included
     * @param warmHitRatios the same without first sights (reuse only)
     * @param burstUnion    mean fraction of the expert pool (layers × experts) one burst touches
     * @param burstOverlap  mean fraction of a burst's union already in the previous burst's
     * @param footprint     mean fraction of the pool a session touches
     * @param support99     per-layer caps covering 99% of each layer's routed mass (the predictor's support estimate), max over layers
     * @param supportMean   the same, mean over layers
     * @param supportHit    hit ratio (first sights included) of per-layer LRU caches each sized to its layer's support cap
     * @param supportWarmHit the same without first sights: how near-lossless the right-sized caps are
     * @param prediction    precision@k of next-layer prediction, or null when not measured
     */
    public record Report(long steps, long prefillSteps, long tokens, long requests, long sessions, long bursts, int[] caps,
                         double[] hitRatios, double[] warmHitRatios, double burstUnion, double burstOverlap, double footprint,
                         int support99, double supportMean, double supportHit, double supportWarmHit,
                         PredictionQuality prediction) {

        /** Human-readable lines. */
        public List<String> lines() {
            List<String> out = new ArrayList<>();
            out.add(String.format(Locale.ROOT, "steps %d (%d prefill), tokens %d, requests %d, sessions %d, bursts %d", steps,
                    prefillSteps, tokens, requests, sessions, bursts));
            StringBuilder h = new StringBuilder("per-layer LRU hit ratio by cap:");
            for (int i = 0; i < caps.length; i++) {
                h.append(String.format(Locale.ROOT, "  %d: %.3f (warm %.3f)", caps[i], hitRatios[i], warmHitRatios[i]));
            }
            out.add(h.toString());
            out.add(String.format(Locale.ROOT, "burst union %.1f%% of the pool, consecutive bursts overlap %.1f%%, session footprint %.1f%%",
                    100 * burstUnion, 100 * burstOverlap, 100 * footprint));
            out.add(String.format(Locale.ROOT, "working-set support (experts covering 99%% of routed mass): max %d, mean %.1f per layer;"
                    + " LRU caches of those sizes hit %.3f (warm %.3f)", support99, supportMean, supportHit, supportWarmHit));
            if (prediction != null) {
                out.add(String.format(Locale.ROOT,
                        "next-layer precision@k: co-activation %.3f, frequency-only %.3f, random %.3f (%d predictions)",
                        prediction.precision(), prediction.frequencyPrecision(), prediction.randomPrecision(),
                        prediction.predictions()));
            }
            return out;
        }
    }

    /** The summary of everything fed so far (ends the open burst and session). */
    public Report report() {
        endBurst();
        endSession();
        int e = header.experts();
        int k = header.topK();
        int[] caps = java.util.stream.IntStream.of(k, 2 * k, 4 * k, e / 4, e / 2, e)
                .filter(c -> c >= 1 && c <= e).distinct().sorted().toArray();
        double[] hit = new double[caps.length];
        double[] warm = new double[caps.length];
        MissCurve[] curves = new MissCurve[header.layers()];
        double refs = 0;
        double compulsory = 0;
        for (int l = 0; l < header.layers(); l++) {
            curves[l] = distances.layerCurve(l);
            refs += curves[l].references();
            compulsory += curves[l].compulsory();
        }
        for (int i = 0; i < caps.length; i++) {
            double misses = 0;
            double warmMisses = 0;
            for (MissCurve c : curves) {
                misses += c.misses(caps[i]);
                warmMisses += c.warmMisses(caps[i]);
            }
            hit[i] = refs == 0 ? 0 : 1 - misses / refs;
            warm[i] = refs - compulsory == 0 ? 0 : 1 - warmMisses / (refs - compulsory);
        }
        int[] support = predictor.supportCaps(0.99);
        double supportMisses = 0;
        double supportWarmMisses = 0;
        for (int l = 0; l < header.layers(); l++) {
            supportMisses += curves[l].misses(support[l]);
            supportWarmMisses += curves[l].warmMisses(support[l]);
        }
        PredictionQuality q = kept == null ? null
                : PredictionQuality.evaluate(header, kept, 2, 0.5, (int) Math.min(64, kept.size() / 10));
        return new Report(steps, prefillSteps, tokens, requests, sessions, bursts, caps, hit, warm,
                bursts == 0 ? 0 : burstUnionSum / bursts, overlaps == 0 ? 0 : overlapSum / overlaps,
                footprints == 0 ? 0 : footprintSum / footprints,
                java.util.Arrays.stream(support).max().orElse(0), java.util.Arrays.stream(support).average().orElse(0),
                refs == 0 ? 0 : 1 - supportMisses / refs,
                refs - compulsory == 0 ? 0 : 1 - supportWarmMisses / (refs - compulsory), q);
    }
}
