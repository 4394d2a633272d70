package dev.strata.bench.route;

import dev.strata.analysis.kvsim.PrefixTrace;
import dev.strata.analysis.kvsim.SyntheticPrefixTraceGenerator.Knobs;
import dev.strata.analysis.kvsim.SyntheticPrefixTraceGenerator;
import dev.strata.bench.Figure;
import dev.strata.node.route.LeastLoadedRouter;
import dev.strata.node.route.PrefixAffinityRouter;
import dev.strata.node.route.Router;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the shared pool buys a cache-oblivious router, by modelled trace replay
 * ({@link RoutingReplay}, {@link RoutingModel#defaults()}): four arms on the same trace, the
 * cache-aware router without a pool (what a cluster without a pool must do) as the baseline.
 *
 * <p>Arms ({@link Arm}): {@code cache_aware_no_pool} ({@link PrefixAffinityRouter}, load cap
 * 1.5 × mean + 16k tokens, each instance only its own cache), {@code load_only_no_pool}
 * ({@link LeastLoadedRouter} EXACT, no pool), {@code load_only_with_pool} (EXACT, with the shared
 * pool) and {@code cache_aware_with_pool}.
 *
 * <p>Figures, per trace ({@code <trace>} is {@code mooncake} or {@code synthetic}); every value is
 * modelled, every baseline is the {@code cache_aware_no_pool} arm of the same run:
 * <ul>
 *   <li>{@code <trace>_routing_p99_ttft_<arm>}: p99 TTFT in modelled seconds; goal ratio ≤ 1.0
 *       for {@code load_only_with_pool}, information for the others;</li>
 *   <li>{@code <trace>_routing_mean_ttft_load_only_with_pool}: mean TTFT, goal ratio ≤ 1.0;</li>
 *   <li>{@code <trace>_routing_hit_ratio_<arm>}: share of prompt blocks not recomputed (local or
 *       pool); goal ratio ≥ 1.0 for {@code load_only_with_pool}, information for the others;</li>
 *   <li>{@code <trace>_routing_load_imbalance_<arm>}: max over mean busy time of the instances;
 *       goal ratio ≤ 1.0 for {@code load_only_with_pool}, information for the others.</li>
 * </ul>
 * A note per arm gives the local / pool / recompute split, the imbalance and the TTFTs.
 * Load-only routing breaks ties at random, so the figures vary slightly from run to run.
 *
 * <p>Stateless; any thread.
 */
public final class RoutingReplayMeasure {
    /** The four compared arms; the first is the baseline. */
    public enum Arm {
        CACHE_AWARE_NO_POOL(true, false),
        LOAD_ONLY_NO_POOL(false, false),
        LOAD_ONLY_WITH_POOL(false, true),
        CACHE_AWARE_WITH_POOL(true, true);

        private final boolean cacheAware;
        private final boolean pool;

        Arm(boolean cacheAware, boolean pool) {
            this.cacheAware = cacheAware;
            this.pool = pool;
        }

        /** The arm's name in figures, e.g. {@code load_only_with_pool}. */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** The model of this arm: {@code base} with its pool, or without one. */
        public RoutingModel model(RoutingModel base) {
            return pool ? base : base.withPool(0);
        }

        /** A fresh router of this arm for {@code model}. */
        public Router router(RoutingModel model) {
            return cacheAware
                    ? new PrefixAffinityRouter(model.instances(), (int) Math.min(Integer.MAX_VALUE, model.deviceBlocks()),
                            model.affinityCapFactor(), model.affinityCapSlackTokens())
                    : new LeastLoadedRouter(LeastLoadedRouter.Mode.EXACT);
        }
    }

    /** Requests of the generated trace (quick mode: {@link #QUICK_SYNTHETIC_REQUESTS}). */
    public static final int SYNTHETIC_REQUESTS = 12_000;
    /** Requests of the generated trace in quick mode. */
    public static final int QUICK_SYNTHETIC_REQUESTS = 600;
    /** Mean gap between generated requests, ms: the chat knobs at a rate that loads the default cluster. */
    public static final double SYNTHETIC_INTER_ARRIVAL_MS = 100;

    private RoutingReplayMeasure() {
    }

    /** {@link #figures(Path, List, boolean)}, full size. */
    public static List<Figure> figures(Path traceOrNull, List<String> notes) {
        return figures(traceOrNull, notes, false);
    }

    /**
     * The four arms on the Mooncake-format trace {@code traceOrNull} (skipped, with a note, when
     * null) and on a generated chat trace (seed 1; {@link #QUICK_SYNTHETIC_REQUESTS} requests in
     * quick mode).
     */
    public static List<Figure> figures(Path traceOrNull, List<String> notes, boolean quick) {
        List<Figure> out = new ArrayList<>();
        RoutingModel model = RoutingModel.defaults();
        if (traceOrNull != null) {
            out.addAll(figures(PrefixTrace.read(traceOrNull, model.blockTokens()), "mooncake", model, notes));
        } else {
            notes.add("routing replay: no Mooncake trace given; only the generated trace was replayed");
        }
        out.addAll(figures(syntheticTrace(quick ? QUICK_SYNTHETIC_REQUESTS : SYNTHETIC_REQUESTS), "synthetic", model, notes));
        return out;
    }

    /** The generated chat trace: {@link Knobs#chat} with {@link #SYNTHETIC_INTER_ARRIVAL_MS}, seed 1. */
    public static PrefixTrace syntheticTrace(int requests) {
        Knobs c = Knobs.chat(requests);
        Knobs k = new Knobs(c.requests(), c.blockTokens(), c.systemPrompts(), c.zipfExponent(), c.systemTokensMin(),
                c.systemTokensMax(), c.newConversationShare(), c.meanTurns(), c.userTokensMin(), c.userTokensMax(),
                c.outputTokensMin(), c.outputTokensMax(), c.documentShare(), c.documentTokensMin(), c.documentTokensMax(),
                c.maxContextTokens(), SYNTHETIC_INTER_ARRIVAL_MS);
        return PrefixTrace.of(SyntheticPrefixTraceGenerator.generate(k, 1));
    }

    /** Replays every arm on {@code trace}. */
    public static Map<Arm, RoutingResult> replayArms(PrefixTrace trace, RoutingModel model) {
        Map<Arm, RoutingResult> results = new EnumMap<>(Arm.class);
        for (Arm arm : Arm.values()) {
            RoutingModel m = arm.model(model);
            results.put(arm, RoutingReplay.replay(trace, m, arm.router(m), false));
        }
        return results;
    }

    /** Figures for one trace, named {@code <label>_routing_...}; one note per arm. */
    public static List<Figure> figures(PrefixTrace trace, String label, RoutingModel model, List<String> notes) {
        Map<Arm, RoutingResult> results = replayArms(trace, model);
        RoutingResult base = results.get(Arm.CACHE_AWARE_NO_POOL);
        String baseline = "cache-aware routing without a pool (modelled)";
        List<Figure> out = new ArrayList<>();
        for (Arm arm : Arm.values()) {
            RoutingResult r = results.get(arm);
            boolean judged = arm == Arm.LOAD_ONLY_WITH_POOL;
            String prefix = label + "_routing_";
            out.add(Figure.exact(prefix + "p99_ttft_" + arm.label(), r.p99Ttft(), "s", baseline, base.p99Ttft(),
                    judged ? "<= 1.0" : ">= 0").withNote(judged ? "modelled; goal: load-only routing over the pool no slower at p99"
                    : "modelled; information"));
            if (judged) {
                out.add(Figure.exact(prefix + "mean_ttft_" + arm.label(), r.meanTtft(), "s", baseline, base.meanTtft(), "<= 1.0")
                        .withNote("modelled; goal: load-only routing over the pool no slower on average"));
            }
            out.add(Figure.exact(prefix + "hit_ratio_" + arm.label(), r.hitRatio(), "", baseline, base.hitRatio(),
                    judged ? ">= 1.0" : ">= 0").withNote(String.format(Locale.ROOT,
                    "modelled; local %.4f, pool %.4f, recompute %.4f%s", r.localHitRatio(), r.poolHitRatio(),
                    r.recomputeRatio(), judged ? "; goal: the pool recovers what affinity kept local" : "")));
            out.add(Figure.exact(prefix + "load_imbalance_" + arm.label(), r.loadImbalance(), "", baseline, base.loadImbalance(),
                    judged ? "<= 1.0" : ">= 0").withNote("modelled; max over mean busy time" + (judged ? "; goal: no worse balance" : "")));
            notes.add(String.format(Locale.ROOT,
                    "routing replay (modelled) %s %s: local %.4f pool %.4f recompute %.4f, imbalance %.3f, TTFT mean %.3f s p99 %.3f s",
                    label, arm.label(), r.localHitRatio(), r.poolHitRatio(), r.recomputeRatio(), r.loadImbalance(),
                    r.meanTtft(), r.p99Ttft()));
        }
        return out;
    }

    /** Prints the table of every arm: {@code RoutingReplayMeasure [mooncake.jsonl]}. */
    public static void main(String[] args) {
        List<String> notes = new ArrayList<>();
        List<Figure> figures = figures(args.length > 0 ? Path.of(args[0]) : null, notes, false);
        notes.forEach(System.out::println);
        for (Figure f : figures) {
            System.out.printf(Locale.ROOT, "%-52s %10.4f %-2s base %10.4f ratio %.3f goal %-7s %s%n", f.name(), f.value(), f.unit(),
                    f.baselineValue(), f.ratio(), f.goal(), f.met() ? "met" : "NOT MET");
        }
    }
}
