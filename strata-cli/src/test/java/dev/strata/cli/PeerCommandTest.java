package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.peer.LentRegion;
import dev.strata.node.peer.LendingStats;
import dev.strata.node.peer.ShmPeerLender;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@code strata peer}: its flags and errors, and a real agent process lending, revoking and stopping on SIGTERM. */
class PeerCommandTest {

    @Test
    void flagsAreCheckedWithClearErrors() {
        CliRun noBudget = CliRun.of("peer", "--file", "/dev/shm/strata-peer-cli-unused.lend");
        assertThat(noBudget.status()).isEqualTo(2);
        assertThat(noBudget.err()).contains("--budget");
        CliRun badDemand = CliRun.of("peer", "--budget", "1MiB", "--demand", "wish:5");
        assertThat(badDemand.status()).isEqualTo(2);
        assertThat(badDemand.err()).contains("unknown kind 'wish'");
        CliRun badRegion = CliRun.of("peer", "--budget", "1MiB", "--region", "100");
        assertThat(badRegion.status()).isEqualTo(2);
        assertThat(badRegion.err()).contains("region size 100");
        CliRun badSize = CliRun.of("peer", "--budget", "heaps");
        assertThat(badSize.err().strip()).startsWith("strata: --budget (agent.budget): not a size: 'heaps'");
        assertThat(StrataCommand.commandLine().getSubcommands().get("peer").getUsageMessage())
                .contains("--demand").contains("trace:PATH");
    }

    @Test
    void anAgentProcessLendsRevokesAndStopsOnSigterm() throws Exception {
        Path file = Path.of("/dev/shm", "strata-peer-cli-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + ".lend");
        Path demand = Path.of(file + ".demand");
        String java = System.getProperty("strata.java", ProcessHandle.current().info().command().orElse("java"));
        Process agent = new ProcessBuilder(java, "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-Xmx128m", "-cp", System.getProperty("java.class.path"), StrataCommand.class.getName(), "peer",
                "--file", file.toString(), "--budget", "256KiB", "--region", "64KiB", "--demand", "file:" + demand,
                "--grace-ms", "200").redirectErrorStream(true).start();
        LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) {
                    lines.add(l);
                }
            } catch (java.io.IOException ignored) {
                // the agent is gone
            }
        });
        try {
            String ready = expect(lines, "strata peer ready", agent);
            assertThat(ready).contains("4 regions of 64 KiB").contains("demand read from " + demand);
            try (ShmPeerLender lender = ShmPeerLender.open(file, 0)) {
                LentRegion r = lender.borrow(3 * 65536 - 7);
                assertThat(r).isNotNull();
                assertThat(r.enter()).isTrue();
                r.memory().fill((byte) 0x5A);
                r.exit();
                Path temp = Path.of(demand + ".tmp");
                Files.writeString(temp, "128KiB");
                Files.move(temp, demand, StandardCopyOption.ATOMIC_MOVE);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                LendingStats s = lender.stats();
                while ((s.acknowledged() < 1 || s.held() != 2) && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                    s = lender.stats();
                }
                assertThat(s.acknowledged()).as("revoked and acknowledged by the lender itself").isEqualTo(1);
                assertThat(s.held()).isEqualTo(2);
                assertThat(r.enter()).isFalse();
                agent.toHandle().destroy(); // SIGTERM (Process.destroy would also close our end of its output)
                expect(lines, "strata peer stopped", agent);
                deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (lender.alive() && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                }
                assertThat(lender.alive()).isFalse();
                assertThat(lender.lostBecause()).contains("stopped");
            }
            assertThat(agent.waitFor(10, TimeUnit.SECONDS)).isTrue();
            assertThat(Files.exists(file)).as("the agent removes its file").isFalse();
        } finally {
            agent.destroyForcibly();
            Files.deleteIfExists(file);
            Files.deleteIfExists(demand);
            Files.deleteIfExists(Path.of(file + ".lock"));
        }
    }

    private static String expect(LinkedBlockingQueue<String> lines, String prefix, Process p) throws InterruptedException {
        List<String> seen = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            String l = lines.poll(100, TimeUnit.MILLISECONDS);
            if (l == null) {
                continue;
            }
            if (l.startsWith(prefix)) {
                return l;
            }
            seen.add(l);
        }
        throw new AssertionError("no line starting with '" + prefix + "' from pid " + p.pid() + "; saw " + seen);
    }
}
