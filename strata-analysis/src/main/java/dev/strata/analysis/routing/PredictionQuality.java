package dev.strata.analysis.routing;

import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceHeader;

/**
 * Measures how well a {@link CoActivationPredictor} predicts the next layer's experts on a
 * routing trace, against a frequency-only baseline (each layer's most used experts so far), both
 * learned online: every step is predicted first, then learned from (prequential evaluation, so no
 * step is predicted by a table that has seen it).
 *
 * <p>Precision@k of one token at target layer {@code m >= 1}: the fraction of the {@code k}
 * predicted experts that are among the {@code k} the router chose. The figures average over every
 * token and every target layer after a warm-up of {@code warmupSteps}. Immutable; {@link #evaluate}
 * runs on the calling thread.
 *
 * @param precision          mean precision@k of the co-activation predictor
 * @param frequencyPrecision mean precision@k of the frequency-only baseline
 * @param randomPrecision    precision@k of a uniform random guess, {@code k / experts}
 * @param predictions        token-layer predictions counted
 */
public record PredictionQuality(double precision, double frequencyPrecision, double randomPrecision, long predictions) {

    /** Runs the prequential evaluation over {@code records} with a fresh predictor of the given settings. */
    public static PredictionQuality evaluate(RoutingTraceHeader header, Iterable<? extends RoutingRecord> records,
                                             int maxDistance, double distanceDecay, int warmupSteps) {
        CoActivationPredictor p = new CoActivationPredictor(header, maxDistance, distanceDecay);
        int k = header.topK();
        int[] predicted = new int[k];
        double[] scratch = new double[header.experts()];
        boolean[] actual = new boolean[header.experts()];
        double hits = 0;
        double freqHits = 0;
        long predictions = 0;
        long steps = 0;
        for (RoutingRecord r : records) {
            if (!(r instanceof RoutingStep step)) {
                continue;
            }
            if (steps++ >= warmupSteps) {
                int[][] byFrequency = new int[header.layers()][k];
                for (int m = 1; m < header.layers(); m++) {
                    p.predictByFrequency(m, k, byFrequency[m]);
                }
                for (int t = 0; t < step.tokens(); t++) {
                    for (int m = 1; m < header.layers(); m++) {
                        for (int s = 0; s < k; s++) {
                            actual[step.expert(m, t, s)] = true;
                        }
                        p.predict(step, t, m, k, predicted, scratch);
                        for (int s = 0; s < k; s++) {
                            hits += actual[predicted[s]] ? 1 : 0;
                            freqHits += actual[byFrequency[m][s]] ? 1 : 0;
                        }
                        for (int s = 0; s < k; s++) {
                            actual[step.expert(m, t, s)] = false;
                        }
                        predictions++;
                    }
                }
            }
            p.observe(step);
        }
        double denominator = Math.max(1, predictions) * (double) k;
        return new PredictionQuality(hits / denominator, freqHits / denominator, (double) k / header.experts(), predictions);
    }
}
