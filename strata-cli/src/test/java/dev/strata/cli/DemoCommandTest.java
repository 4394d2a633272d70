package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata demo} end to end with real child processes: a node daemon and two serve instances
 * over one pool in /dev/shm, a small topic-routed MoE model, a short replay. The report's facts are
 * checked from its JSON: turns loaded blocks the other instance wrote, every output matched the
 * unpaged run, and afterwards no child lives and the pool's directory is gone.
 */
class DemoCommandTest {
    @TempDir
    Path dir;

    @Test
    void twoInstancesShareThePoolAndMatchTheUnpagedRun() throws Exception {
        Path model = dir.resolve("demo-test-moe");
        ModelSynthesizer.write(new SynthSpec(ModelFamily.QWEN3_MOE, 2, 8, 2, 64, 96, 32, 4, 2, 16, 512, DType.BF16, 11, 1, 4, false),
                model, (d, t, b, tb) -> { });
        Path json = dir.resolve("report.json");
        CliRun run = CliRun.of("demo", "--no-peer", "--model", model.toString(), "--sessions", "2", "--turns", "2", "--max-tokens", "4",
                "--expert-cap", "4", "--kv-blocks", "48", "--host-kv", "8MiB", "--pool-capacity", "32MiB", "--report-json", json.toString());
        assertThat(run.status()).as(run.out() + run.err()).isZero();
        assertThat(run.out()).contains("outputs byte-identical to an unpaged in-process run: yes (4 of 4 turns)");
        JsonNode r = new ObjectMapper().readTree(Files.readString(json));
        assertThat(r.get("requests").asInt()).isEqualTo(4);
        assertThat(r.get("byte_identical").asBoolean()).isTrue();
        assertThat(r.get("cross_instance_turns").asInt()).as("turns that loaded the other instance's blocks").isPositive();
        assertThat(r.get("cross_instance_blocks").asDouble()).isPositive();
        assertThat(r.get("kv_prefix_blocks").get("both").get("pool").asDouble()).isPositive();
        assertThat(r.get("ttft_ms").get("cold").get("turns").asInt()).isPositive();
        assertThat(r.get("expert_hit_rate").asDouble()).isBetween(0.0, 1.0);
        assertThat(r.get("children_stopped").asBoolean()).isTrue();
        assertThat(r.get("shm_removed").asBoolean()).isTrue();
        for (JsonNode pid : r.get("pids")) {
            assertThat(ProcessHandle.of(pid.asLong()).map(ProcessHandle::isAlive).orElse(false)).as("child %s alive", pid).isFalse();
        }
        assertThat(Path.of(r.get("shm_dir").asText())).doesNotExist();
        assertThat(Path.of("/dev/shm", "strata-demo-" + ProcessHandle.current().pid())).doesNotExist();
    }

    @Test
    void withAPeerAgentBothInstancesBorrowItsMemoryLoseItHalfwayAndStillMatchTheUnpagedRun() throws Exception {
        Path model = dir.resolve("demo-peer-moe");
        ModelSynthesizer.write(new SynthSpec(ModelFamily.QWEN3_MOE, 2, 8, 2, 64, 96, 32, 4, 2, 16, 512, DType.BF16, 13, 1, 4, false),
                model, (d, t, b, tb) -> { });
        Path json = dir.resolve("report-peer.json");
        CliRun run = CliRun.of("demo", "--model", model.toString(), "--sessions", "2", "--turns", "4", "--max-tokens", "4",
                "--expert-cap", "4", "--kv-blocks", "48", "--host-kv", "8MiB", "--pool-capacity", "32MiB", "--peer", "--peer-budget",
                "16MiB", "--report-json", json.toString());
        assertThat(run.status()).as(run.out() + run.err()).isZero();
        assertThat(run.out()).contains("outputs byte-identical to an unpaged in-process run: yes (8 of 8 turns)")
                .contains("peer memory (strata peer, pid");
        JsonNode r = new ObjectMapper().readTree(Files.readString(json));
        assertThat(r.get("byte_identical").asBoolean()).isTrue();
        JsonNode peer = r.get("peer");
        assertThat(peer.get("reclaimed_after_turn").asInt()).isEqualTo(2);
        assertThat(peer.get("revocations").asDouble()).as("leases the agent took back from the instances").isPositive();
        assertThat(peer.get("kv_blocks").asDouble() + peer.get("expert_fetches").asDouble()).as("KV blocks and experts served from the peer")
                .isPositive();
        assertThat(peer.get("bytes_kept_off_host_link").asDouble()).isPositive();
        assertThat(peer.get("alive").asBoolean()).isTrue();
        assertThat(r.get("children_stopped").asBoolean()).isTrue();
        assertThat(r.get("shm_removed").asBoolean()).isTrue();
        assertThat(r.get("pids")).hasSize(4);
        for (JsonNode pid : r.get("pids")) {
            assertThat(ProcessHandle.of(pid.asLong()).map(ProcessHandle::isAlive).orElse(false)).as("child %s alive", pid).isFalse();
        }
        assertThat(Path.of(r.get("shm_dir").asText())).doesNotExist();
    }

    @Test
    void anInterruptedDemoLeavesNoChildAndNoPoolBehind() throws Exception {
        Path model = dir.resolve("demo-test-moe");
        ModelSynthesizer.write(new SynthSpec(ModelFamily.QWEN3_MOE, 2, 8, 2, 64, 96, 32, 4, 2, 16, 512, DType.BF16, 12, 1, 4, false),
                model, (d, t, b, tb) -> { });
        String javaBin = System.getProperty("strata.java", Path.of(System.getProperty("java.home"), "bin", "java").toString());
        Process demo = new ProcessBuilder(javaBin, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), StrataCommand.class.getName(), "demo", "--model", model.toString(),
                "--sessions", "2", "--turns", "50", "--max-tokens", "4", "--kv-blocks", "512", "--expert-cap", "4", "--host-kv", "8MiB",
                "--pool-capacity", "32MiB").redirectErrorStream(true).start();
        List<ProcessHandle> children;
        Path shmDir = Path.of("/dev/shm", "strata-demo-" + demo.pid());
        try (var out = new BufferedReader(new InputStreamReader(demo.getInputStream(), StandardCharsets.UTF_8))) {
            StringBuilder seen = new StringBuilder();
            for (String line; (line = out.readLine()) != null; ) {
                seen.append(line).append('\n');
                if (line.contains("engine instance B ready")) {
                    break;
                }
            }
            assertThat(seen.toString()).as("the demo started its children").contains("engine instance B ready");
            children = demo.descendants().toList();
            assertThat(children).as("node and two instances").hasSizeGreaterThanOrEqualTo(3);
            assertThat(shmDir).isDirectory();
            // Ctrl-C: SIGINT to the demo alone (a terminal would also signal the children)
            assertThat(new ProcessBuilder("kill", "-INT", Long.toString(demo.pid())).start().waitFor()).isZero();
            out.transferTo(Writer.nullWriter());
        }
        assertThat(demo.waitFor(60, TimeUnit.SECONDS)).as("the demo exits").isTrue();
        for (ProcessHandle child : children) {
            child.onExit().get(15, TimeUnit.SECONDS);
            assertThat(child.isAlive()).as("child %d", child.pid()).isFalse();
        }
        assertThat(shmDir).doesNotExist();
    }

    @Test
    void badArgumentsEndWithOneLineAndStatusTwo() {
        CliRun sessions = CliRun.of("demo", "--sessions", "0", "--model", dir.toString());
        assertThat(sessions.status()).isEqualTo(2);
        assertThat(sessions.err().strip()).isEqualTo("strata: --sessions must be at least 1, got 0");
        CliRun size = CliRun.of("demo", "--host-kv", "lots", "--model", dir.toString());
        assertThat(size.status()).isEqualTo(2);
        assertThat(size.err()).contains("--host-kv").contains("lots");
    }
}
