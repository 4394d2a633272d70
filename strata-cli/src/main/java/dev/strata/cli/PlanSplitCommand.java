package dev.strata.cli;

import dev.strata.analysis.kvplan.PlanUnits;
import dev.strata.analysis.routing.RoutingReuseDistances;
import dev.strata.analysis.split.ComparisonSplits;
import dev.strata.analysis.split.KvBlockTrace;
import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingTraceException;
import dev.strata.cache.routing.RoutingTraceHeader;
import dev.strata.cache.routing.RoutingTraceReader;
import dev.strata.cache.routing.RoutingTraceText;
import dev.strata.cache.split.ExpertDemand;
import dev.strata.cache.split.MissCosts;
import dev.strata.cache.split.MvWsaSolver;
import dev.strata.cache.split.Split;
import dev.strata.cache.split.SplitPlan;
import dev.strata.cache.split.SplitProblem;
import dev.strata.memory.Sizes;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata plan-split}: the offline MV-WSA configurator. Reads a routing trace (the expert
 * stream) and a KV block trace, builds the exact LRU miss curves of both, and prints the split of
 * the pageable budget that MV-WSA chooses beside the brute-force oracle, the 50–50 split and the
 * KV-blind split, each with its predicted seconds on misses over the traces. The 50–50 and
 * KV-blind rows are the splits as deployable, their cap lowered until KV holds the admission floor
 * ({@link ComparisonSplits}); when a rule's own split is below the floor, a row marked {@code *}
 * under it shows that split and what it would cost as if it ran.
 */
@Command(name = "plan-split", mixinStandardHelpOptions = true,
        description = "Plans the split of a memory budget between expert slots and KV blocks (MV-WSA) from a routing trace and a KV block trace.")
final class PlanSplitCommand implements Callable<Integer> {

    @Option(names = "--routing-trace", required = true, paramLabel = "FILE",
            description = "Routing trace: the binary format, or its JSON-lines text form.")
    Path routingTrace;

    @Option(names = "--trace", required = true, paramLabel = "FILE",
            description = "KV request trace in the Mooncake JSON-lines format (hash_ids per request).")
    Path trace;

    @Option(names = "--split-budget", required = true, paramLabel = "SIZE",
            description = "Pageable budget shared by experts and KV, e.g. 24GiB [split.budget].")
    String budget;

    @Option(names = "--expert-bytes", paramLabel = "SIZE", defaultValue = "9MiB",
            description = "Bytes of one expert of one layer (default: ${DEFAULT-VALUE}, Qwen3-30B-A3B in BF16).")
    String expertBytes;

    @Option(names = "--kv-block-bytes", paramLabel = "SIZE",
            description = "Bytes of one KV block of the trace over all layers (default: trace block tokens x 96KiB, Qwen3-30B-A3B in BF16).")
    String kvBlockBytes;

    @Option(names = "--trace-block-tokens", paramLabel = "N", defaultValue = "512",
            description = "Tokens per block of the KV trace, each hash_id one block (default: ${DEFAULT-VALUE}, the Mooncake trace's).")
    int blockTokens;

    @Option(names = "--host-link", paramLabel = "RATE", defaultValue = "25GB/s",
            description = "Host to device bandwidth experts are fetched at (default: ${DEFAULT-VALUE}, PCIe Gen4).")
    String hostLink;

    @Option(names = "--recompute-us-per-token", paramLabel = "N", defaultValue = "30",
            description = "Prefill time per token when a KV block is recomputed, microseconds (default: ${DEFAULT-VALUE}).")
    double recomputeMicros;

    @Option(names = "--concurrency", paramLabel = "N", defaultValue = "1", description = "Sequences served at once (default: ${DEFAULT-VALUE}).")
    int concurrency;

    @Option(names = "--context-tokens", paramLabel = "N",
            description = "Context per sequence for the admission floor (default: the longest input of the KV trace).")
    Long contextTokens;

    @Option(names = "--min-expert-cap", paramLabel = "N", description = "Fewest expert slots per layer (default: the trace's top-k).")
    Integer minCap;

    @Option(names = "--show-grid", description = "Also prints the predicted latency at every split of the solver's grid.")
    boolean showGrid;

    @Override
    public Integer call() {
        long budgetBytes = positiveSize("--split-budget", budget);
        long expert = positiveSize("--expert-bytes", expertBytes);
        if (blockTokens < 1) {
            throw new IllegalArgumentException("--trace-block-tokens must be at least 1, got " + blockTokens);
        }
        long block = kvBlockBytes == null ? blockTokens * 96L * Sizes.KiB : positiveSize("--kv-block-bytes", kvBlockBytes);
        long linkBytesPerSecond = PlanUnits.bytesPerSecond("--host-link", hostLink);
        if (linkBytesPerSecond <= 0 || !(recomputeMicros > 0) || concurrency < 0) {
            throw new IllegalArgumentException("--host-link and --recompute-us-per-token must be positive and --concurrency"
                    + " not negative, got " + hostLink + ", " + recomputeMicros + ", " + concurrency);
        }
        ExpertStream experts = readRouting(routingTrace);
        long slot = experts.header().layers() * expert;
        int maxKv = (int) Math.min(Integer.MAX_VALUE - 8, budgetBytes / block + 1);
        KvBlockTrace kvTrace = KvBlockTrace.readMooncake(trace, maxKv);
        long context = contextTokens != null ? contextTokens
                : kvTrace.maxInputTokens() > 0 ? kvTrace.maxInputTokens() : kvTrace.maxBlocks() * blockTokens;
        if (context < 0) {
            throw new IllegalArgumentException("--context-tokens must not be negative, got " + context);
        }
        long floor = SplitProblem.floorBlocks(concurrency, context, blockTokens);
        int lowest = minCap != null ? minCap : experts.header().topK();
        if (lowest < 1 || lowest > experts.header().experts()) {
            throw new IllegalArgumentException("--min-expert-cap must be in 1.." + experts.header().experts() + ", got " + lowest);
        }
        MissCosts costs = MissCosts.fromPhysical(expert, (double) linkBytesPerSecond, blockTokens, recomputeMicros * 1e-6, MissCosts.Source.GIVEN);
        SplitProblem problem = new SplitProblem(budgetBytes, slot, block, experts.demand(), kvTrace.curve(), costs, floor, lowest,
                experts.header().experts());
        SplitPlan plan = new MvWsaSolver().solve(problem);
        Split oracle = MvWsaSolver.oracle(problem);
        System.out.print(report(problem, experts, kvTrace, context, plan, oracle));
        if (showGrid) {
            System.out.print(grid(plan));
        }
        return 0;
    }

    /** The expert stream of a routing trace. */
    record ExpertStream(RoutingTraceHeader header, ExpertDemand demand, long steps) {
    }

    static ExpertStream readRouting(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("routing trace file not found: " + file);
        }
        try {
            RoutingReuseDistances distances;
            RoutingTraceHeader header;
            if (isText(file)) {
                RoutingTraceText.Trace trace = RoutingTraceText.read(file);
                header = trace.header();
                distances = new RoutingReuseDistances(header);
                for (RoutingRecord r : trace.records()) {
                    distances.accept(r);
                }
            } else {
                try (RoutingTraceReader reader = RoutingTraceReader.open(file)) {
                    header = reader.header();
                    distances = new RoutingReuseDistances(header);
                    for (RoutingRecord r = reader.next(); r != null; r = reader.next()) {
                        distances.accept(r);
                    }
                }
            }
            if (distances.steps() == 0) {
                throw new IllegalArgumentException("routing trace " + file + " holds no steps");
            }
            List<MissCurve> curves = new ArrayList<>();
            for (int l = 0; l < header.layers(); l++) {
                curves.add(distances.layerCurve(l));
            }
            return new ExpertStream(header, ExpertDemand.perLayer(curves, header.experts()), distances.steps());
        } catch (RoutingTraceException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /** The text form starts with a JSON object or a comment; the binary form with its magic. */
    private static boolean isText(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            int c;
            do {
                c = in.read();
            } while (c == ' ' || c == '\t' || c == '\r' || c == '\n');
            return c == '{' || c == '#';
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read routing trace " + file + ": " + e.getMessage(), e);
        }
    }

    static String report(SplitProblem p, ExpertStream experts, KvBlockTrace kv, long context, SplitPlan plan, Split oracle) {
        StringBuilder b = new StringBuilder();
        RoutingTraceHeader h = experts.header();
        b.append(String.format(Locale.ROOT, "expert stream: %d steps, %d layers x %d experts, top-%d; slot (one expert in every layer) %s%n",
                experts.steps(), h.layers(), h.experts(), h.topK(), size(p.expertSlotBytes())));
        b.append(String.format(Locale.ROOT, "KV stream:     %d requests, %d block references, %d distinct blocks; block %s%n",
                kv.requests(), kv.references(), kv.distinct(), size(p.kvBlockBytes())));
        b.append(String.format(Locale.ROOT, "budget %s; admission floor %d blocks (%s, context %d tokens); expert cap %d..%d%n",
                size(p.budgetBytes()), p.floorBlocks(), size(p.floorBlocks() * p.kvBlockBytes()), context, p.lowestCap(), p.highestCap()));
        b.append("miss costs: ").append(p.costs()).append('\n');
        b.append(String.format(Locale.ROOT, "%d cost evaluations over %d feasible caps (grid, knees and refinement; a cap may be evaluated twice)%n%n", plan.evaluations(), p.highestCap() - p.lowestCap() + 1));
        b.append(String.format(Locale.ROOT, "%-30s %10s %10s %11s %11s %14s %10s%n", "split", "expert cap", "KV blocks",
                "experts", "KV", "predicted (s)", "vs oracle"));
        row(b, "MV-WSA", plan.chosen(), p, oracle);
        row(b, "oracle (every cap)", oracle, p, oracle);
        baseline(b, "50-50", ComparisonSplits.fiftyFifty(p), ComparisonSplits.fiftyFiftyIgnoringFloor(p), p, oracle);
        baseline(b, "KV-blind (Flux-prop)", ComparisonSplits.kvBlind(p), ComparisonSplits.kvBlindIgnoringFloor(p), p, oracle);
        b.append("50-50 and KV-blind: the rule's cap, lowered until KV holds the admission floor (the splits the oracle and\n")
                .append("MV-WSA choose among); * below the admission floor: the engine would not start or would preempt every step\n");
        return b.toString();
    }

    static String grid(SplitPlan plan) {
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%ngrid (finite differences: seconds per GiB moved from KV to experts)%n"));
        b.append(String.format(Locale.ROOT, "%10s %10s %14s %16s%n", "expert cap", "KV blocks", "predicted (s)", "marginal (s/GiB)"));
        for (int i = 0; i < plan.grid().size(); i++) {
            Split s = plan.grid().get(i);
            String marginal = i < plan.marginals().length
                    ? String.format(Locale.ROOT, "%16.4f", plan.marginals()[i] * Sizes.GiB) : "";
            b.append(String.format(Locale.ROOT, "%10d %10d %14.3f %s%n", s.expertCap(), s.kvBlocks(), s.predictedSeconds(), marginal));
        }
        return b.toString();
    }

    /** A baseline's deployable split, and under it the rule's own split when that one is below the floor. */
    private static void baseline(StringBuilder b, String name, Split deployable, Split proposed, SplitProblem p, Split oracle) {
        row(b, name, deployable, p, oracle);
        if (proposed.expertCap() != deployable.expertCap()) {
            row(b, "  as the rule has it", proposed, p, oracle);
        }
    }

    private static void row(StringBuilder b, String name, Split s, SplitProblem p, Split oracle) {
        b.append(String.format(Locale.ROOT, "%-30s %10d %10d %11s %11s %14.3f %9.3fx%s%n", name, s.expertCap(), s.kvBlocks(),
                size(s.expertCap() * p.expertSlotBytes()), size(s.kvBlocks() * p.kvBlockBytes()), s.predictedSeconds(),
                s.predictedSeconds() / oracle.predictedSeconds(), s.admissible() ? "" : " *"));
    }

    private static String size(long bytes) {
        return Sizes.format(bytes).replace(" ", "");
    }

    private static long positiveSize(String option, String text) {
        long v;
        try {
            v = Sizes.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": " + e.getMessage(), e);
        }
        if (v <= 0) {
            throw new IllegalArgumentException(option + " must be positive, got " + text);
        }
        return v;
    }
}
