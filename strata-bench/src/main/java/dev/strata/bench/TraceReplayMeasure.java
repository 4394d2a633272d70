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
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.LongStream;

/**
 * The prefix-caching hit ratios of the eviction policies against Bélády's optimum and plain LRU,
 * on a request trace replayed through one KV tier at each capacity of a sweep, from 250 blocks of
 * 512 tokens up to the trace's distinct blocks (its working set).
 *
 * <p>Every figure's value is a policy's block hit ratio; its baseline is Bélády's hit ratio at the
 * same capacity, replayed in the same run, so the ratio is the fraction of the optimum reached;
 * the note gives the ratio to LRU's hit ratio at the same capacity. The default KV policy
 * ({@link PolicyKind#KV_DEFAULT}) has a goal: at least {@link #DEFAULT_GOAL_OVER_LRU} times LRU's hit
 * ratio at 1k and 5k blocks, at least LRU's elsewhere (the goal, on the fraction of the optimum,
 * is that multiple of LRU's fraction). The other policies' figures are information (goal
 * {@code >= 0}). Replays are deterministic, so one round is the measurement. Names:
 * {@code <trace>_hit_ratio_<capacity>_<policy>}, e.g. {@code mooncake_hit_ratio_5k_adaptive_reach},
 * the capacity in thousands when it is a multiple of 1,000.
 *
 * <p>Stateless; any thread.
 */
public final class TraceReplayMeasure {
    /** Capacities replayed, in blocks; the trace's distinct blocks are replayed last. */
    public static final long[] CAPACITIES = {250, 500, 1_000, 2_000, 5_000, 10_000, 20_000};
    /** Capacities, in blocks, at which the default KV policy must beat LRU by {@link #DEFAULT_GOAL_OVER_LRU}. */
    public static final long[] HEADLINE_CAPACITIES = {1_000, 5_000};
    /** The default KV policy's goal at the headline capacities: this multiple of LRU's hit ratio. */
    public static final double DEFAULT_GOAL_OVER_LRU = 1.2;
    /** Tokens per block. */
    public static final int BLOCK_TOKENS = 512;
    /** Policies compared, LRU first (the goal and the notes refer to it). */
    public static final List<PolicyKind> POLICIES = List.of(PolicyKind.LRU, PolicyKind.PRIORITY_LRU, PolicyKind.TINY_LFU,
            PolicyKind.PREFIX_AWARE, PolicyKind.ADAPTIVE_REACH);

    private TraceReplayMeasure() {
    }

    /** The shipped Mooncake trace under {@code repositoryRoot}, or null when it is not there. */
    public static Path mooncakeTrace(Path repositoryRoot) {
        return shipped(repositoryRoot, MooncakeTraceReader.SHIPPED_TRACE);
    }

    /** The shipped Mooncake conversation trace under {@code repositoryRoot}, or null when it is not there. */
    public static Path conversationTrace(Path repositoryRoot) {
        return shipped(repositoryRoot, MooncakeTraceReader.SHIPPED_CONVERSATION_TRACE);
    }

    private static Path shipped(Path repositoryRoot, Path relative) {
        Path p = repositoryRoot.resolve(relative).normalize();
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

    /** The capacities replayed for {@code trace}: {@link #CAPACITIES} below its distinct blocks, then its distinct blocks. */
    public static long[] capacities(PrefixTrace trace) {
        long distinct = trace.blockCount();
        return LongStream.concat(Arrays.stream(CAPACITIES).filter(c -> c < distinct), LongStream.of(distinct)).toArray();
    }

    /** Figures for an interned trace, named {@code <label>_hit_ratio_<capacity>_<policy>}. */
    public static List<Figure> figures(PrefixTrace trace, String label) {
        return figures(trace, label, new ArrayList<>());
    }

    /** As {@link #figures(PrefixTrace, String)}, adding the miss curves to {@code plots}. */
    public static List<Figure> figures(PrefixTrace trace, String label, List<Series> plots) {
        List<Figure> out = new ArrayList<>();
        for (long capacity : capacities(trace)) {
            double optimum = BeladyBound.hitRatio(trace, capacity);
            String baseline = String.format(Locale.ROOT, "Belady's optimum at %d blocks", capacity);
            boolean headline = Arrays.stream(HEADLINE_CAPACITIES).anyMatch(c -> c == capacity);
            double overLru = headline ? DEFAULT_GOAL_OVER_LRU : 1.0;
            double lru = Double.NaN;
            for (PolicyKind kind : POLICIES) {
                ReplayResult r = KvReplaySimulator.replay(trace, KvReplaySimulator.Config.single(capacity, kind, 1));
                if (kind == PolicyKind.LRU) {
                    lru = r.hitRatio();
                }
                String name = label + "_hit_ratio_" + capacityLabel(capacity) + "_" + kind.name().toLowerCase(Locale.ROOT);
                String goal = kind == PolicyKind.KV_DEFAULT && optimum > 0 ? ">= " + overLru * lru / optimum : ">= 0";
                String note = String.format(Locale.ROOT, "%.3fx LRU", r.hitRatio() / lru)
                        + (kind == PolicyKind.KV_DEFAULT ? String.format(Locale.ROOT, "; goal: %.1fx LRU", overLru) : "; information");
                out.add(Figure.exact(name, r.hitRatio(), "", baseline, optimum, goal).withNote(note));
            }
        }
        plots.addAll(missCurves(out, label, capacities(trace)));
        return out;
    }

    /** One line per policy and one for Bélády's optimum: block hit ratio against capacity, read back from the figures. */
    private static List<Series> missCurves(List<Figure> figures, String label, long[] capacities) {
        String plot = label + " trace: block hit ratio against capacity (" + BLOCK_TOKENS + "-token blocks)";
        double[] x = Arrays.stream(capacities).asDoubleStream().toArray();
        List<Series> lines = new ArrayList<>();
        double[] belady = new double[capacities.length];
        for (int p = 0; p < POLICIES.size(); p++) {
            double[] y = new double[capacities.length];
            for (int c = 0; c < capacities.length; c++) {
                Figure f = figures.get(c * POLICIES.size() + p);
                y[c] = f.value();
                belady[c] = f.baselineValue();
            }
            lines.add(new Series(plot, POLICIES.get(p).name().toLowerCase(Locale.ROOT), "capacity (blocks)", "hit ratio", true, x, y));
        }
        lines.add(new Series(plot, "Belady's optimum", "capacity (blocks)", "hit ratio", true, x, belady));
        return lines;
    }

    /** {@code 5k} for 5,000 blocks, {@code 250} for 250. */
    static String capacityLabel(long capacity) {
        return capacity % 1000 == 0 ? (capacity / 1000) + "k" : Long.toString(capacity);
    }
}
