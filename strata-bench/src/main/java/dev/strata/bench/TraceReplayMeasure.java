package dev.strata.bench;

import dev.strata.analysis.kvsim.BeladyBound;
import dev.strata.analysis.kvsim.KvReplaySimulator;
import dev.strata.analysis.kvsim.PrefixTrace;
import dev.strata.analysis.kvsim.ReplayResult;
import dev.strata.analysis.kvsim.SyntheticPrefixTraceGenerator;
import dev.strata.analysis.kvtrace.MooncakeTraceReader;
import dev.strata.cache.policy.PolicyKind;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The prefix-caching hit ratios of the eviction policies against Bélády's optimum, on a request
 * trace replayed through one KV tier of 1k, 5k and 20k blocks of 512 tokens.
 *
 * <p>Every figure's value is a policy's block hit ratio; its baseline is Bélády's hit ratio at the
 * same capacity, replayed in the same run, so the ratio is the fraction of the optimum reached.
 * The prefix-aware policy's goal is to beat plain LRU: its goal threshold is the smallest ratio
 * above LRU's (the goal syntax has only {@code >=}). The other policies' figures are information
 * (goal {@code >= 0}). Names: {@code <trace>_hit_ratio_<capacity>_<policy>}, e.g.
 * {@code mooncake_hit_ratio_5k_prefix_aware}.
 *
 * <p>Stateless; any thread.
 */
public final class TraceReplayMeasure {
    /** Capacities replayed, in blocks. */
    public static final long[] CAPACITIES = {1_000, 5_000, 20_000};
    /** Tokens per block. */
    public static final int BLOCK_TOKENS = 512;
    /** Policies compared, LRU first (the prefix-aware goal refers to it). */
    public static final List<PolicyKind> POLICIES = List.of(PolicyKind.LRU, PolicyKind.PRIORITY_LRU, PolicyKind.TINY_LFU,
            PolicyKind.PREFIX_AWARE);

    private TraceReplayMeasure() {
    }

    /** The shipped Mooncake trace under {@code repositoryRoot}, or null when it is not there. */
    public static Path mooncakeTrace(Path repositoryRoot) {
        Path p = repositoryRoot.resolve(MooncakeTraceReader.SHIPPED_TRACE).normalize();
        return Files.isRegularFile(p) ? p : null;
    }

    /**
     * Replays {@code trace} (Mooncake format), or, when it is null, a generated chat trace
     * ({@link SyntheticPrefixTraceGenerator.Knobs#chat}, 12,000 requests, seed 1, noted in
     * {@code notes}), at each capacity with each policy.
     */
    public static List<Figure> figures(Path trace, List<String> notes) {
        return figures(trace, notes, new ArrayList<>());
    }

    /** As {@link #figures(Path, List)}, adding the miss curves (hit ratio against capacity per policy and Bélády's) to {@code plots}. */
    public static List<Figure> figures(Path trace, List<String> notes, List<Series> plots) {
        PrefixTrace t;
        String label;
        if (trace != null) {
            t = PrefixTrace.read(trace, BLOCK_TOKENS);
            label = "mooncake";
        } else {
            t = PrefixTrace.of(SyntheticPrefixTraceGenerator.generate(SyntheticPrefixTraceGenerator.Knobs.chat(12_000), 1));
            label = "synthetic";
            notes.add("Mooncake trace not found (" + MooncakeTraceReader.SHIPPED_TRACE + "): replayed a generated chat trace instead "
                    + "(12,000 requests, seed 1)");
        }
        return figures(t, label, plots);
    }

    /** Figures for an interned trace, named {@code <label>_hit_ratio_<capacity>_<policy>}. */
    public static List<Figure> figures(PrefixTrace trace, String label) {
        return figures(trace, label, new ArrayList<>());
    }

    /** As {@link #figures(PrefixTrace, String)}, adding the miss curves to {@code plots}. */
    public static List<Figure> figures(PrefixTrace trace, String label, List<Series> plots) {
        List<Figure> out = new ArrayList<>();
        for (long capacity : CAPACITIES) {
            double optimum = BeladyBound.hitRatio(trace, capacity);
            String baseline = String.format(Locale.ROOT, "Belady's optimum at %d blocks", capacity);
            double lruRatio = Double.NaN;
            for (PolicyKind kind : POLICIES) {
                ReplayResult r = KvReplaySimulator.replay(trace, KvReplaySimulator.Config.single(capacity, kind, 1));
                String name = label + "_hit_ratio_" + (capacity / 1000) + "k_" + kind.name().toLowerCase(Locale.ROOT);
                double ratio = optimum > 0 ? r.hitRatio() / optimum : Double.NaN;
                if (kind == PolicyKind.LRU) {
                    lruRatio = ratio;
                }
                String goal = kind == PolicyKind.PREFIX_AWARE && !Double.isNaN(lruRatio)
                        ? ">= " + Math.nextUp(lruRatio) : ">= 0";
                Figure f = Figure.exact(name, r.hitRatio(), "", baseline, optimum, goal);
                f = f.withNote(kind == PolicyKind.PREFIX_AWARE
                        ? String.format(Locale.ROOT, "goal: above LRU's %.4f of the optimum", lruRatio)
                        : "information");
                out.add(f);
            }
        }
        plots.addAll(missCurves(out, label));
        return out;
    }

    /** One line per policy and one for Bélády's optimum: block hit ratio against capacity, read back from the figures. */
    private static List<Series> missCurves(List<Figure> figures, String label) {
        String plot = label + " trace: block hit ratio against capacity (" + BLOCK_TOKENS + "-token blocks)";
        double[] x = java.util.Arrays.stream(CAPACITIES).asDoubleStream().toArray();
        List<Series> lines = new ArrayList<>();
        double[] belady = new double[CAPACITIES.length];
        for (int p = 0; p < POLICIES.size(); p++) {
            double[] y = new double[CAPACITIES.length];
            for (int c = 0; c < CAPACITIES.length; c++) {
                Figure f = figures.get(c * POLICIES.size() + p);
                y[c] = f.value();
                belady[c] = f.baselineValue();
            }
            lines.add(new Series(plot, POLICIES.get(p).name().toLowerCase(Locale.ROOT), "capacity (blocks)", "hit ratio", true, x, y));
        }
        lines.add(new Series(plot, "Belady's optimum", "capacity (blocks)", "hit ratio", true, x, belady));
        return lines;
    }
}
