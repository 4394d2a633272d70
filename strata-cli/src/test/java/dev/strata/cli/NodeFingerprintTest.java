package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.serve.ServeEngine;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.node.daemon.NodeDaemon;
import dev.strata.node.index.PoolIndexInspector;
import dev.strata.node.index.IndexStats;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code strata node} started without {@code node.model-fingerprint} learns the model (and the
 * block-hash version) from the first server that attaches, keeps it in the pool's index, and
 * refuses a server of another model with one clear line that names both fingerprints and the way
 * out, never a stack trace.
 */
class NodeFingerprintTest {
    @TempDir
    static Path dir;
    static Path modelA;
    static Path modelB;

    private final String unique = "strata-fingerprint-test-" + ProcessHandle.current().pid();
    private final Path rpc = Path.of("/dev/shm", unique + ".rpc");
    private final Path pool = Path.of("/dev/shm", unique + ".pool");

    @BeforeAll
    static void models() throws Exception {
        SynthSpec spec = new SynthSpec(ModelFamily.QWEN3_MOE, 2, 8, 2, 64, 96, 32, 4, 2, 16, 512, DType.BF16, 21, 1, 4, false);
        modelA = dir.resolve("tiny-a");
        modelB = dir.resolve("tiny-b");
        ModelSynthesizer.write(spec, modelA, (d, t, b, tb) -> { });
        ModelSynthesizer.write(spec, modelB, (d, t, b, tb) -> { });
    }

    @AfterEach
    void removeFiles() throws Exception {
        Files.deleteIfExists(rpc);
        Files.deleteIfExists(Path.of(rpc + ".lock"));
        Files.deleteIfExists(pool);
    }

    private StrataConfig config(List<String> defaults, Path model) {
        return ConfigLoader.load(defaults, null, List.of("model.path=" + model, "server.port=0", "server.threads=1",
                "node.rpc=" + rpc, "node.access=daemon", "node.channels=4", "tiers.pool.paths=[" + pool + "]",
                "tiers.pool.capacity=64MiB", "kv.device-blocks=32", "experts.device-slots=4"), null, List.of()).conclude();
    }

    @Test
    void nodeWithoutFingerprintLearnsItFromTheFirstServerAndRefusesAnotherModelClearly() throws Exception {
        String fingerprintA = ServeEngine.fingerprint(modelA, 16).toString();
        String fingerprintB = ServeEngine.fingerprint(modelB, 16).toString();
        assertThat(fingerprintA).as("two model directories, two fingerprints").isNotEqualTo(fingerprintB);
        StrataConfig nodeConfig = config(NodeCommand.DEFAULTS, modelA);
        assertThat(nodeConfig.process().node().modelFingerprint()).as("the node is given no fingerprint").isNull();
        ByteArrayOutputStream nodeOut = new ByteArrayOutputStream();
        try (NodeDaemon node = NodeDaemon.start(NodeCommand.nodeConfig(nodeConfig, true), new PrintStream(nodeOut, true, StandardCharsets.UTF_8))) {
            try (ServeCommand.Running a = ServeCommand.start(config(ServeFlags.DEFAULTS, modelA))) {
                assertThat(nodeOut.toString(StandardCharsets.UTF_8)).contains("strata node ready").contains("learned from the first server");
                ExamplesTest.complete("http://127.0.0.1:" + a.port(), ExamplesTest.prompt(3, 40));
                assertThat(node.index().modelFingerprint().toString()).as("the node learned model A").isEqualTo(fingerprintA);
                assertThat(node.index().hashVersion()).as("and its block-hash version").isEqualTo(PrefixHasher.VERSION);
                IndexStats stored = PoolIndexInspector.inspect(List.of(pool)).orElseThrow();
                assertThat(stored.modelFingerprint().toString()).as("kept in the pool's index").isEqualTo(fingerprintA);

                CliRun b = assertTimeoutPreemptively(Duration.ofSeconds(120), () -> CliRun.of("serve", "--model", modelB.toString(),
                        "--port", "0", "--threads", "1", "--pool", pool.toString(), "--pool-capacity", "64MiB", "--node-access", "DAEMON",
                        "--rpc", rpc.toString()));
                assertThat(b.status()).as(b.out() + b.err() + b.log()).isEqualTo(2);
                assertThat(b.err()).contains(fingerprintA).contains(fingerprintB).contains("node.model-fingerprint")
                        .contains("another strata node");
                assertThat(b.err().lines()).as("one line").hasSize(1);
                assertThat(b.err() + b.log()).as("no stack trace").doesNotContain("Exception").doesNotContain("\tat ");

                ExamplesTest.complete("http://127.0.0.1:" + a.port(), ExamplesTest.prompt(4, 40)); // A still serves
            }
        }
        // started again on the same pool, still without a fingerprint: the node keeps what it learned
        ByteArrayOutputStream again = new ByteArrayOutputStream();
        try (NodeDaemon node = NodeDaemon.start(NodeCommand.nodeConfig(nodeConfig, true), new PrintStream(again, true, StandardCharsets.UTF_8))) {
            assertThat(node.index().modelFingerprint().toString()).isEqualTo(fingerprintA);
            assertThat(again.toString(StandardCharsets.UTF_8)).contains("model " + fingerprintA);
        }
    }
}
