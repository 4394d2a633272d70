package dev.strata.bench.engine;

import dev.strata.engine.forward.RoutingObserver;
import java.util.Arrays;

/**
 * Measures routing turnover on decode steps: for each MoE layer, the share of the experts routed
 * at one decode step that were not routed at the previous decode step of the same sequence. A
 * turnover of 0 routes the same experts step after step (every one a pager hit after the first);
 * 1 routes a disjoint set every step.
 *
 * <p>Counts only while {@linkplain #counting counting} is on (the decode steps of one sequence,
 * one token per call); {@link #newSequence} forgets the previous step, so that the first step of
 * a sequence is compared with nothing. Only the first token of a forward call is looked at.
 *
 * <p>Called on the runner's driving thread (a {@link RoutingObserver}); read the result on that
 * thread, or after the decoding finished.
 */
public final class RoutingTurnover implements RoutingObserver {
    private final int[][] previous; // [moeLayer][topK] sorted expert ids of the previous decode step; null row: none yet
    private boolean counting;
    private long changed; // experts routed but not routed at the layer's previous step, summed
    private long compared; // experts compared (topK per layer and step after a sequence's first step)

    /** @param layers MoE layers of the model */
    public RoutingTurnover(int layers) {
        if (layers < 1) {
            throw new IllegalArgumentException("routing turnover needs at least one MoE layer, got " + layers);
        }
        previous = new int[layers][];
    }

    /** Starts or stops counting (on for decode steps, off for a prefill). */
    public void counting(boolean on) {
        counting = on;
    }

    /** Forgets the previous step: the next counted step starts a new sequence. */
    public void newSequence() {
        Arrays.fill(previous, null);
    }

    @Override
    public void routed(int moeLayer, int token, int[] topK) {
        if (!counting || token != 0) {
            return;
        }
        int[] now = topK.clone();
        Arrays.sort(now);
        int[] before = previous[moeLayer];
        if (before != null) {
            for (int e : now) {
                if (Arrays.binarySearch(before, e) < 0) {
                    changed++;
                }
            }
            compared += now.length;
        }
        previous[moeLayer] = now;
    }

    /** The share of routed experts that changed since the previous decode step, over everything counted; NaN before any. */
    public double turnover() {
        return compared == 0 ? Double.NaN : changed / (double) compared;
    }

    /** Experts compared so far. */
    public long compared() {
        return compared;
    }

    /** Forgets every count and the previous step. */
    public void reset() {
        changed = 0;
        compared = 0;
        newSequence();
    }
}
