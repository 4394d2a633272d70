package dev.strata.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ports of a local cluster: they are picked below the kernel's ephemeral range, where no outgoing
 * connection can take one between the check and the node's bind; and a node whose port another
 * process holds fails the start at once, naming the port, rather than passing for a node because
 * something answers there.
 */
class LocalRedisClusterPortsTest {
    @TempDir
    Path dir;

    @Test
    void portsArePickedBelowTheEphemeralRange() {
        int start = LocalRedisCluster.ephemeralPortsStart();
        for (int i = 0; i < 20; i++) {
            int base = LocalRedisCluster.freePortBase(6);
            assertThat(base).isGreaterThanOrEqualTo(10_000);
            assertThat(base + 10_000 + 6).as("the last bus port, against the ephemeral range starting at %d", start)
                    .isLessThanOrEqualTo(start);
        }
    }

    @Test
    void aNodeWhosePortIsTakenFailsTheStartNamingThePort() throws Exception {
        int base = LocalRedisCluster.freePortBase(3);
        try (ServerSocket _ = new ServerSocket(base, 1, InetAddress.getByName(LocalRedisCluster.HOST))) { // holds the first node's port
            LocalRedisCluster cluster = LocalRedisCluster.create(dir, 3, 0, base, true, LocalRedisCluster.DEFAULT_MAXMEMORY,
                    "allkeys-lru");
            try {
                assertThatThrownBy(() -> cluster.start(Duration.ofSeconds(30))).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("redis-server for " + LocalRedisCluster.HOST + ":" + base + " exited")
                        .hasMessageContaining("Address already in use");
                for (int port = base + 1; port < base + 3; port++) { // the failed start stopped the nodes it had started...
                    assertThat(accepts(port)).as("node on port %d still running after the failed start", port).isFalse();
                }
                try (var processes = ProcessHandle.current().children()) { // ...and waited for them: none still shutting down
                    assertThat(processes.filter(p -> p.info().command().orElse("").endsWith("redis-server")).toList())
                            .as("redis-server processes of this JVM after the failed start").isEmpty();
                }
            } finally {
                cluster.stop();
            }
        }
    }

    private static boolean accepts(int port) {
        try (java.net.Socket s = new java.net.Socket()) {
            s.connect(new java.net.InetSocketAddress(LocalRedisCluster.HOST, port), 200);
            return true;
        } catch (java.io.IOException e) {
            return false;
        }
    }
}
