package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cluster.ClusterBlockStore;
import dev.strata.cluster.LocalRedisCluster;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.node.daemon.NodeConfig;
import dev.strata.node.daemon.NodeDaemon;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Write-behind out of the POOL: a {@code strata node} configured with
 * {@code tiers.cluster.write: eviction} writes the blocks it evicts from its full pool to the
 * cluster, and a server on another machine (no pool, the cluster only) then reuses them with the
 * same answer. Real processes' worth of parts: a node daemon, a server attached to it, a local
 * Redis Cluster.
 */
class PoolWriteBehindTest {
    @TempDir
    Path dir;

    private final String unique = "strata-pool-behind-test-" + ProcessHandle.current().pid();
    private final Path rpc = Path.of("/dev/shm", unique + ".rpc");
    private final Path pool = Path.of("/dev/shm", unique + ".pool");

    private StrataConfig config(List<String> defaults, Path model, LocalRedisCluster cluster, String... more) {
        List<String> settings = new ArrayList<>(List.of("model.path=" + model, "server.port=0", "server.threads=1", "kv.block-tokens=4",
                "kv.device-blocks=64", "tiers.cluster.nodes=[" + String.join(",", cluster.nodes()) + "]",
                "tiers.cluster.password-file=" + cluster.passwordFile(), "tiers.cluster.tenant=pool-behind", "tiers.cluster.timeout=2s"));
        settings.addAll(List.of(more));
        return ConfigLoader.load(defaults, null, settings, null, List.of()).conclude();
    }

    private static String complete(ServeCommand.Running r, String prompt) throws Exception {
        return ClusterCommandTest.complete(r, prompt);
    }

    @Test
    void blocksTheNodeEvictsFromItsPoolReachAnotherMachineThroughTheCluster() throws Exception {
        Path model = dir.resolve("tiny-llama");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.LLAMA, 5), model, (d, t, b, tb) -> { });
        LocalRedisCluster cluster = LocalRedisCluster.create(dir.resolve("cluster"), 3, 0, LocalRedisCluster.freePortBase(3), true)
                .start(Duration.ofSeconds(30));
        try {
            StrataConfig nodeSettings = config(NodeCommand.DEFAULTS, model, cluster, "node.rpc=" + rpc, "node.channels=4",
                    "tiers.pool.paths=[" + pool + "]", "tiers.pool.capacity=1MiB", "tiers.pool.chunk=4KiB", "tiers.cluster.write=eviction");
            NodeConfig nodeConfig = NodeCommand.nodeConfig(nodeSettings, true);
            // write-behind out of the pool needs the model's KV geometry: refused clearly without it
            StrataConfig noModel = ConfigLoader.load(NodeCommand.DEFAULTS, null, List.of("tiers.cluster.nodes=[" + cluster.nodes().getFirst()
                    + "]", "tiers.cluster.write=eviction"), null, List.of()).conclude();
            assertThatThrownBy(() -> NodeCommand.writeBehindCluster(noModel, nodeConfig)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("--model");

            String first = "the first prompt's blocks are evicted from the pool and written behind to the cluster";
            String answer;
            ClusterBlockStore nodeCluster = NodeCommand.writeBehindCluster(nodeSettings, nodeConfig);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (nodeCluster;
                 NodeDaemon node = NodeDaemon.start(nodeConfig, new PrintStream(out, true, StandardCharsets.UTF_8),
                         ServeCluster.poolEvictions(nodeSettings, nodeCluster));
                 ServeCommand.Running a = ServeCommand.start(config(ServeFlags.DEFAULTS, model, cluster, "node.rpc=" + rpc,
                         "node.access=daemon", "tiers.pool.paths=[" + pool + "]", "tiers.pool.capacity=1MiB", "tiers.cluster.write=eviction"))) {
                answer = complete(a, first);
                assertThat(nodeCluster.metrics().published()).as("nothing written while the pool has room").isZero();
                for (int i = 0; i < 60 && nodeCluster.metrics().published() == 0; i++) {
                    complete(a, ExamplesTest.prompt(100 + i, 40)); // fills the pool: the node evicts its oldest blocks
                }
                assertThat(nodeCluster.awaitWrites(Duration.ofSeconds(10))).isTrue();
                assertThat(nodeCluster.metrics().published()).as("blocks the node evicted and wrote behind").isPositive();
                assertThat(node.index().stats().published()).isPositive();
            }
            try (ServeCommand.Running b = ServeCommand.start(config(ServeFlags.DEFAULTS, model, cluster))) {
                assertThat(complete(b, first)).isEqualTo(answer);
                assertThat(ExamplesTest.sample(ExamplesTest.get("http://127.0.0.1:" + b.port() + "/metrics"), "strata_cluster_hits_total", ""))
                        .as("blocks the other machine's node wrote behind").isPositive();
            }
        } finally {
            cluster.stop();
            Files.deleteIfExists(rpc);
            Files.deleteIfExists(Path.of(rpc + ".lock"));
            Files.deleteIfExists(pool);
        }
    }
}
