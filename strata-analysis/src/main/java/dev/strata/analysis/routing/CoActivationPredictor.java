package dev.strata.analysis.routing;

import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceHeader;
import java.util.Arrays;

/**
 * Predicts the experts a token will use at a later MoE layer from the experts it already used at
 * earlier layers of the same forward pass, and estimates the support of a workload's working set.
 *
 * <p>Design. An online table counts, for every source layer {@code l}, every target layer
 * {@code m} with {@code l < m <= l + maxDistance}, and every pair of experts, how many tokens
 * routed to expert {@code i} at {@code l} and to expert {@code j} at {@code m}; a second table
 * counts how many tokens routed to {@code i} at {@code l} (the source marginal). Their quotient is
 * the conditional co-activation probability {@code P(j at m | i at l)}. A candidate {@code j} for
 * target {@code m} scores {@code sum over l in [m - maxDistance, m - 1] of
 * distanceDecay^(m - l - 1) * sum over the experts i the token used at l of P(j at m | i at l)}:
 * nearer source layers weigh more. The highest scores are the prediction. No gradients, no
 * calibration: the table starts empty and learns from every step it {@link #observe}s; ties and
 * an empty table fall back to the lowest ids.
 *
 * <p>Right-sizing: the marginal counts say how concentrated each layer's routing is;
 * {@link #supportCap} is the smallest per-layer cap whose most frequent experts cover a given
 * fraction of the layer's routed mass (for example 0.99): the support of the converged working
 * set, which bounds the expert cap a near-lossless cache needs. {@link #halve} ages the counts so
 * the estimate follows a workload that moves.
 *
 * <p>Memory: {@code layers × maxDistance × experts²} int counters (a 48-layer, 128-expert model
 * with distance 2: 6.3 MB). Confined to one thread.
 */
public final class CoActivationPredictor {
    /** Largest table accepted: 2^28 counters (1 GiB). */
    public static final long MAX_COUNTERS = 1L << 28;

    private final int layers;
    private final int experts;
    private final int topK;
    private final int maxDistance; // target layers per source layer
    private final double distanceDecay; // weight factor per extra layer of distance, in (0, 1]
    private final int[] pairs; // [source layer][distance - 1][source expert][target expert]
    private final int[] marginal; // [layer][expert] tokens routed to the expert at the layer
    private long tokens; // tokens observed
    private final double[] weights; // [distance - 1] distanceDecay^(distance - 1)

    /**
     * @param maxDistance   how many later layers each layer predicts, at least 1
     * @param distanceDecay weight kept per extra layer of distance, in (0, 1]
     */
    public CoActivationPredictor(RoutingTraceHeader header, int maxDistance, double distanceDecay) {
        if (maxDistance < 1) {
            throw new IllegalArgumentException("maxDistance must be at least 1, got " + maxDistance);
        }
        if (!(distanceDecay > 0 && distanceDecay <= 1)) {
            throw new IllegalArgumentException("distanceDecay must be in (0, 1], got " + distanceDecay);
        }
        this.layers = header.layers();
        this.experts = header.experts();
        this.topK = header.topK();
        this.maxDistance = Math.min(maxDistance, Math.max(1, layers - 1));
        long counters = (long) layers * this.maxDistance * experts * experts;
        if (counters > MAX_COUNTERS) {
            throw new IllegalArgumentException("a co-activation table of " + layers + " layers × distance " + this.maxDistance
                    + " × " + experts + "² experts needs " + counters + " counters, more than " + MAX_COUNTERS
                    + "; lower maxDistance");
        }
        this.distanceDecay = distanceDecay;
        this.pairs = new int[(int) counters];
        this.marginal = new int[layers * experts];
        this.weights = new double[this.maxDistance];
        for (int d = 0; d < weights.length; d++) {
            weights[d] = Math.pow(distanceDecay, d);
        }
    }

    private int pairBase(int source, int distance, int sourceExpert) {
        return ((source * maxDistance + distance - 1) * experts + sourceExpert) * experts;
    }

    /** Learns from every token of {@code step}. */
    public void observe(RoutingStep step) {
        int n = step.tokens();
        int k = step.topK();
        for (int t = 0; t < n; t++) {
            for (int l = 0; l < layers; l++) {
                for (int s = 0; s < k; s++) {
                    int i = step.expert(l, t, s);
                    marginal[l * experts + i]++;
                    int last = Math.min(layers - 1, l + maxDistance);
                    for (int m = l + 1; m <= last; m++) {
                        int base = pairBase(l, m - l, i);
                        for (int u = 0; u < k; u++) {
                            pairs[base + step.expert(m, t, u)]++;
                        }
                    }
                }
            }
        }
        tokens += n;
    }

    /**
     * Scores every expert of layer {@code target} for token {@code token} of {@code step}, from
     * the experts that token used at the layers before {@code target}; writes {@code experts}
     * scores into {@code out}.
     */
    public void scores(RoutingStep step, int token, int target, double[] out) {
        Arrays.fill(out, 0, experts, 0);
        int first = Math.max(0, target - maxDistance);
        for (int l = first; l < target; l++) {
            int distance = target - l;
            double w = weights[distance - 1];
            for (int s = 0; s < step.topK(); s++) {
                int i = step.expert(l, token, s);
                int seen = marginal[l * experts + i];
                if (seen == 0) {
                    continue;
                }
                double f = w / seen;
                int base = pairBase(l, distance, i);
                for (int j = 0; j < experts; j++) {
                    int c = pairs[base + j];
                    if (c != 0) {
                        out[j] += c * f;
                    }
                }
            }
        }
    }

    /**
     * The {@code n} experts of layer {@code target} most likely for token {@code token} of
     * {@code step}, best first, into {@code out}; {@code scratch} holds {@code experts} doubles.
     */
    public void predict(RoutingStep step, int token, int target, int n, int[] out, double[] scratch) {
        scores(step, token, target, scratch);
        topN(scratch, experts, n, out);
    }

    /** The {@code n} experts most often routed to at {@code layer} so far (the frequency-only prediction). */
    public void predictByFrequency(int layer, int n, int[] out) {
        double[] f = new double[experts];
        for (int j = 0; j < experts; j++) {
            f[j] = marginal[layer * experts + j];
        }
        topN(f, experts, n, out);
    }

    /** Tokens routed to {@code expert} at {@code layer} (after halvings). */
    public int marginal(int layer, int expert) {
        return marginal[layer * experts + expert];
    }

    /** Tokens observed (not halved). */
    public long tokens() {
        return tokens;
    }

    /**
     * The smallest cap for {@code layer} whose most-used experts cover at least {@code massFraction}
     * of the routed mass seen there: the support of the layer's working set. 0 before any token.
     */
    public int supportCap(int layer, double massFraction) {
        if (!(massFraction > 0 && massFraction <= 1)) {
            throw new IllegalArgumentException("massFraction must be in (0, 1], got " + massFraction);
        }
        int[] counts = Arrays.copyOfRange(marginal, layer * experts, (layer + 1) * experts);
        long total = 0;
        for (int c : counts) {
            total += c;
        }
        if (total == 0) {
            return 0;
        }
        Arrays.sort(counts);
        long covered = 0;
        int cap = 0;
        for (int j = experts - 1; j >= 0 && covered < massFraction * total; j--) {
            covered += counts[j];
            cap++;
        }
        return Math.max(cap, topK);
    }

    /** {@link #supportCap} of every layer. */
    public int[] supportCaps(double massFraction) {
        int[] caps = new int[layers];
        for (int l = 0; l < layers; l++) {
            caps[l] = supportCap(l, massFraction);
        }
        return caps;
    }

    /** Halves every count: older routing weighs half as much as what follows. */
    public void halve() {
        for (int i = 0; i < pairs.length; i++) {
            pairs[i] >>>= 1;
        }
        for (int i = 0; i < marginal.length; i++) {
            marginal[i] >>>= 1;
        }
    }

    /** Layers each source layer predicts. */
    public int maxDistance() {
        return maxDistance;
    }

    /** Weight factor per extra layer of distance. */
    public double distanceDecay() {
        return distanceDecay;
    }

    /** Indices of the {@code n} largest of {@code values[0..size)}, largest first, ties to the lower index. */
    static void topN(double[] values, int size, int n, int[] out) {
        int m = Math.min(n, size);
        int filled = 0;
        for (int j = 0; j < size; j++) {
            double v = values[j];
            if (filled == m && !(v > values[out[m - 1]])) {
                continue;
            }
            int at = filled < m ? filled++ : m - 1;
            while (at > 0 && v > values[out[at - 1]]) {
                out[at] = out[at - 1];
                at--;
            }
            out[at] = j;
        }
    }
}
