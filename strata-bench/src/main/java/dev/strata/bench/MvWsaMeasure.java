package dev.strata.bench;

import dev.strata.analysis.routing.RoutingTraceGenerator;
import dev.strata.analysis.routing.RoutingWorkload;
import dev.strata.analysis.routing.SyntheticKvBlockStream;
import dev.strata.analysis.split.ComparisonSplits;
import dev.strata.cache.split.MissCosts;
import dev.strata.cache.split.MvWsaSolver;
import dev.strata.cache.split.Split;
import dev.strata.cache.split.SplitController;
import dev.strata.cache.split.SplitProblem;
import dev.strata.memory.Sizes;
import dev.strata.memory.log.Log;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Measures MV-WSA's split of one pageable budget between expert slots and KV blocks in trace-driven
 * simulation, against the brute-force oracle (the best static split in hindsight, every cap tried on
 * the exact LRU curves of the whole trace), the even 50–50 split and the KV-blind split
 * proportional to the expert working set (Flux-prop), on generated workloads: expert-heavy (few
 * short sessions, a wide expert hot set), KV-heavy (many long sessions, a narrow hot set),
 * shifting (KV-heavy, then expert-heavy, within one run), all 8 layers × 64 experts, top-4; and a
 * Qwen3-30B-A3B-shaped trace of the routing workload generator (48 layers × 128 experts, top-8)
 * beside synthetic multi-turn KV sessions.
 *
 * <p>All figures are simulated seconds spent on misses, with modelled costs (an expert of 9 MiB over
 * a 25 GB/s link, a 16-token KV block recomputed at 30 µs per token): ratios of policies on the
 * same trace in the same run, not measurements of hardware. MV-WSA online runs as it is deployed:
 * it starts at the split the offline configurator ({@code strata plan-split}) chose on a separate,
 * shorter trace of the same workload, and resizes at every burst end. The KV-blind and 50–50
 * baselines are sized on the measured trace itself (its exact expert working set), so they know
 * at least as much. MV-WSA online cold starts at the 50–50 split with no configuration at all, the
 * cost of learning the split from nothing ({@code mvwsa_cold_online_vs_oracle_<workload>}).
 *
 * <p>The 50–50 and KV-blind baselines are the splits as deployable ({@link ComparisonSplits}: a
 * rule's cap lowered until the KV pool holds the admission floor, as the oracle's and MV-WSA's
 * splits must); a figure's note says when the rule's own split was below the floor (it would not
 * have started) and what it would have cost as if it ran, and the table shows it as
 * {@code Flux-prop, floor ignored}.
 *
 * <p>Confined to the calling thread.
 */
public final class MvWsaMeasure {
    static final int LAYERS = 8;
    static final int EXPERTS = 64;
    static final int TOP_K = 4;
    static final long EXPERT_BYTES = 9 * Sizes.MiB; // one expert of one layer
    static final int BLOCK_TOKENS = 16;
    static final long BLOCK_BYTES = BLOCK_TOKENS * 96 * Sizes.KiB; // KV of 16 tokens over all layers
    static final double LINK_BYTES_PER_SECOND = 25e9;
    static final double RECOMPUTE_SECONDS_PER_TOKEN = 30e-6;

    /**
     * KV sessions of the Qwen3-shaped trace per routing session: the KV references are spread over
     * the routing trace's bursts, so this ratio sets the workload's mix of KV and expert traffic.
     */
    static final int KV_SESSIONS_PER_ROUTING_SESSION = 8;

    /** The table's name of MV-WSA online started cold, at the 50–50 split. */
    static final String COLD = "MV-WSA online, cold at 50-50";

    static final double DECAY = Double.parseDouble(System.getProperty("strata.mvwsa.decay", "0.97"));

    private MvWsaMeasure() {
    }

    /**
     * One workload of the measure.
     *
     * @param name        stable identifier (figure names)
     * @param budgetBytes pageable budget
     * @param trace       makes the trace for a quick or full run from a seed
     */
    record Workload(String name, long budgetBytes, TraceMaker trace) {
    }

    /** Makes a workload's trace. */
    @FunctionalInterface
    interface TraceMaker {
        SplitWorkload make(boolean quick, long seed);
    }

    /**
     * Every policy's simulated seconds on one workload.
     *
     * @param workload  the workload's name
     * @param seconds   simulated seconds on misses by policy, in table order
     * @param splits    the split of every static policy (online policies have none)
     * @param proposed  the 50–50 and Flux-prop rules' own splits, floor ignored, by policy name
     * @param floor     the admission floor in KV blocks
     */
    record Outcome(String workload, Map<String, Double> seconds, Map<String, Split> splits, Map<String, Split> proposed,
                   long floor) {
    }

    static List<Workload> workloads() {
        SplitWorkload.Profile expertHeavy = new SplitWorkload.Profile("expert-heavy", 40, 0.9, 3, 30, 2, 160, 24);
        SplitWorkload.Profile kvHeavy = new SplitWorkload.Profile("kv-heavy", 10, 0.95, 20, 80, 1, 110, 24);
        return List.of(
                new Workload("expert_heavy", 3584 * Sizes.MiB, (quick, seed) -> SplitWorkload.generate(LAYERS, EXPERTS, TOP_K,
                        quick ? 320 : 960, seed, expertHeavy)),
                new Workload("kv_heavy", 3 * Sizes.GiB, (quick, seed) -> SplitWorkload.generate(LAYERS, EXPERTS, TOP_K,
                        quick ? 320 : 960, seed, kvHeavy)),
                new Workload("shifting", 3328 * Sizes.MiB, (quick, seed) -> SplitWorkload.generate(LAYERS, EXPERTS, TOP_K,
                        quick ? 320 : 960, seed, kvHeavy, expertHeavy)),
                new Workload("qwen3_like", 20 * Sizes.GiB, MvWsaMeasure::qwen3Like));
    }

    /**
     * A Qwen3-30B-A3B-shaped trace from the routing workload generator (48 layers, 128 experts,
     * top-8, Zipf popularity, burst locality, co-activation paths, a prefill step per request)
     * beside multi-turn synthetic KV sessions, eight at a time. The KV sessions are
     * {@link #KV_SESSIONS_PER_ROUTING_SESSION} per routing session, so the quick trace (which the
     * offline configurator is also given) has the mix of the full one, only shorter.
     */
    static SplitWorkload qwen3Like(boolean quick, long seed) {
        RoutingWorkload d = RoutingWorkload.defaults();
        int sessions = quick ? 2 : 6;
        RoutingWorkload w = new RoutingWorkload(d.layers(), d.experts(), d.topK(), d.model(), seed, sessions, 4,
                d.prefillTokens(), d.decodeSteps(), d.burstSteps(), d.skew(), d.skewSpread(), d.support(), d.burstLocality(),
                d.burstSetSize(), d.drift(), d.driftPeriod(), d.driftRate(), d.paths(), d.coupling(), d.pathSetSize(),
                d.pathStickiness());
        RoutingTraceGenerator generator = new RoutingTraceGenerator(w);
        SyntheticKvBlockStream kv = new SyntheticKvBlockStream(sessions * KV_SESSIONS_PER_ROUTING_SESSION, 8, 6, 8, 200, 20,
                10, seed ^ 0x4B56);
        return SplitWorkload.fromRouting(generator.header(), generator, kv);
    }

    /** The figures, printing the table to standard output. */
    public static List<Figure> figures(boolean quick) {
        return figures(quick, System.out);
    }

    /** The figures; the table of simulated latencies goes to {@code out} (null: not printed). */
    public static List<Figure> figures(boolean quick, PrintStream out) {
        return figures(workloads(), quick, out);
    }

    /** The figures of the given workloads only ({@link #workloads} names them); the table goes to {@code out} (null: not printed). */
    static List<Figure> figures(List<Workload> workloads, boolean quick, PrintStream out) {
        List<Outcome> outcomes = new ArrayList<>();
        Progress progress = new Progress(Log.stream("bench"), workloads.size());
        for (Workload w : workloads) {
            progress.step("simulating the " + w.name().replace('_', '-') + " workload");
            outcomes.add(measure(w, quick, 0x5EED + w.name().hashCode()));
        }
        if (out != null) {
            out.print(table(outcomes));
        }
        List<Figure> figures = new ArrayList<>();
        for (Outcome o : outcomes) {
            double online = o.seconds().get("MV-WSA online");
            String oracleName = o.workload().equals("shifting") ? "global oracle (best static split in hindsight)"
                    : "oracle (best static split in hindsight)";
            figures.add(Figure.exact("mvwsa_online_vs_oracle_" + o.workload(), online, "s", oracleName,
                    o.seconds().get("oracle"), "<= 1.05").withNote(splitNote(o, "MV-WSA online")));
            figures.add(Figure.exact("mvwsa_cold_online_vs_oracle_" + o.workload(), o.seconds().get(COLD), "s", oracleName,
                    o.seconds().get("oracle"), "<= 1.05").withNote("started at the 50-50 split (cap " + o.splits().get("50-50")
                    .expertCap() + ") with no configuration, resized online"));
            figures.add(Figure.exact("mvwsa_offline_vs_oracle_" + o.workload(), o.seconds().get("MV-WSA offline"), "s",
                    oracleName, o.seconds().get("oracle"), "<= 1.05").withNote("configured on a separate, shorter trace of the same workload; "
                    + splitNote(o, "MV-WSA offline")));
            figures.add(Figure.exact("mvwsa_online_vs_fifty_fifty_" + o.workload(), online, "s", "50-50 split",
                    o.seconds().get("50-50"), "<= 1.0").withNote(splitNote(o, "50-50")));
            figures.add(Figure.exact("mvwsa_online_vs_kv_blind_" + o.workload(), online, "s",
                    "KV-blind split proportional to the expert working set (Flux-prop), as deployable",
                    o.seconds().get("Flux-prop"), "<= 1.0").withNote(splitNote(o, "Flux-prop")));
        }
        return figures;
    }

    /**
     * A policy's split; for a baseline clamped to the floor, also the rule's own split, that it
     * would not have started, and what it would have cost as if it ran.
     */
    static String splitNote(Outcome o, String policy) {
        Split s = o.splits().get(policy);
        if (s == null) {
            return "started at the offline configurator's split (cap " + o.splits().get("MV-WSA offline").expertCap()
                    + "), resized online";
        }
        String note = "cap " + s.expertCap() + ", " + s.kvBlocks() + " KV blocks";
        Split proposed = o.proposed().get(policy);
        if (proposed == null || proposed.expertCap() == s.expertCap()) {
            return note;
        }
        return note + String.format(Locale.ROOT, "; clamped to the admission floor of %d blocks: the rule's own split (cap %d,"
                + " %d KV blocks) is below it and would not start; as if it ran it would cost %.1f s (ratio %.3f)", o.floor(),
                proposed.expertCap(), proposed.kvBlocks(), proposed.predictedSeconds(),
                o.seconds().get("MV-WSA online") / proposed.predictedSeconds());
    }

    static Outcome measure(Workload w, boolean quick, long seed) {
        SplitWorkload trace = w.trace().make(quick, seed);
        MissCosts costs = MissCosts.fromPhysical(EXPERT_BYTES, LINK_BYTES_PER_SECOND, BLOCK_TOKENS,
                RECOMPUTE_SECONDS_PER_TOKEN, MissCosts.Source.GIVEN);
        long floor = trace.maxPeak(); // concurrency 1 × the longest context a burst holds
        long slotBytes = trace.layers * EXPERT_BYTES;
        SplitSimulation sim = new SplitSimulation(trace, w.budgetBytes(), slotBytes, BLOCK_BYTES, costs, floor);
        SplitProblem exact = sim.exactProblem();
        Map<String, Double> seconds = new LinkedHashMap<>();
        Map<String, Split> splits = new LinkedHashMap<>();
        Split oracle = MvWsaSolver.oracle(exact);
        seconds.put("oracle", oracle.predictedSeconds());
        splits.put("oracle", oracle);
        Split half = ComparisonSplits.fiftyFifty(exact);
        Split blind = ComparisonSplits.kvBlind(exact);
        Split blindAsProposed = ComparisonSplits.kvBlindIgnoringFloor(exact);
        // the configurator runs open-loop on a separate, shorter trace of the same workload
        SplitWorkload representative = w.trace().make(true, ~seed);
        Split offline = exact.splitAt(new MvWsaSolver().solve(sim.exactProblem(representative)).chosen().expertCap());
        MvWsaSolver solver = new MvWsaSolver();
        SplitController.Settings estimator = new SplitController.Settings(w.budgetBytes(), floor, 4, 0.01, 8, 2,
                SplitController.Mode.ESTIMATOR);
        // as deployed: the configurator's split is where the engine starts, the controller resizes from there
        double online = sim.online(estimator, offline.expertCap(), DECAY, solver);
        double cold = sim.online(estimator, half.expertCap(), DECAY, solver);
        double step = sim.online(new SplitController.Settings(w.budgetBytes(), floor, 4, 0.01, 8, 2,
                SplitController.Mode.STEP_RULE), half.expertCap(), DECAY, solver);
        seconds.put("MV-WSA online", online);
        seconds.put(COLD, cold);
        seconds.put(COLD + ", step rule", step);
        seconds.put("MV-WSA offline", offline.predictedSeconds());
        splits.put("MV-WSA offline", offline);
        seconds.put("50-50", half.predictedSeconds());
        splits.put("50-50", half);
        seconds.put("Flux-prop", blind.predictedSeconds());
        splits.put("Flux-prop", blind);
        seconds.put("Flux-prop, floor ignored", blindAsProposed.predictedSeconds());
        splits.put("Flux-prop, floor ignored", blindAsProposed);
        return new Outcome(w.name(), seconds, splits, Map.of("50-50", ComparisonSplits.fiftyFiftyIgnoringFloor(exact),
                "Flux-prop", blindAsProposed), floor);
    }

    /** The table of simulated latencies, as ratios to the oracle (global oracle for the shift). */
    static String table(List<Outcome> outcomes) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%-40s", "policy"));
        for (Outcome o : outcomes) {
            b.append(String.format(Locale.ROOT, " | %-24s", o.workload().replace('_', '-')
                    + (o.workload().equals("shifting") ? " (vs global)" : " (vs oracle)")));
        }
        b.append('\n').append("-".repeat(40 + outcomes.size() * 27)).append('\n');
        for (String policy : outcomes.getFirst().seconds().keySet()) {
            b.append(String.format(Locale.ROOT, "%-40s", policy));
            for (Outcome o : outcomes) {
                double ratio = o.seconds().get(policy) / o.seconds().get("oracle");
                Split s = o.splits().get(policy);
                String where = s == null ? "online" : "k=" + s.expertCap() + (s.admissible() ? "" : "!");
                b.append(String.format(Locale.ROOT, " | %6.3fx %8.2fs %-7s", ratio, o.seconds().get(policy), where));
            }
            b.append('\n');
        }
        b.append("k = expert slots per layer; ! = below the KV admission floor (would not start). 50-50 and Flux-prop are\n")
                .append("deployable: their cap lowered until KV holds the floor. Simulated seconds on misses,\n")
                .append("modelled costs: expert 9 MiB over 25 GB/s, KV block of 16 tokens recomputed at 30 us/token.\n");
        return b.toString();
    }

    /** Prints the table and the figures (full run unless {@code --quick}). */
    public static void main(String[] args) {
        boolean quick = List.of(args).contains("--quick");
        for (Figure f : figures(quick)) {
            System.out.printf(Locale.ROOT, "%-44s %10.3f %s  ratio %.3f  goal %s  %s  %s%n", f.name(), f.value(), f.unit(),
                    f.ratio(), f.goal(), f.met() ? "met" : "NOT MET", f.note());
        }
    }
}
