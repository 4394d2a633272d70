package dev.strata.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import dev.strata.memory.metrics.PrometheusText;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ClusterBlockStore} over TLS against two real local Redis Clusters of 3 primaries that
 * listen only with TLS and speak it among themselves: one that asks nothing of clients, one that
 * requires client certificates (mutual TLS). Blocks travel with the CA file; a client trusting
 * another CA, a plain client and (with mutual TLS) a client without certificate are refused with
 * an error that says what to check, and never hang a server, which serves without the cluster.
 */
class ClusterTlsTest {
    private static final KvGeometry GEOMETRY = KvGeometry.of(1, 2, 16, KvDtype.FP32).withBlockTokens(4);
    private static final ObjectKey MODEL = ModelFingerprint.of("tls-test", GEOMETRY);
    private static final Duration TIMEOUT = Duration.ofSeconds(2);
    private static final Duration CONNECT = Duration.ofSeconds(3);

    @TempDir
    static Path dir;
    static LocalRedisCluster tls;    // tls-auth-clients optional
    static LocalRedisCluster mutual; // tls-auth-clients yes
    static LocalCertificates otherCa;

    @BeforeAll
    static void startClusters() {
        tls = TestClusters.start(dir.resolve("tls"), 3, 0, LocalRedisCluster.Tls.ON);
        mutual = TestClusters.start(dir.resolve("mutual"), 3, 0, LocalRedisCluster.Tls.MUTUAL);
        otherCa = LocalCertificates.ensure(dir.resolve("other-ca"));
    }

    @AfterAll
    static void stopClusters() {
        for (LocalRedisCluster c : new LocalRedisCluster[] {tls, mutual}) {
            if (c != null) {
                c.stop();
            }
        }
    }

    private static List<MemorySegment> block(Arena arena, int fill) {
        MemorySegment s = arena.allocate(GEOMETRY.bytesPerBlock());
        s.fill((byte) fill);
        return List.of(s);
    }

    /** Publishes blocks spread over every primary's slots and reads each back through {@code store}. */
    private static void roundTrip(ClusterBlockStore store, int first) {
        try (Arena arena = Arena.ofShared()) {
            ObjectKey[] keys = new ObjectKey[12];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = ObjectKey.of(first + i);
                assertThat(store.publish(keys[i], block(arena, first + i))).isEqualTo(PublishStatus.PUBLISHED);
            }
            assertThat(store.awaitWrites(Duration.ofSeconds(5))).isTrue();
            assertThat(store.metrics().published()).isEqualTo(keys.length);
            assertThat(store.matchPrefix(keys, 0, keys.length)).isEqualTo(keys.length);
            MemorySegment into = arena.allocate(GEOMETRY.bytesPerBlock());
            for (int i = 0; i < keys.length; i++) {
                assertThat(store.read(keys[i], List.of(into))).isTrue();
                assertThat(into.get(ValueLayout.JAVA_BYTE, GEOMETRY.bytesPerBlock() - 1)).isEqualTo((byte) (first + i));
            }
            assertThat(store.metrics().errors()).isZero();
        }
    }

    @Test
    void theLocalClusterKeepsItsKeysPrivateAndListensOnlyWithTls() throws Exception {
        LocalCertificates c = tls.certificates();
        for (Path key : List.of(c.caKey(), c.nodeKey(), c.clientKey())) {
            assertThat(Files.getPosixFilePermissions(key)).containsExactlyInAnyOrder(PosixFilePermission.OWNER_READ,
                    PosixFilePermission.OWNER_WRITE);
        }
        assertThat(Files.readString(tls.dir().resolve("node-" + tls.ports().getFirst()).resolve("redis.conf")))
                .contains("port 0\n", "tls-port " + tls.ports().getFirst() + "\n", "tls-cluster yes\n", "tls-auth-clients optional\n");
        assertThat(tls.status()).extracting(LocalRedisCluster.NodeStatus::clusterState).containsOnly("ok");
        assertThat(LocalRedisCluster.open(mutual.dir()).tls()).isEqualTo(LocalRedisCluster.Tls.MUTUAL);
    }

    @Test
    void blocksArePublishedAndLoadedOverTlsTrustingTheCaFile() {
        ClusterSettings s = ClusterSettings.of(tls, TIMEOUT);
        assertThat(s.tls()).isTrue();
        assertThat(s.tlsFiles().caFile()).isEqualTo(tls.certificates().caCert());
        assertThat(s.tlsFiles().certFile()).isNull();
        try (ClusterBlockStore store = ClusterBlockStore.open(s, MODEL, GEOMETRY, CONNECT)) {
            roundTrip(store, 10);
        }
    }

    @Test
    void aClientTrustingAnotherCaIsRefusedClearlyAndAServerGoesOnWithoutTheCluster() {
        ClusterSettings wrong = ClusterSettings.of(tls, TIMEOUT).withTls(new ClusterSettings.TlsFiles(otherCa.caCert(), null, null,
                StrataConfig.ClusterTlsVerify.FULL));
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> assertThatThrownBy(() -> ClusterBlockStore.open(wrong, MODEL, GEOMETRY,
                CONNECT)).isInstanceOf(ClusterBlockStore.OpenFailure.class)
                .hasMessageContaining(tls.nodes().getFirst()).hasMessageContaining("TLS handshake failed")
                .hasMessageContaining(otherCa.caCert().toString())
                .satisfies(e -> assertThat(((ClusterBlockStore.OpenFailure) e).credentialsRefused()).isFalse()));

        try (Arena arena = Arena.ofShared();
             ClusterBlockStore store = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> ClusterBlockStore.openOrConnectLater(
                     wrong, MODEL, GEOMETRY, CONNECT, Duration.ofMillis(200)))) {
            assertThat(store.connected()).isFalse();
            ObjectKey[] keys = {ObjectKey.of(40)};
            assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
                assertThat(store.matchPrefix(keys, 0, 1)).isZero();
                assertThat(store.read(keys[0], List.of(arena.allocate(GEOMETRY.bytesPerBlock())))).isFalse();
                assertThat(store.publish(keys[0], block(arena, 4))).isEqualTo(PublishStatus.FULL);
            });
            assertThat(store.metrics().skipped()).isEqualTo(3);
            PrometheusText text = new PrometheusText();
            store.writeMetrics(text);
            assertThat(text.toString()).contains("strata_cluster_available 0");
            sleep(600); // a few retries in the background: the wrong CA is refused each time, the store stays apart
            assertThat(store.connected()).isFalse();
        }
    }

    @Test
    void aPlainClientIsRefusedWithAHintToTurnTlsOn() {
        ClusterSettings plain = ClusterSettings.of(tls, TIMEOUT).withoutTls();
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> assertThatThrownBy(() -> ClusterBlockStore.open(plain, MODEL, GEOMETRY,
                CONNECT)).isInstanceOf(ClusterBlockStore.OpenFailure.class)
                .hasMessageContaining(tls.nodes().getFirst()).hasMessageContaining("set tiers.cluster.tls: true"));
    }

    @Test
    void withMutualTlsAClientWithoutCertificateIsRefusedAndOneWithTheCertificateWorks() {
        ClusterSettings withCert = ClusterSettings.of(mutual, TIMEOUT);
        assertThat(withCert.tlsFiles().certFile()).isEqualTo(mutual.certificates().clientCert());
        ClusterSettings noCert = withCert.withTls(new ClusterSettings.TlsFiles(mutual.certificates().caCert(), null, null,
                StrataConfig.ClusterTlsVerify.FULL));
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> assertThatThrownBy(() -> ClusterBlockStore.open(noCert, MODEL, GEOMETRY,
                CONNECT)).isInstanceOf(ClusterBlockStore.OpenFailure.class)
                .hasMessageContaining(mutual.nodes().getFirst()).hasMessageContaining("tls-cert-file"));
        try (ClusterBlockStore store = ClusterBlockStore.open(withCert, MODEL, GEOMETRY, CONNECT)) {
            roundTrip(store, 60);
        }
    }

    @Test
    void verifyNoneConnectsWithoutTrustingTheNodesCertificates() {
        ClusterSettings none = ClusterSettings.of(tls, TIMEOUT).withTls(new ClusterSettings.TlsFiles(otherCa.caCert(), null, null,
                StrataConfig.ClusterTlsVerify.NONE));
        try (ClusterBlockStore store = ClusterBlockStore.open(none.withTenant("unverified"), MODEL, GEOMETRY, CONNECT)) {
            roundTrip(store, 80);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
