package dev.strata.bench;

import dev.strata.analysis.kvsim.PrefixTrace;
import dev.strata.bench.route.RoutingReplayMeasure;
import dev.strata.memory.log.Log;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code strata bench kv}: the KV cache across tiers and processes. Block-manager operations per
 * block, loads of blocks another process published in the shared pool against a raw copy, RPC
 * over shared memory against a raw shared-memory ping-pong and loopback TCP, and the Mooncake
 * traces replayed at each capacity of a sweep with every eviction policy against Bélády's optimum, and a
 * modelled cluster of engine instances comparing load-only routing over the shared pool with
 * cache-aware routing without it.
 *
 * <p>The trace replayed is {@code --trace FILE} ({@link Options#trace()}), else the Mooncake trace
 * shipped in the repository ({@code traces/mooncake/synthetic_trace.jsonl} under {@code strata.home},
 * set by {@code bin/strata}, else the working directory). A named file that does not exist fails
 * the run before anything is measured; when the shipped trace is absent a generated trace is
 * replayed and the report says so. Without {@code --trace}, the shipped conversation trace
 * ({@code traces/mooncake/conversation_trace.jsonl}) is replayed as well, its figures named
 * {@code mooncake_conversation_hit_ratio_...}: the eviction goal is stated on the Mooncake traces, both of them.
 *
 * <p>Runs on the calling thread; the measures start their own child JVMs and workers.
 */
public final class KvScenario implements Scenario {
    private final List<Series> series = new ArrayList<>(); // miss curves and RPC latency CDFs, filled by run

    @Override
    public List<Series> series() {
        return List.copyOf(series);
    }

    @Override
    public String name() {
        return "kv";
    }

    @Override
    public String description() {
        return "KV block manager ops, cross-process pool loads, shared-memory RPC, Mooncake trace replay vs Belady";
    }

    @Override
    public List<Figure> run(Options options, List<String> notes) throws Exception {
        Path checkout = Path.of(System.getProperty("strata.home", "."));
        Path trace = trace(options.trace(), checkout);
        Path conversation = options.trace() == null ? TraceReplayMeasure.conversationTrace(checkout.toAbsolutePath()) : null;
        List<Figure> figures = new ArrayList<>();
        Progress progress = new Progress(Log.stream("bench"), conversation == null ? 5 : 6);
        progress.step("block manager: match + commit + release per block");
        figures.addAll(KvBlockOpsMeasure.figures(options.quick()));
        progress.step("loads from the POOL of blocks another process published");
        figures.addAll(PoolLoadMeasure.figures(options.quick()));
        progress.step("RPC over shared memory between two JVMs, against raw ping-pong and loopback TCP");
        figures.addAll(RpcMeasure.figures(options.quick(), series));
        progress.step("Mooncake trace replay from 250 blocks to the working set, every policy against Belady");
        figures.addAll(TraceReplayMeasure.figures(trace, notes, series));
        if (conversation != null) {
            progress.step("Mooncake conversation trace replay from 250 blocks to the working set, every policy against Belady");
            figures.addAll(TraceReplayMeasure.figures(PrefixTrace.read(conversation, TraceReplayMeasure.BLOCK_TOKENS),
                    "mooncake_conversation", series));
        }
        progress.step("routing replay: cache-aware vs load-only routing, with and without the shared pool (modelled)");
        figures.addAll(RoutingReplayMeasure.figures(trace, notes));
        return figures;
    }

    /**
     * The trace to replay: {@code named} when given (it must be a regular file), else the shipped
     * trace under the Strata checkout {@code checkout}, else null.
     *
     * @throws IllegalArgumentException naming the file when {@code named} is not a regular file
     */
    static Path trace(Path named, Path checkout) {
        if (named != null) {
            if (!Files.isRegularFile(named)) {
                throw new IllegalArgumentException("--trace " + named + (Files.exists(named) ? ": not a regular file" : ": no such file"));
            }
            return named;
        }
        return TraceReplayMeasure.mooncakeTrace(checkout.toAbsolutePath());
    }
}
