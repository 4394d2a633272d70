package dev.strata.cli;

import dev.strata.analysis.kvsim.BeladyBound;
import dev.strata.analysis.kvsim.KvReplaySimulator;
import dev.strata.analysis.kvsim.PrefixTrace;
import dev.strata.analysis.kvsim.ReplayReport;
import dev.strata.analysis.kvsim.ReplayResult;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Sizes;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code strata simulate ...}: replays workloads against modelled tiers, without touching memory. */
@Command(name = "simulate", mixinStandardHelpOptions = true,
        description = "Replays workloads against modelled tiers.",
        subcommands = {SimulateCommand.Kv.class})
final class SimulateCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    /**
     * {@code strata simulate kv --trace FILE ...}: replays a Mooncake-format request trace against
     * DEVICE, HOST and DISK tiers of the given capacities, with each policy asked for, and prints
     * hits per tier, blocks and bytes per link and Bélády's bound.
     */
    @Command(name = "kv", mixinStandardHelpOptions = true,
            description = {"Replays a request trace (Mooncake JSONL: timestamp, input_length, output_length, hash_ids) "
                    + "against KV tiers and prints hits per tier, blocks and bytes per link, and Belady's optimum.",
                    "A capacity of 0 disables a tier. Tiers are exclusive; Belady is computed for one cache of their summed capacity."})
    static final class Kv implements Callable<Integer> {
        @Option(names = "--trace", required = true, paramLabel = "FILE", description = "the trace, one JSON object per line")
        Path trace;

        @Option(names = "--device-blocks", paramLabel = "N", description = "DEVICE capacity in blocks (default: ${DEFAULT-VALUE})")
        long deviceBlocks = 5_000;

        @Option(names = "--host-blocks", paramLabel = "N", description = "HOST capacity in blocks (default: ${DEFAULT-VALUE})")
        long hostBlocks;

        @Option(names = "--disk-blocks", paramLabel = "N", description = "DISK capacity in blocks (default: ${DEFAULT-VALUE})")
        long diskBlocks;

        @Option(names = "--policy", paramLabel = "P", split = ",",
                description = "eviction policies to compare, each replayed separately: priority-lru, lru, tiny-lfu, prefix-aware "
                        + "(default: all)")
        List<String> policies = new ArrayList<>();

        @Option(names = "--trace-block-tokens", paramLabel = "N",
                description = "tokens per block of the trace, each hash_id one block (default: ${DEFAULT-VALUE}, the Mooncake trace's)")
        int blockTokens = 512;

        @Option(names = "--bytes-per-token", paramLabel = "SIZE",
                description = "KV bytes per token over all layers, e.g. 128KiB for Llama-3-8B (default: ${DEFAULT-VALUE})")
        String bytesPerToken = "128KiB";

        @Option(names = "--keep-unreachable",
                description = "keep blocks whose parent left the last tier (by default they are dropped: no request can use them)")
        boolean keepUnreachable;

        @Override
        public Integer call() {
            if (blockTokens <= 0) {
                throw new IllegalArgumentException("--trace-block-tokens must be positive, got " + blockTokens);
            }
            long perToken = Sizes.parse(bytesPerToken);
            if (perToken <= 0) {
                throw new IllegalArgumentException("--bytes-per-token must be positive, got '" + bytesPerToken + "'");
            }
            long blockBytes = Math.multiplyExact(perToken, (long) blockTokens);
            List<PolicyKind> kinds = new ArrayList<>();
            for (String p : policies.isEmpty() ? List.of("priority-lru", "lru", "tiny-lfu", "prefix-aware") : policies) {
                kinds.add(PolicyKind.parse(p));
            }
            long[] capacity = {deviceBlocks, hostBlocks, diskBlocks};
            PrefixTrace t;
            try {
                t = PrefixTrace.read(trace, blockTokens);
            } catch (UncheckedIOException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
            KvReplaySimulator.Config first = config(capacity, kinds.get(0), blockBytes); // validates capacities
            System.out.printf(Locale.ROOT, "trace %s: %d requests, %d block references, %d distinct blocks; block %d tokens x %s/token = %s%n",
                    trace, t.requestCount(), t.accessCount(), t.blockCount(), blockTokens, Sizes.format(perToken).replace(" ", ""),
                    Sizes.format(blockBytes));
            long optimum = BeladyBound.hits(t, first.totalCapacity());
            for (PolicyKind kind : kinds) {
                KvReplaySimulator.Config c = config(capacity, kind, blockBytes);
                ReplayResult r = KvReplaySimulator.replay(t, c);
                System.out.println();
                System.out.print(ReplayReport.format(r, c, optimum));
            }
            return 0;
        }

        private KvReplaySimulator.Config config(long[] capacity, PolicyKind kind, long blockBytes) {
            return new KvReplaySimulator.Config(capacity, new PolicyKind[] {kind, kind, kind}, blockBytes, !keepUnreachable, false);
        }
    }
}
