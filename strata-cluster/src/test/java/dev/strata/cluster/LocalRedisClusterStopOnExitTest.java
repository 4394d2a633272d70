package dev.strata.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LocalRedisCluster#stopOnExit}: the nodes of a cluster that a task started for its own
 * length do not outlive the task's JVM, whether the task ends or is killed with SIGTERM, as a
 * user's interrupted {@code strata bench cluster} is.
 */
class LocalRedisClusterStopOnExitTest {
    @TempDir
    Path dir;

    /** A JVM that starts a cluster under the guard, prints its nodes' pids, and waits to be killed. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            LocalRedisCluster cluster = LocalRedisCluster.create(Path.of(args[0]), 3, 0, LocalRedisCluster.freePortBase(3), true);
            LocalRedisCluster.StopOnExit running = cluster.stopOnExit();
            try {
                cluster.start(java.time.Duration.ofSeconds(30));
                StringBuilder pids = new StringBuilder("up");
                for (LocalRedisCluster.NodeStatus s : cluster.status()) {
                    pids.append(' ').append(s.pid());
                }
                System.out.println(pids);
                System.out.flush();
                Thread.sleep(120_000);
            } finally {
                running.close();
            }
        }
    }

    @Test
    void aTaskKilledWithSigtermLeavesNoNodeRunning() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), Child.class.getName(),
                dir.resolve("cluster").toString()).redirectErrorStream(true).start();
        List<ProcessHandle> nodes = new ArrayList<>();
        try (var out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            StringBuilder seen = new StringBuilder();
            for (String line; (line = out.readLine()) != null; ) {
                seen.append(line).append('\n');
                if (line.startsWith("up ")) {
                    for (String pid : line.substring(3).split(" ")) {
                        ProcessHandle.of(Long.parseLong(pid)).ifPresent(nodes::add);
                    }
                    break;
                }
            }
            assertThat(nodes).as("the child started three nodes: %s", seen).hasSize(3).allMatch(ProcessHandle::isAlive);
            child.destroy(); // SIGTERM to the task's JVM alone
        } finally {
            if (!child.waitFor(30, TimeUnit.SECONDS)) {
                child.destroyForcibly();
            }
        }
        for (ProcessHandle node : nodes) {
            try {
                node.onExit().get(10, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                node.destroyForcibly(); // leave nothing behind this test either
            }
        }
        assertThat(nodes).as("nodes still running after the task's JVM was killed").noneMatch(ProcessHandle::isAlive);
    }

    @Test
    void closingTheGuardStopsTheCluster() {
        LocalRedisCluster cluster = LocalRedisCluster.create(dir.resolve("closed"), 3, 0, LocalRedisCluster.freePortBase(3), true);
        LocalRedisCluster.StopOnExit running = cluster.stopOnExit();
        try {
            cluster.start(java.time.Duration.ofSeconds(30));
            assertThat(cluster.status()).allMatch(s -> s.pid() != 0);
        } finally {
            running.close();
        }
        assertThat(cluster.status()).as("every node stopped").allMatch(s -> s.pid() == 0);
        // closing twice finds nothing more to stop and throws nothing
        running.close();
        assertThat(cluster.status()).allMatch(s -> s.pid() == 0);
    }
}
