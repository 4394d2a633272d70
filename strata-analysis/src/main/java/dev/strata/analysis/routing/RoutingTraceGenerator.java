package dev.strata.analysis.routing;

import dev.strata.cache.routing.BurstStart;
import dev.strata.cache.routing.RequestStart;
import dev.strata.cache.routing.RoutingPhase;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceHeader;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.SplittableRandom;

/**
 * Generates a synthetic routing trace for a {@link RoutingWorkload}: request and burst markers and
 * one step per forward pass, lazily, so traces of any length stream into a writer. Deterministic:
 * the same workload (seed included) gives the same records.
 *
 * <p>The model of a token's routing. Each layer ranks its experts by popularity (a seeded
 * permutation) and draws ranks from a Zipf law with the layer's own exponent. A token follows a
 * hidden path through the layers: it starts on a path drawn from its session's path preferences
 * (a Zipf law over a per-session order of the paths, so sessions differ) and keeps it from one
 * layer to the next with probability {@code pathStickiness}, else jumps to another draw. Each of
 * the token's {@code topK} choices at a layer comes, in turn:
 * <ul>
 *   <li>with probability {@code coupling}, from the (layer, path) set: experts of layer
 *       {@code l + 1} correlate with those of layer {@code l} through the path;</li>
 *   <li>else with probability {@code burstLocality}, from the burst-local set, drawn from the
 *       layer's popularity when the burst starts: temporal locality;</li>
 *   <li>else from the layer's popularity.</li>
 * </ul>
 * The popularity law reaches only the {@code support} fraction of a layer's experts at the top of
 * its order (path sets are drawn from them too), so a session's footprint saturates below the
 * pool. Choices already taken by the token at that layer are drawn again. Drift moves the popularity
 * order: {@code ABRUPT} re-draws every layer's order every {@code driftPeriod} steps (a topic
 * change), {@code GRADUAL} swaps a popular rank with a random one {@code driftRate} times per
 * layer per step.
 *
 * <p>Sessions run one after another; each request is a prefill step ({@code prefillTokens}
 * tokens, one burst) followed by {@code decodeSteps} single-token decode steps, in bursts of
 * {@code burstSteps}. Confined to one thread.
 */
public final class RoutingTraceGenerator implements Iterator<RoutingRecord> {
    private static final int MAX_REDRAWS = 256;

    private final RoutingWorkload w;
    private final RoutingTraceHeader header;
    private final SplittableRandom random;
    private final double[][] zipf; // [layer][rank] cumulative weights of the layer's popularity law
    private final int[][] order; // [layer][rank] expert at each popularity rank
    private final int[][][] pathSets; // [layer][path][pathSetSize] experts
    private final int[][] burstSets; // [layer][burstSetSize] experts of the current burst
    private final double[] pathCdf; // [paths] cumulative Zipf(1) weights over a session's path order
    private final int[] sessionPaths; // [paths] the current session's order of paths
    private final double[] layerExponent; // [layer]
    private final int reach; // popularity ranks a layer routes to: ceil(support × experts)
    private final ArrayDeque<RoutingRecord> pending = new ArrayDeque<>();
    private final int[] route; // [layers × topK] one token's choices
    private int session;
    private int request;
    private long steps;

    public RoutingTraceGenerator(RoutingWorkload workload) {
        this.w = workload;
        this.header = workload.header();
        this.random = new SplittableRandom(workload.seed());
        int layers = w.layers();
        int experts = w.experts();
        layerExponent = new double[layers];
        int[] spreadOrder = permutation(layers);
        for (int l = 0; l < layers; l++) {
            double u = layers == 1 ? 0 : -1 + 2.0 * spreadOrder[l] / (layers - 1);
            layerExponent[l] = Math.max(0, w.skew() * (1 + w.skewSpread() * u));
        }
        reach = (int) Math.ceil(w.support() * experts);
        zipf = new double[layers][];
        order = new int[layers][];
        for (int l = 0; l < layers; l++) {
            zipf[l] = cumulativeZipf(reach, layerExponent[l]);
            order[l] = permutation(experts);
        }
        pathSets = new int[layers][w.paths()][];
        for (int l = 0; l < layers; l++) {
            for (int p = 0; p < w.paths(); p++) {
                int[] perm = permutation(reach);
                int[] set = new int[Math.min(w.pathSetSize(), reach)];
                for (int i = 0; i < set.length; i++) {
                    set[i] = order[l][perm[i]];
                }
                pathSets[l][p] = set;
            }
        }
        burstSets = new int[layers][w.burstSetSize()];
        pathCdf = cumulativeZipf(w.paths(), 1.0);
        sessionPaths = permutation(w.paths());
        route = new int[layers * w.topK()];
    }

    /** The header of the generated trace. */
    public RoutingTraceHeader header() {
        return header;
    }

    /** The Zipf exponent of {@code layer}'s popularity. */
    public double layerExponent(int layer) {
        return layerExponent[layer];
    }

    @Override
    public boolean hasNext() {
        if (pending.isEmpty() && session < w.sessions()) {
            generateRequest();
        }
        return !pending.isEmpty();
    }

    @Override
    public RoutingRecord next() {
        if (!hasNext()) {
            throw new NoSuchElementException("the workload's " + w.totalSteps() + " steps have been generated");
        }
        return pending.poll();
    }

    private void generateRequest() {
        if (request == 0) {
            // a new session: its own preferences over the paths
            int[] perm = permutation(w.paths());
            System.arraycopy(perm, 0, sessionPaths, 0, perm.length);
        }
        pending.add(new RequestStart(session, (long) session * w.requests() + request));
        if (w.prefillTokens() > 0) {
            startBurst();
            pending.add(step(RoutingPhase.PREFILL, w.prefillTokens()));
        }
        for (int s = 0; s < w.decodeSteps(); s++) {
            if (s % w.burstSteps() == 0) {
                startBurst();
            }
            pending.add(step(RoutingPhase.DECODE, 1));
        }
        if (++request == w.requests()) {
            request = 0;
            session++;
        }
    }

    private void startBurst() {
        pending.add(BurstStart.INSTANCE);
        for (int l = 0; l < w.layers(); l++) {
            int[] set = burstSets[l];
            for (int i = 0; i < set.length; i++) {
                int e;
                int tries = 0;
                do {
                    e = order[l][tries++ < MAX_REDRAWS ? rank(l) : random.nextInt(reach)];
                } while (contains(set, i, e));
                set[i] = e;
            }
        }
    }

    private RoutingStep step(RoutingPhase phase, int tokens) {
        drift();
        int layers = w.layers();
        int k = w.topK();
        int[] ids = new int[layers * tokens * k];
        for (int t = 0; t < tokens; t++) {
            routeToken();
            for (int l = 0; l < layers; l++) {
                System.arraycopy(route, l * k, ids, (l * tokens + t) * k, k);
            }
        }
        steps++;
        return RoutingStep.of(header, phase, tokens, ids);
    }

    private void routeToken() {
        int k = w.topK();
        int path = drawPath();
        for (int l = 0; l < w.layers(); l++) {
            if (l > 0 && random.nextDouble() >= w.pathStickiness()) {
                path = drawPath();
            }
            int base = l * k;
            for (int s = 0; s < k; s++) {
                int e;
                int tries = 0;
                do {
                    e = tries++ < MAX_REDRAWS ? choose(l, path) : order[l][random.nextInt(reach)];
                } while (containsRange(route, base, base + s, e));
                route[base + s] = e;
            }
        }
    }

    private int choose(int layer, int path) {
        double u = random.nextDouble();
        if (u < w.coupling()) {
            int[] set = pathSets[layer][path];
            return set[random.nextInt(set.length)];
        }
        if (random.nextDouble() < w.burstLocality()) {
            int[] set = burstSets[layer];
            return set[random.nextInt(set.length)];
        }
        return order[layer][rank(layer)];
    }

    private int drawPath() {
        return sessionPaths[search(pathCdf, random.nextDouble() * pathCdf[pathCdf.length - 1])];
    }

    private int rank(int layer) {
        double[] cdf = zipf[layer];
        return search(cdf, random.nextDouble() * cdf[cdf.length - 1]);
    }

    private void drift() {
        switch (w.drift()) {
            case NONE -> {
            }
            case ABRUPT -> {
                if (steps > 0 && steps % w.driftPeriod() == 0) {
                    for (int l = 0; l < w.layers(); l++) {
                        order[l] = permutation(w.experts());
                    }
                }
            }
            case GRADUAL -> {
                for (int l = 0; l < w.layers(); l++) {
                    double swaps = w.driftRate();
                    int n = (int) swaps + (random.nextDouble() < swaps - Math.floor(swaps) ? 1 : 0);
                    for (int i = 0; i < n; i++) {
                        int a = rank(l);
                        int b = random.nextInt(w.experts());
                        int tmp = order[l][a];
                        order[l][a] = order[l][b];
                        order[l][b] = tmp;
                    }
                }
            }
        }
    }

    private int[] permutation(int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int tmp = p[i];
            p[i] = p[j];
            p[j] = tmp;
        }
        return p;
    }

    /** Cumulative weights {@code 1 / (rank + 1)^exponent}. */
    static double[] cumulativeZipf(int n, double exponent) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += Math.pow(i + 1, -exponent);
            cdf[i] = sum;
        }
        return cdf;
    }

    /** The first index whose cumulative weight exceeds {@code u}. */
    private static int search(double[] cdf, double u) {
        int lo = 0;
        int hi = cdf.length - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (cdf[mid] > u) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }

    private static boolean contains(int[] a, int n, int v) {
        return containsRange(a, 0, n, v);
    }

    private static boolean containsRange(int[] a, int from, int to, int v) {
        for (int i = from; i < to; i++) {
            if (a[i] == v) {
                return true;
            }
        }
        return false;
    }
}
