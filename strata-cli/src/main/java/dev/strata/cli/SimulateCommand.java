package dev.strata.cli;

import dev.strata.analysis.kvsim.BeladyBound;
import dev.strata.analysis.kvsim.ClusterReplayReport;
import dev.strata.analysis.kvsim.ClusterReplaySimulator;
import dev.strata.analysis.kvsim.KvReplaySimulator;
import dev.strata.analysis.kvsim.PrefixTrace;
import dev.strata.analysis.kvsim.ReplayReport;
import dev.strata.analysis.kvsim.ReplayResult;
import dev.strata.analysis.kvsim.ReplayRouter;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Sizes;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
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
     * hits per tier, blocks and bytes per link and Bélády's bound. With {@code --machines} (or any
     * cluster option) it replays N such machines behind one shared CLUSTER tier instead
     * ({@link ClusterReplaySimulator}) and prints local, cluster and recomputed blocks per machine
     * and the bytes on the network.
     */
    @Command(name = "kv", mixinStandardHelpOptions = true,
            description = {"Replays a request trace (Mooncake JSONL: timestamp, input_length, output_length, hash_ids) "
                    + "against KV tiers and prints hits per tier, blocks and bytes per link, and Belady's optimum.",
                    "A capacity of 0 disables a tier. Tiers are exclusive; Belady is computed for one cache of their summed capacity.",
                    "With --machines N (or any cluster option): N machines, each with these tiers, behind one CLUSTER tier of "
                            + "--cluster-blocks blocks shared by all (LRU, each block stored once); prints per machine the block "
                            + "references served locally (by tier), from the cluster and recomputed, and the bytes on the network."})
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
                description = "eviction policies to compare, each replayed separately: priority-lru, lru, tiny-lfu, prefix-aware, "
                        + "adaptive-reach (the KV default) "
                        + "(default: all)")
        List<String> policies = new ArrayList<>();

        @Option(names = "--trace-block-tokens", paramLabel = "N",
                description = "tokens per block of the trace, each hash_id one block (default: ${DEFAULT-VALUE}, the Mooncake trace's)")
        int blockTokens = 512;

        @Option(names = "--bytes-per-token", paramLabel = "SIZE",
                description = "KV bytes per token over all layers, e.g. 128KiB for Llama-3-8B (default: ${DEFAULT-VALUE})")
        String bytesPerToken = "128KiB";

        @Option(names = "--machines", paramLabel = "N",
                description = "machines, each with the tiers above, behind one shared cluster tier (default: one machine, "
                        + "no cluster, and the single-machine report)")
        Integer machines;

        @Option(names = "--cluster-blocks", paramLabel = "N",
                description = "capacity of the cluster tier shared by all machines, in blocks; 0 disables it (default: 0)")
        Long clusterBlocks;

        @Option(names = "--router", paramLabel = "R",
                description = "how requests are sent to machines: round-robin, random (seeded by --seed), prefix-affinity "
                        + "(by the request's first block), least-loaded (fewest block references sent so far) (default: round-robin)")
        String router;

        @Option(names = "--cluster-write", paramLabel = "W",
                description = "when a machine writes a block to the cluster: through (as it is computed) or behind (as it leaves "
                        + "the machine's last tier) (default: through)")
        String clusterWrite;

        @Option(names = "--seed", paramLabel = "S", description = "seed of the random router (default: ${DEFAULT-VALUE})")
        long seed = 1;

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
            for (String p : policies.isEmpty() ? List.of("priority-lru", "lru", "tiny-lfu", "prefix-aware", "adaptive-reach") : policies) {
                kinds.add(PolicyKind.parse(p));
            }
            long[] capacity = {deviceBlocks, hostBlocks, diskBlocks};
            boolean cluster = machines != null || clusterBlocks != null || router != null || clusterWrite != null;
            int n = machines == null ? 1 : machines;
            if (n < 1) {
                throw new IllegalArgumentException("--machines must be at least 1, got " + n);
            }
            long clusterCapacity = clusterBlocks == null ? 0 : clusterBlocks;
            if (clusterCapacity < 0) {
                throw new IllegalArgumentException("--cluster-blocks must not be negative, got " + clusterCapacity);
            }
            ReplayRouter.Kind routerKind = parse("--router", () -> ReplayRouter.Kind.parse(router == null ? "round-robin" : router));
            ClusterReplaySimulator.WritePolicy write = parse("--cluster-write",
                    () -> ClusterReplaySimulator.WritePolicy.parse(clusterWrite == null ? "through" : clusterWrite));
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
            if (cluster) {
                for (PolicyKind kind : kinds) {
                    ClusterReplaySimulator.Config c = new ClusterReplaySimulator.Config(n, config(capacity, kind, blockBytes),
                            clusterCapacity, write, routerKind, seed);
                    System.out.println();
                    System.out.print(ClusterReplayReport.format(ClusterReplaySimulator.replay(t, c), c));
                }
                return 0;
            }
            long optimum = BeladyBound.hits(t, first.totalCapacity());
            for (PolicyKind kind : kinds) {
                KvReplaySimulator.Config c = config(capacity, kind, blockBytes);
                ReplayResult r = KvReplaySimulator.replay(t, c);
                System.out.println();
                System.out.print(ReplayReport.format(r, c, optimum));
            }
            return 0;
        }

        /** Runs {@code parser}, prefixing the option's name to the error of a bad value. */
        private static <T> T parse(String option, Supplier<T> parser) {
            try {
                return parser.get();
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(option + ": " + e.getMessage(), e);
            }
        }

        private KvReplaySimulator.Config config(long[] capacity, PolicyKind kind, long blockBytes) {
            return new KvReplaySimulator.Config(capacity, new PolicyKind[] {kind, kind, kind}, blockBytes, !keepUnreachable, false);
        }
    }
}
