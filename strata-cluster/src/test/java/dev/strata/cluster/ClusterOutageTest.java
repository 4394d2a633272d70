package dev.strata.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@link ClusterBlockStore} whose whole cluster stops: every call answers absent or not
 * published within its timeout and counts the error; after the cluster restarts the same store
 * works again.
 */
class ClusterOutageTest {
    private static final KvGeometry GEOMETRY = KvGeometry.of(1, 2, 16, KvDtype.FP32).withBlockTokens(4);
    private static final Duration TIMEOUT = Duration.ofMillis(300);

    @TempDir
    static Path dir;
    static LocalRedisCluster cluster;

    @BeforeAll
    static void startCluster() {
        cluster = TestClusters.start(dir.resolve("cluster"), 3, 0);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.stop();
        }
    }

    private static List<MemorySegment> block(Arena arena, int fill) {
        MemorySegment s = arena.allocate(GEOMETRY.bytesPerBlock());
        s.fill((byte) fill);
        return List.of(s);
    }

    @Test
    void aStoppedClusterAnswersAbsentWithinTheTimeoutAndTheStoreRecoversAfterARestart() {
        ObjectKey[] keys = {ObjectKey.of(1), ObjectKey.of(2), ObjectKey.of(3)};
        try (Arena arena = Arena.ofShared();
             ClusterBlockStore store = ClusterBlockStore.open(ClusterSettings.of(cluster, TIMEOUT),
                     ModelFingerprint.of("outage", GEOMETRY), GEOMETRY, Duration.ofSeconds(5))) {
            assertThat(store.publish(keys[0], block(arena, 1))).isEqualTo(PublishStatus.PUBLISHED);
            assertThat(store.publish(keys[1], block(arena, 2))).isEqualTo(PublishStatus.PUBLISHED);
            assertThat(store.awaitWrites(Duration.ofSeconds(5))).isTrue();
            assertThat(store.matchPrefix(keys, 0, 3)).isEqualTo(2);
            assertThat(store.metrics().errors()).isZero();

            assertThat(cluster.stop()).isEqualTo(3);
            List<MemorySegment> into = List.of(arena.allocate(GEOMETRY.bytesPerBlock()));
            assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
                for (int round = 0; round < 5; round++) {
                    assertThat(store.matchPrefix(keys, 0, 3)).isZero();
                    assertThat(store.read(keys[0], into)).isFalse();
                    // sent and failed, or not sent while the cluster is marked unavailable: never stored
                    assertThat(store.publish(keys[2], block(arena, 3))).isIn(PublishStatus.PUBLISHED, PublishStatus.FULL);
                }
                assertThat(store.awaitWrites(Duration.ofSeconds(5))).isTrue();
            });
            // every call either failed (counted by kind, which marks the cluster unavailable) or skipped it
            assertThat(store.metrics().errors()).isPositive();
            assertThat(store.metrics().errors() + store.metrics().skipped()).isGreaterThanOrEqualTo(15);
            assertThat(store.metrics().dropped()).isEqualTo(5);
            assertThat(store.metrics().published()).isEqualTo(2);
            assertThat(into.getFirst().get(ValueLayout.JAVA_BYTE, 0)).isZero();

            cluster.start(Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            long published = store.metrics().published();
            while (store.metrics().published() == published && System.nanoTime() < deadline) {
                store.publish(keys[0], block(arena, 1)); // the cluster kept its shape but not its data
                store.awaitWrites(Duration.ofSeconds(5));
                if (store.metrics().published() == published) {
                    sleep(100);
                }
            }
            assertThat(store.metrics().published()).isEqualTo(published + 1);
            assertThat(store.matchPrefix(keys, 0, 3)).isEqualTo(1);
            assertThat(store.read(keys[0], into)).isTrue();
            assertThat(into.getFirst().get(ValueLayout.JAVA_BYTE, GEOMETRY.bytesPerBlock() - 1)).isEqualTo((byte) 1);
        }
    }

    @Test
    void aServerStartedWhileTheClusterIsDownServesWithoutItAndConnectsWhenItComesUp() {
        assertThat(cluster.stop()).isEqualTo(3);
        ObjectKey[] keys = {ObjectKey.of(11)};
        try (Arena arena = Arena.ofShared();
             ClusterBlockStore store = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> ClusterBlockStore.openOrConnectLater(
                     ClusterSettings.of(cluster, TIMEOUT), ModelFingerprint.of("late", GEOMETRY), GEOMETRY, Duration.ofSeconds(2),
                     Duration.ofMillis(200)))) {
            assertThat(store.connected()).isFalse();
            assertThat(store.matchPrefix(keys, 0, 1)).isZero();
            assertThat(store.read(keys[0], List.of(arena.allocate(GEOMETRY.bytesPerBlock())))).isFalse();
            assertThat(store.publish(keys[0], block(arena, 4))).isEqualTo(PublishStatus.FULL);
            dev.strata.memory.metrics.PrometheusText text = new dev.strata.memory.metrics.PrometheusText();
            store.writeMetrics(text);
            assertThat(text.toString()).contains("strata_cluster_available 0");
            assertThat(store.metrics().skipped()).isEqualTo(3);

            cluster.start(Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (!store.connected() && System.nanoTime() < deadline) {
                sleep(50);
            }
            assertThat(store.connected()).as("the store connected by itself").isTrue();
            assertThat(store.publish(keys[0], block(arena, 4))).isEqualTo(PublishStatus.PUBLISHED);
            assertThat(store.awaitWrites(Duration.ofSeconds(5))).isTrue();
            assertThat(store.matchPrefix(keys, 0, 1)).isEqualTo(1);
        } finally {
            cluster.start(Duration.ofSeconds(30));
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
