package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cluster.ClusterBlockStore;
import dev.strata.cluster.ClusterSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata cluster up --tls-auth-clients}: a local cluster with mutual TLS whose printed
 * settings (nodes, password file, CA, client certificate and key) are all a client needs to reach
 * it; {@code status} and {@code down} reach its nodes over TLS too.
 */
class ClusterTlsCommandTest {
    @TempDir
    Path dir;

    @Test
    void theSettingsPrintedByUpReachAMutualTlsCluster() {
        Path clusterDir = dir.resolve("cluster");
        int base = dev.strata.cluster.LocalRedisCluster.freePortBase(3);
        try {
            CliRun up = CliRun.of("cluster", "up", "--dir", clusterDir.toString(), "--replicas", "0", "--port-base", Integer.toString(base),
                    "--tls-auth-clients");
            assertThat(up.status()).as(up.err() + up.log()).isZero();
            assertThat(up.out()).contains("mutual TLS", "tiers.cluster.tls=true", "tiers.cluster.tls-ca-file=" + clusterDir.resolve("tls/ca.crt"),
                    "tiers.cluster.tls-cert-file=" + clusterDir.resolve("tls/client.crt"),
                    "tiers.cluster.tls-key-file=" + clusterDir.resolve("tls/client.key"));
            String line = up.out().lines().filter(l -> l.startsWith("reach it with: ")).findFirst().orElseThrow();
            List<String> settings = Arrays.stream(line.substring("reach it with: ".length()).split(" ?--set ")).filter(s -> !s.isBlank())
                    .toList();
            ClusterSettings s = ClusterSettings.from(ConfigLoader.load(null, settings, null).cluster(), Map.of());
            KvGeometry geometry = KvGeometry.of(1, 2, 16, KvDtype.FP32).withBlockTokens(4);
            try (ClusterBlockStore store = ClusterBlockStore.open(s, ModelFingerprint.of("tls-cli", geometry), geometry, Duration.ofSeconds(5))) {
                assertThat(store.connected()).isTrue();
            }
            CliRun status = CliRun.of("cluster", "status", "--dir", clusterDir.toString());
            assertThat(status.status()).as(status.out()).isZero();
            assertThat(status.out().lines().skip(1)).hasSize(3).allMatch(l -> l.contains("master") && l.endsWith("ok"));
        } finally {
            CliRun down = CliRun.of("cluster", "down", "--dir", clusterDir.toString());
            assertThat(down.out()).contains("stopped 3 of 3 nodes");
        }
    }
}
