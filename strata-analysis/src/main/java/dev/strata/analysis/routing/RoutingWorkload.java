package dev.strata.analysis.routing;

import dev.strata.cache.routing.RoutingTraceHeader;
import java.util.Locale;

/**
 * The knobs of a synthetic routing workload ({@link RoutingTraceGenerator}). Defaults describe a
 * Qwen3-30B-A3B-like model (48 MoE layers, 128 experts, top-8) serving a few multi-turn sessions
 * one at a time: every layer's popularity is Zipf-skewed, decode bursts reuse a small burst-local
 * set, and a hidden path per token couples the layers. Immutable; any thread. The defaults are a
 * plausible shape, not a fit to measured traces: tune the knobs to a recorded trace's
 * {@code strata trace stats}.
 *
 * @param layers           MoE layers
 * @param experts          experts per layer
 * @param topK             experts per token per layer
 * @param model            the model name written into the trace header
 * @param seed             the only source of randomness: equal settings and seed give equal traces
 * @param sessions         sessions, run one after another
 * @param requests         requests (turns) per session
 * @param prefillTokens    tokens of each request's prefill step; 0 for no prefill step
 * @param decodeSteps      decode steps per request (one token each)
 * @param burstSteps       decode steps per burst; a burst starts at every request and every {@code burstSteps} steps
 * @param skew             mean Zipf exponent of the layers' popularity (0: uniform)
 * @param skewSpread       per-layer spread of the exponent: layer {@code l} gets
 *                         {@code skew × (1 + skewSpread × u_l)} with {@code u_l} spread evenly over
 *                         [-1, 1] in a seeded order, so some layers are much more skewed than others
 * @param support          fraction of each layer's experts its popularity law and path sets reach (the rest are
 *                         never routed to while the order holds): a session's footprint saturates below the
 *                         whole pool, as measured on real traces
 * @param burstLocality    probability that a choice comes from the burst-local set (0: no temporal locality)
 * @param burstSetSize     experts per layer in a burst-local set, drawn from the layer's popularity at burst start
 * @param drift            how the popular set moves: {@link Drift#NONE}, {@link Drift#ABRUPT}, {@link Drift#GRADUAL}
 * @param driftPeriod      ABRUPT: steps between topic changes (each re-draws every layer's popularity order)
 * @param driftRate        GRADUAL: swaps of a popular rank with a random rank per layer per step
 * @param paths            hidden paths (topics of a token's route through the layers)
 * @param coupling         probability that a choice comes from the token's path set at that layer
 *                         (0: no co-activation structure)
 * @param pathSetSize      experts per (layer, path) set
 * @param pathStickiness   probability that a token keeps its path from one layer to the next
 */
public record RoutingWorkload(
        int layers, int experts, int topK, String model, long seed,
        int sessions, int requests, int prefillTokens, int decodeSteps, int burstSteps,
        double skew, double skewSpread, double support, double burstLocality, int burstSetSize,
        Drift drift, int driftPeriod, double driftRate,
        int paths, double coupling, int pathSetSize, double pathStickiness) {

    /** How the popular experts move over time. */
    public enum Drift { NONE, ABRUPT, GRADUAL }

    /** The defaults (see the class comment). */
    public static RoutingWorkload defaults() {
        return new RoutingWorkload(48, 128, 8, "synthetic-48x128-top8", 1,
                4, 4, 32, 256, 32,
                1.0, 0.5, 0.75, 0.8, 16,
                Drift.NONE, 4096, 0.01,
                16, 0.35, 8, 0.85);
    }

    /** @throws IllegalArgumentException naming the first knob out of range and its value */
    public RoutingWorkload {
        new RoutingTraceHeader(layers, experts, topK, model); // checks layers, experts, top-k, model
        positive("sessions", sessions);
        positive("requests", requests);
        atLeast("prefill-tokens", prefillTokens, 0);
        atLeast("decode-steps", decodeSteps, 0);
        if (prefillTokens == 0 && decodeSteps == 0) {
            throw new IllegalArgumentException("a request needs prefill tokens or decode steps (both are 0)");
        }
        positive("burst-steps", burstSteps);
        range("skew", skew, 0, 8);
        range("skew-spread", skewSpread, 0, 1);
        if (!(support > 0 && support <= 1) || Math.ceil(support * experts) < topK) {
            throw new IllegalArgumentException("support must be in (0, 1] and reach at least top-k (" + topK + ") experts, got "
                    + support);
        }
        range("burst-locality", burstLocality, 0, 1);
        if (burstSetSize < topK || burstSetSize > experts) {
            throw new IllegalArgumentException("burst-set must be in top-k.." + experts + " (" + topK + ".." + experts
                    + "), got " + burstSetSize);
        }
        if (burstSetSize > Math.ceil(support * experts)) {
            throw new IllegalArgumentException("burst-set (" + burstSetSize + ") must not exceed the experts the support reaches ("
                    + (int) Math.ceil(support * experts) + ")");
        }
        if (drift == null) {
            throw new IllegalArgumentException("drift must be none, abrupt or gradual");
        }
        positive("drift-period", driftPeriod);
        range("drift-rate", driftRate, 0, experts);
        positive("paths", paths);
        range("coupling", coupling, 0, 1);
        if (pathSetSize < topK || pathSetSize > experts) {
            throw new IllegalArgumentException("path-set must be in " + topK + ".." + experts + ", got " + pathSetSize);
        }
        range("path-stickiness", pathStickiness, 0, 1);
    }

    /** The header of traces of this workload. */
    public RoutingTraceHeader header() {
        return new RoutingTraceHeader(layers, experts, topK, model);
    }

    /** Steps the workload generates. */
    public long totalSteps() {
        return (long) sessions * requests * ((prefillTokens > 0 ? 1 : 0) + decodeSteps);
    }

    /** Shorthand for the record's wither-style copies used by tests and the CLI. */
    public RoutingWorkload withSeed(long s) {
        return new RoutingWorkload(layers, experts, topK, model, s, sessions, requests, prefillTokens, decodeSteps, burstSteps,
                skew, skewSpread, support, burstLocality, burstSetSize, drift, driftPeriod, driftRate, paths, coupling, pathSetSize,
                pathStickiness);
    }

    /** This workload with another shape. */
    public RoutingWorkload withShape(int l, int e, int k) {
        return new RoutingWorkload(l, e, k, String.format(Locale.ROOT, "synthetic-%dx%d-top%d", l, e, k), seed, sessions,
                requests, prefillTokens, decodeSteps, burstSteps, skew, skewSpread, support, burstLocality,
                Math.min(e, Math.max(k, burstSetSize)), drift, driftPeriod, driftRate, paths, coupling,
                Math.min(e, Math.max(k, pathSetSize)), pathStickiness);
    }

    /** This workload with another length. */
    public RoutingWorkload withLength(int s, int r, int prefill, int decode, int burst) {
        return new RoutingWorkload(layers, experts, topK, model, seed, s, r, prefill, decode, burst, skew, skewSpread, support,
                burstLocality, burstSetSize, drift, driftPeriod, driftRate, paths, coupling, pathSetSize, pathStickiness);
    }

    /** This workload with other skew knobs. */
    public RoutingWorkload withSkew(double s, double spread) {
        return new RoutingWorkload(layers, experts, topK, model, seed, sessions, requests, prefillTokens, decodeSteps,
                burstSteps, s, spread, support, burstLocality, burstSetSize, drift, driftPeriod, driftRate, paths, coupling,
                pathSetSize, pathStickiness);
    }

    /** This workload with another support fraction. */
    public RoutingWorkload withSupport(double fraction) {
        return new RoutingWorkload(layers, experts, topK, model, seed, sessions, requests, prefillTokens, decodeSteps,
                burstSteps, skew, skewSpread, fraction, burstLocality, burstSetSize, drift, driftPeriod, driftRate, paths,
                coupling, pathSetSize, pathStickiness);
    }

    /** This workload with other temporal-locality knobs. */
    public RoutingWorkload withBursts(double locality, int setSize) {
        return new RoutingWorkload(layers, experts, topK, model, seed, sessions, requests, prefillTokens, decodeSteps,
                burstSteps, skew, skewSpread, support, locality, setSize, drift, driftPeriod, driftRate, paths, coupling, pathSetSize,
                pathStickiness);
    }

    /** This workload with other drift knobs. */
    public RoutingWorkload withDrift(Drift d, int period, double rate) {
        return new RoutingWorkload(layers, experts, topK, model, seed, sessions, requests, prefillTokens, decodeSteps,
                burstSteps, skew, skewSpread, support, burstLocality, burstSetSize, d, period, rate, paths, coupling, pathSetSize,
                pathStickiness);
    }

    /** This workload with other co-activation knobs. */
    public RoutingWorkload withPaths(int p, double c, int setSize, double stickiness) {
        return new RoutingWorkload(layers, experts, topK, model, seed, sessions, requests, prefillTokens, decodeSteps,
                burstSteps, skew, skewSpread, support, burstLocality, burstSetSize, drift, driftPeriod, driftRate, p, c, setSize,
                stickiness);
    }

    private static void positive(String name, long v) {
        atLeast(name, v, 1);
    }

    private static void atLeast(String name, long v, long min) {
        if (v < min) {
            throw new IllegalArgumentException(name + " must be at least " + min + ", got " + v);
        }
    }

    private static void range(String name, double v, double lo, double hi) {
        if (!(v >= lo && v <= hi)) {
            throw new IllegalArgumentException(name + " must be in [" + lo + ", " + hi + "], got " + v);
        }
    }
}
