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
import java.io.IOException;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata demo} end to end with real child processes: a node daemon and two serve instances
 * over one pool in /dev/shm, a topic-routed MoE model, a short replay. The report's facts are
 * checked from its JSON: turns loaded blocks the other instance wrote, every tier of the default
 * run (every size its default, the demo model) served blocks (and a column left empty says why),
 * every output matched the unpaged run, and afterwards no child lives and the pool's directory is
 * gone. With {@code --machines 2} the two machines share KV through a real local Redis Cluster the
 * demo starts and stops itself.
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
        Path config = Files.writeString(dir.resolve("strata.yaml"), "store:\n  promotion: never\n");
        CliRun run = CliRun.of("demo", "--no-peer", "--model", model.toString(), "--sessions", "2", "--turns", "2", "--max-tokens", "4",
                "--expert-cap", "4", "--kv-blocks", "48", "--host-kv", "8MiB", "--pool-capacity", "32MiB", "--report-json", json.toString(),
                "-c", config.toString(), "--set", "server.max-body=2MiB");
        assertThat(run.status()).as(run.out() + run.err()).isZero();
        assertThat(run.out()).as("every child started over the user's configuration").contains("; over -c " + config
                + " --set server.max-body=2MiB");
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
        // two turns per session: no instance asks again for a block of its own, so HOST and DISK stay empty, and say why
        JsonNode both = r.get("kv_prefix_blocks").get("both");
        assertThat(both.get("host").asDouble()).isZero();
        assertThat(both.get("disk").asDouble()).isZero();
        assertThat(run.out()).contains("    PEER: no strata peer agent in this run (--no-peer)")
                .contains("    HOST 0.0%: every block asked for again was still in DEVICE, or found in the pool first; lower --kv-blocks (now 48)")
                .contains("    DISK 0.0%: every block asked for again was still in DEVICE, in HOST or found in the pool first");
        assertThat(r.get("empty_columns")).hasSize(3);
    }

    @Test
    void theDefaultRunServesBlocksFromEveryTierLosesThePeerHalfwayAndStillMatchesTheUnpagedRun() throws Exception {
        Path json = dir.resolve("report-default.json");
        // what `bin/strata demo` runs: every size its default, the demo model written on first use (here into a fresh directory)
        CliRun run = CliRun.of("demo", "--models-dir", dir.resolve("models").toString(), "--report-json", json.toString());
        String detail = run.out() + run.err() + (Files.exists(json) ? Files.readString(json) : "");
        assertThat(run.status()).as(detail).isZero();
        DemoCommand defaults = new DemoCommand();
        int turns = defaults.sessions * defaults.turns;
        assertThat(run.out()).contains("outputs byte-identical to an unpaged in-process run: yes (" + turns + " of " + turns + " turns)")
                .contains("peer memory (strata peer, pid");
        JsonNode r = new ObjectMapper().readTree(Files.readString(json));
        assertThat(r.get("byte_identical").asBoolean()).isTrue();
        JsonNode both = r.get("kv_prefix_blocks").get("both");
        for (String tier : List.of("device", "host", "disk", "pool", "computed", "peer")) {
            assertThat(both.get(tier).asDouble()).as("prefix blocks found in %s: %s", tier, detail).isPositive();
        }
        assertThat(r.get("empty_columns")).as(detail).isEmpty();
        // each instance splits a budget sized from the model between expert slots and KV blocks, and reports where it ended
        for (String instance : List.of("A", "B")) {
            JsonNode split = r.get("split").get(instance);
            assertThat(split.isObject()).as("the split of %s: %s", instance, detail).isTrue();
            long budget = split.get("budget_bytes").asLong();
            assertThat(split.get("expert_bytes").asLong()).as(detail).isPositive();
            assertThat(split.get("kv_bytes").asLong()).as(detail).isPositive();
            assertThat(split.get("expert_bytes").asLong() + split.get("kv_bytes").asLong()).as(detail).isLessThanOrEqualTo(budget);
            assertThat(split.get("expert_slots_per_layer").asInt()).as(detail).isPositive();
            assertThat(split.get("kv_blocks").asLong()).as("the KV floor holds: %s", detail).isGreaterThanOrEqualTo(defaults.kvBlocks);
            assertThat(split.get("resizes_applied").asLong()).isNotNegative();
            assertThat(split.get("resizes_failed").asLong()).isNotNegative();
            assertThat(run.out()).contains(String.format(java.util.Locale.ROOT,
                    "  split on %s: ended on %d expert slots per layer (%s) and %d KV blocks (%s) of its %s budget; %d resizes applied, %d failed",
                    instance, split.get("expert_slots_per_layer").asInt(), dev.strata.memory.Sizes.format(split.get("expert_bytes").asLong()),
                    split.get("kv_blocks").asLong(), dev.strata.memory.Sizes.format(split.get("kv_bytes").asLong()),
                    dev.strata.memory.Sizes.format(budget), split.get("resizes_applied").asLong(), split.get("resizes_failed").asLong()));
        }
        JsonNode peer = r.get("peer");
        assertThat(peer.get("reclaimed_after_turn").asInt()).isEqualTo((defaults.turns + 1) / 2);
        assertThat(peer.get("revocations").asDouble()).as("leases the agent took back from the instances").isPositive();
        assertThat(peer.get("kv_blocks").asDouble()).as("KV blocks served from the peer").isPositive();
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
    void twoMachinesShareKvOnlyThroughALocalRedisClusterAndMatchTheUnpagedRun() throws Exception {
        Path model = dir.resolve("demo-machines-moe");
        ModelSynthesizer.write(new SynthSpec(ModelFamily.QWEN3_MOE, 2, 8, 2, 64, 96, 32, 4, 2, 16, 512, DType.BF16, 14, 1, 4, false),
                model, (d, t, b, tb) -> { });
        Path json = dir.resolve("report-machines.json");
        // three sessions of two turns: session 0's first turn on A is cold, session 1's on B finds the shared system prompt that
        // A wrote in the cluster, session 2's on A finds it in A's own tiers
        CliRun run = CliRun.of("demo", "--machines", "2", "--model", model.toString(), "--sessions", "3", "--turns", "2", "--max-tokens", "4",
                "--expert-cap", "4", "--kv-blocks", "48", "--host-kv", "8MiB", "--pool-capacity", "32MiB", "--report-json", json.toString());
        String detail = run.out() + run.err() + run.log() + (Files.exists(json) ? Files.readString(json) : "");
        assertThat(run.status()).as(detail).isZero();
        assertThat(run.out()).contains("outputs byte-identical to an unpaged in-process run: yes (6 of 6 turns)")
                .contains("two machines on this host, each a strata node over its own pool");
        JsonNode r = new ObjectMapper().readTree(Files.readString(json));
        assertThat(r.get("machines").asInt()).isEqualTo(2);
        assertThat(r.get("byte_identical").asBoolean()).isTrue();
        JsonNode cluster = r.get("cluster");
        assertThat(cluster.get("A").get("written_bytes").asDouble()).as("bytes A published to the cluster: %s", detail).isPositive();
        assertThat(cluster.get("B").get("hits").asDouble()).as("blocks B loaded from the cluster, written by A: %s", detail).isPositive();
        assertThat(cluster.get("B").get("read_bytes").asDouble()).as(detail).isPositive();
        assertThat(cluster.get("blocks").asDouble()).isPositive();
        assertThat(r.get("kv_prefix_blocks").get("both").get("cluster").asDouble()).as(detail).isPositive();
        JsonNode firstOnB = null;
        for (JsonNode t : r.get("turns_detail")) {
            if (t.get("label").asText().equals("session 1 turn 0")) {
                firstOnB = t;
            }
        }
        assertThat(firstOnB).as(detail).isNotNull();
        assertThat(firstOnB.get("instance").asText()).isEqualTo("B");
        assertThat(firstOnB.get("cluster").asDouble()).as("the system prompt A wrote, found in the cluster by B: %s", detail).isPositive();
        assertThat(firstOnB.get("warmth").asText()).isEqualTo("CLUSTER");
        JsonNode ttft = r.get("ttft_ms");
        for (String kind : List.of("cold", "local", "cluster")) {
            assertThat(ttft.get(kind).get("turns").asInt()).as("%s turns: %s", kind, detail).isPositive();
            assertThat(ttft.get(kind).get("median").asDouble()).as("%s TTFT: %s", kind, detail).isPositive();
        }
        assertThat(run.out()).contains("cold (nothing cached)").contains("warm, this machine's tiers and pool")
                .contains("warm, from the cluster (other machine)");
        // every process is gone: both nodes, both instances and the cluster's nodes
        assertThat(r.get("children_stopped").asBoolean()).isTrue();
        assertThat(r.get("pids")).hasSize(4);
        for (JsonNode pid : r.get("pids")) {
            assertThat(ProcessHandle.of(pid.asLong()).map(ProcessHandle::isAlive).orElse(false)).as("child %s alive", pid).isFalse();
        }
        assertThat(cluster.get("nodes_stopped").asInt()).isEqualTo(3);
        assertThat(cluster.get("nodes")).hasSize(3);
        for (JsonNode node : cluster.get("nodes")) {
            String[] hostPort = node.asText().split(":");
            assertThat(listening(hostPort[0], Integer.parseInt(hostPort[1]))).as("%s still listening", node).isFalse();
        }
        assertThat(r.get("shm_removed").asBoolean()).isTrue();
        assertThat(Path.of(r.get("shm_dir").asText())).doesNotExist();
    }

    private static boolean listening(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void twoMachinesWithoutRedisServerEndAtOnceNamingTheInstallCommand() throws Exception {
        String javaBin = System.getProperty("strata.java", Path.of(System.getProperty("java.home"), "bin", "java").toString());
        ProcessBuilder pb = new ProcessBuilder(javaBin, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), StrataCommand.class.getName(), "demo", "--machines", "2", "--model",
                dir.resolve("no-model-needed").toString()).redirectErrorStream(true);
        pb.environment().put("PATH", dir.resolve("empty-bin").toString()); // no redis-server on it
        Process demo = pb.start();
        String out = new String(demo.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(demo.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(demo.exitValue()).as(out).isEqualTo(2);
        assertThat(out).contains("redis-server is not on the PATH").contains("apt-get install -y redis-server")
                .doesNotContain("starting strata node");
        assertThat(Path.of("/dev/shm", "strata-demo-" + demo.pid())).doesNotExist();
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
        CliRun setting = CliRun.of("demo", "--set", "store.promotion=sideways", "--model", dir.toString());
        assertThat(setting.status()).as("a bad setting ends the demo before any child starts").isEqualTo(2);
        assertThat(setting.err()).contains("store.promotion").contains("sideways");
        CliRun file = CliRun.of("demo", "-c", dir.resolve("missing.yaml").toString(), "--model", dir.toString());
        assertThat(file.status()).isEqualTo(2);
        assertThat(file.err()).contains("missing.yaml");
        CliRun machines = CliRun.of("demo", "--machines", "3", "--model", dir.toString());
        assertThat(machines.status()).isEqualTo(2);
        assertThat(machines.err().strip()).isEqualTo("strata: --machines must be 1 or 2, got 3");
    }
}
