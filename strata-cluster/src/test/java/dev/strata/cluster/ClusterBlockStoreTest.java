package dev.strata.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import dev.strata.memory.metrics.PrometheusText;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ClusterBlockStore} against a real local Redis Cluster of 3 primaries and 3 replicas:
 * round trips, sharing between two machines' stores, corrupt values, credentials.
 */
class ClusterBlockStoreTest {
    private static final KvGeometry GEOMETRY = KvGeometry.of(2, 2, 16, KvDtype.FP16).withBlockTokens(4); // 1 KiB blocks
    private static final ObjectKey MODEL = ModelFingerprint.of("cluster-test", GEOMETRY);
    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    @TempDir
    static Path dir;
    static LocalRedisCluster cluster;
    static ClusterSettings settings;
    static ClusterBlockStore machineA;
    static ClusterBlockStore machineB;
    static RedisClusterClient raw;
    static StatefulRedisClusterConnection<String, byte[]> rawConnection;
    private static final Arena ARENA = Arena.ofShared();
    private static long nextKey = new Random().nextLong();

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = TestClusters.start(dir.resolve("cluster"), 3, 1);
        settings = ClusterSettings.of(cluster, TIMEOUT);
        machineA = ClusterBlockStore.open(settings, MODEL, GEOMETRY, Duration.ofSeconds(5));
        machineB = ClusterBlockStore.open(settings, MODEL, GEOMETRY, Duration.ofSeconds(5));
        raw = RedisClusterClient.create(cluster.nodes().stream().map(n -> RedisURI.Builder
                .redis(LocalRedisCluster.HOST, Integer.parseInt(n.substring(n.indexOf(':') + 1))).withPassword(settings.password().toCharArray())
                .build()).toList());
        rawConnection = raw.connect(RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE));
    }

    @AfterAll
    static void stopCluster() {
        if (rawConnection != null) {
            rawConnection.close();
            raw.shutdown();
        }
        if (machineA != null) {
            machineA.close();
        }
        if (machineB != null) {
            machineB.close();
        }
        if (cluster != null) {
            cluster.stop();
        }
    }

    private static ObjectKey[] keys(int n) {
        ObjectKey[] k = new ObjectKey[n];
        for (int i = 0; i < n; i++) {
            k[i] = new ObjectKey(0x5EED, nextKey++);
        }
        return k;
    }

    /** A block of the geometry's size in two parts (K and V halves), filled from {@code seed}. */
    private static List<MemorySegment> block(long seed) {
        int half = GEOMETRY.bytesPerBlock() / 2;
        MemorySegment a = ARENA.allocate(half, 64);
        MemorySegment b = ARENA.allocate(half, 64);
        Random r = new Random(seed);
        for (int i = 0; i < half; i++) {
            a.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
            b.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
        return List.of(a, b);
    }

    private static List<MemorySegment> empty() {
        int half = GEOMETRY.bytesPerBlock() / 2;
        return List.of(ARENA.allocate(half, 64), ARENA.allocate(half, 64));
    }

    private static byte[] bytes(List<MemorySegment> parts) {
        byte[] out = new byte[0];
        for (MemorySegment p : parts) {
            byte[] b = p.toArray(ValueLayout.JAVA_BYTE);
            int at = out.length;
            out = Arrays.copyOf(out, at + b.length);
            System.arraycopy(b, 0, out, at, b.length);
        }
        return out;
    }

    /** Waits until {@code store}'s writes are answered. */
    private static void settle(ClusterBlockStore store) {
        assertThat(store.awaitWrites(Duration.ofSeconds(10))).as("writes answered").isTrue();
    }

    @Test
    void aPublishedPrefixIsMatchedAndReadBackByteForByte() {
        ObjectKey[] k = keys(5);
        long published = machineA.metrics().published();
        for (int i = 0; i < 3; i++) {
            assertThat(machineA.publish(k[i], block(i))).isEqualTo(PublishStatus.PUBLISHED);
        }
        settle(machineA);
        assertThat(machineA.metrics().published()).isEqualTo(published + 3);
        long present = machineA.metrics().alreadyPresent();
        assertThat(machineA.publish(k[1], block(1))).isEqualTo(PublishStatus.PUBLISHED); // sent: a block is stored once
        settle(machineA);
        assertThat(machineA.metrics().alreadyPresent()).isEqualTo(present + 1);
        assertThat(machineA.metrics().published()).isEqualTo(published + 3);
        assertThat(machineA.matchPrefix(k, 0, 5)).isEqualTo(3);
        assertThat(machineA.matchPrefix(k, 1, 4)).isEqualTo(2);
        assertThat(machineA.matchPrefix(k, 3, 2)).isZero();
        for (int i = 0; i < 3; i++) {
            List<MemorySegment> into = empty();
            assertThat(machineA.read(k[i], into)).isTrue();
            assertThat(bytes(into)).isEqualTo(bytes(block(i)));
        }
        assertThat(machineA.read(k[3], empty())).isFalse();
        assertThat(machineA.metrics().misses()).isPositive();
    }

    @Test
    void aLongPrefixIsMatchedAcrossBatchesAndStopsAtTheFirstGap() {
        ObjectKey[] k = keys(300);
        for (int i = 0; i < 250; i++) {
            assertThat(machineA.publish(k[i], block(i))).isEqualTo(PublishStatus.PUBLISHED);
        }
        settle(machineA);
        assertThat(machineA.metrics().dropped()).as("250 small blocks fit the write window").isZero();
        assertThat(machineB.matchPrefix(k, 0, 300)).isEqualTo(250);
        assertThat(machineB.matchPrefix(k, 0, 170)).isEqualTo(170);
    }

    @Test
    void aPrefixPublishedOnOneMachineIsReadOnAnother() {
        ObjectKey[] k = keys(4);
        for (int i = 0; i < 4; i++) {
            assertThat(machineA.publish(k[i], block(100 + i))).isEqualTo(PublishStatus.PUBLISHED);
        }
        settle(machineA);
        long hits = machineB.metrics().hits();
        assertThat(machineB.matchPrefix(k, 0, 4)).isEqualTo(4);
        for (int i = 0; i < 4; i++) {
            List<MemorySegment> into = empty();
            assertThat(machineB.read(k[i], into)).isTrue();
            assertThat(bytes(into)).isEqualTo(bytes(block(100 + i)));
        }
        assertThat(machineB.metrics().hits()).isEqualTo(hits + 4);
        long present = machineB.metrics().alreadyPresent();
        machineB.publish(k[0], block(100));
        settle(machineB);
        assertThat(machineB.metrics().alreadyPresent()).isEqualTo(present + 1);
    }

    @Test
    void anotherTenantOrModelSeesNothing() {
        ObjectKey[] k = keys(1);
        assertThat(machineA.publish(k[0], block(7))).isEqualTo(PublishStatus.PUBLISHED);
        settle(machineA);
        assertThat(machineA.matchPrefix(k, 0, 1)).isEqualTo(1);
        try (ClusterBlockStore otherTenant = ClusterBlockStore.open(settings.withTenant("other"), MODEL, GEOMETRY, Duration.ofSeconds(5));
             ClusterBlockStore otherModel = ClusterBlockStore.open(settings, ModelFingerprint.of("another", GEOMETRY), GEOMETRY,
                     Duration.ofSeconds(5))) {
            assertThat(otherTenant.matchPrefix(k, 0, 1)).isZero();
            assertThat(otherModel.matchPrefix(k, 0, 1)).isZero();
        }
    }

    private static void assertDiscarded(ObjectKey key, byte[] stored, ClusterMetrics.Corruption check) {
        rawConnection.sync().set(machineA.keyOf(key), stored);
        long before = machineB.metrics().corrupt(check);
        List<MemorySegment> into = empty();
        byte[] untouched = bytes(into);
        assertThat(machineB.matchPrefix(new ObjectKey[] {key}, 0, 1)).isEqualTo(1);
        assertThat(machineB.read(key, into)).isFalse();
        if (check != ClusterMetrics.Corruption.CHECKSUM) { // a header check fails before anything is copied
            assertThat(bytes(into)).as("nothing of a value with a bad header is copied").isEqualTo(untouched);
        } // a checksum is checked by the copy itself: the destinations then hold bytes the false answer disowns
        assertThat(machineB.metrics().corrupt(check)).isEqualTo(before + 1);
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos(); // the delete is sent, not waited for
        while (rawConnection.sync().exists(machineA.keyOf(key)) != 0 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertThat(rawConnection.sync().exists(machineA.keyOf(key))).as("the bad value is deleted").isZero();
        assertThat(machineB.matchPrefix(new ObjectKey[] {key}, 0, 1)).isZero();
    }

    @Test
    void aValueThatFailsAnyCheckIsDeletedCountedAndNeverLoaded() {
        ObjectKey[] k = keys(7);
        for (ObjectKey key : k) {
            assertThat(machineA.publish(key, block(key.low()))).isEqualTo(PublishStatus.PUBLISHED);
        }
        settle(machineA);
        byte[] good = rawConnection.sync().get(machineA.keyOf(k[0]));
        assertThat(good).hasSize(ClusterBlockFormat.HEADER_BYTES + GEOMETRY.bytesPerBlock());

        byte[] garbage = new byte[good.length];
        new Random(1).nextBytes(garbage);
        assertDiscarded(k[0], garbage, ClusterMetrics.Corruption.MAGIC);

        assertDiscarded(k[1], Arrays.copyOf(rawConnection.sync().get(machineA.keyOf(k[1])), good.length - 100),
                ClusterMetrics.Corruption.SHORT);
        assertDiscarded(k[2], Arrays.copyOf(good, 20), ClusterMetrics.Corruption.SHORT);

        byte[] flipped = rawConnection.sync().get(machineA.keyOf(k[3]));
        flipped[ClusterBlockFormat.HEADER_BYTES + 500] ^= 0x10;
        assertDiscarded(k[3], flipped, ClusterMetrics.Corruption.CHECKSUM);

        KvGeometry other = KvGeometry.of(2, 2, 16, KvDtype.BF16).withBlockTokens(4); // same size, other dtype
        assertThat(other.bytesPerBlock()).isEqualTo(GEOMETRY.bytesPerBlock());
        byte[] otherGeometry = new byte[(int) ClusterBlockFormat.valueBytes(block(4))];
        ClusterBlockFormat.encode(k[4], ClusterBlockFormat.geometryFingerprint(other), block(4), MemorySegment.ofArray(otherGeometry));
        assertDiscarded(k[4], otherGeometry, ClusterMetrics.Corruption.GEOMETRY);

        // a valid value of another block, copied under this key
        assertDiscarded(k[5], rawConnection.sync().get(machineA.keyOf(k[6])), ClusterMetrics.Corruption.KEY);

        PrometheusText text = new PrometheusText();
        machineB.metrics().writeTo(text);
        assertThat(text.toString()).contains("strata_cluster_corrupt_values_total{check=\"geometry\"} 1")
                .contains("strata_cluster_corrupt_values_total{check=\"checksum\"} 1");
    }

    @Test
    void aCorruptValueIsDeletedOnlyWhileItStillHoldsTheBytesThatFailed() throws Exception {
        ObjectKey key = keys(1)[0];
        machineA.publish(key, block(9));
        settle(machineA);
        byte[] good = rawConnection.sync().get(machineA.keyOf(key));
        byte[] garbage = new byte[good.length];
        new Random(2).nextBytes(garbage);
        // another machine read garbage here, and a correct value was written before its delete ran
        assertThat(machineB.deleteIfStill(key, garbage).toCompletableFuture().get(5, java.util.concurrent.TimeUnit.SECONDS)).isZero();
        assertThat(rawConnection.sync().get(machineA.keyOf(key))).as("the correct value is kept").isEqualTo(good);
        rawConnection.sync().set(machineA.keyOf(key), garbage);
        assertThat(machineB.deleteIfStill(key, garbage).toCompletableFuture().get(5, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(1);
        assertThat(rawConnection.sync().exists(machineA.keyOf(key))).isZero();
    }

    @Test
    void writesBeyondTheWindowAreDroppedAndCountedNotWaitedFor() {
        try (ClusterBlockStore small = ClusterBlockStore.open(settings.withQueueBytes(2L * (GEOMETRY.bytesPerBlock()
                + ClusterBlockFormat.HEADER_BYTES)), MODEL, GEOMETRY, Duration.ofSeconds(5))) {
            ObjectKey[] k = keys(200);
            int sent = 0;
            for (ObjectKey key : k) {
                if (small.publish(key, block(key.low())) == PublishStatus.PUBLISHED) {
                    sent++;
                }
            }
            settle(small);
            ClusterMetrics m = small.metrics();
            assertThat(m.dropped(ClusterMetrics.DropReason.QUEUE_FULL)).isEqualTo(200 - sent);
            assertThat(m.published() + m.alreadyPresent()).isEqualTo(sent);
            assertThat(m.queuedBlocks()).isZero();
            assertThat(sent).isPositive();
        }
    }

    @Test
    void seenTwiceKeepsOneOffBlocksOffTheCluster() {
        try (ClusterBlockStore filtered = ClusterBlockStore.open(settings.withWrites(StrataConfig.ClusterWrite.COMMIT,
                StrataConfig.ClusterAdmission.SEEN_TWICE), MODEL, GEOMETRY, Duration.ofSeconds(5))) {
            ObjectKey[] k = keys(2);
            filtered.used(k[0]);
            assertThat(filtered.publish(k[0], block(1))).as("used once").isEqualTo(PublishStatus.FULL);
            filtered.used(k[1]);
            filtered.used(k[1]);
            assertThat(filtered.publish(k[1], block(2))).as("used twice").isEqualTo(PublishStatus.PUBLISHED);
            settle(filtered);
            assertThat(filtered.metrics().refused()).isEqualTo(1);
            assertThat(machineB.matchPrefix(k, 0, 1)).isZero();
            assertThat(machineB.matchPrefix(k, 1, 1)).isEqualTo(1);
        }
    }

    @Test
    void writeBehindWritesABlockWhenItLeavesThisMachineNotAtCommit() {
        try (ClusterBlockStore behind = ClusterBlockStore.open(settings.withWrites(StrataConfig.ClusterWrite.EVICTION,
                StrataConfig.ClusterAdmission.ALL), MODEL, GEOMETRY, Duration.ofSeconds(5))) {
            ObjectKey[] k = keys(1);
            assertThat(behind.publish(k[0], block(5))).isEqualTo(PublishStatus.DEFERRED);
            settle(behind);
            assertThat(machineB.matchPrefix(k, 0, 1)).isZero();
            List<MemorySegment> parts = block(5);
            MemorySegment whole = ARENA.allocate(GEOMETRY.bytesPerBlock());
            MemorySegment.copy(parts.get(0), 0, whole, 0, parts.get(0).byteSize());
            MemorySegment.copy(parts.get(1), 0, whole, parts.get(0).byteSize(), parts.get(1).byteSize());
            behind.evicted(k[0], whole);
            settle(behind);
            List<MemorySegment> into = empty();
            assertThat(machineB.read(k[0], into)).isTrue();
            assertThat(bytes(into)).isEqualTo(bytes(block(5)));
        }
    }

    @Test
    void aWrongPasswordFailsAtStartUpNamingTheNodeButNotThePassword() {
        String wrong = "not-the-password-" + Long.toHexString(new Random().nextLong());
        assertThatThrownBy(() -> ClusterBlockStore.open(settings.withPassword(wrong), MODEL, GEOMETRY, Duration.ofSeconds(3)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(cluster.nodes().getFirst())
                .hasMessageContaining("refused the credentials")
                .satisfies(e -> {
                    for (Throwable t = e; t != null; t = t.getCause()) {
                        assertThat(String.valueOf(t.getMessage())).doesNotContain(wrong).doesNotContain(settings.password());
                    }
                });
        assertThatThrownBy(() -> ClusterBlockStore.open(settings.withPassword(null), MODEL, GEOMETRY, Duration.ofSeconds(3)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(cluster.nodes().getFirst());
        // a server that may start without its cluster still refuses to start with wrong credentials: waiting would not fix them
        assertThatThrownBy(() -> ClusterBlockStore.openOrConnectLater(settings.withPassword(wrong), MODEL, GEOMETRY, Duration.ofSeconds(3),
                Duration.ofMillis(100)))
                .isInstanceOfSatisfying(ClusterBlockStore.OpenFailure.class, e -> assertThat(e.credentialsRefused()).isTrue())
                .hasMessageContaining("refused the credentials").hasMessageNotContaining(wrong);
        PrometheusText text = new PrometheusText();
        machineA.metrics().writeTo(text);
        assertThat(text.toString()).doesNotContain(settings.password()).contains("strata_cluster_request_seconds_bucket{op=\"read\"")
                .contains("strata_cluster_capacity_hint_bytes " + 3 * LocalRedisCluster.DEFAULT_MAXMEMORY);
        assertThat(settings.toString()).doesNotContain(settings.password());
    }

    @Test
    void theClusterKeepsItsSecretsInPrivateFiles() throws Exception {
        Set<PosixFilePermission> ownerOnly = Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);
        assertThat(Files.getPosixFilePermissions(cluster.passwordFile())).isEqualTo(ownerOnly);
        for (int port : cluster.ports()) {
            assertThat(Files.getPosixFilePermissions(cluster.dir().resolve("node-" + port).resolve("redis.conf"))).isEqualTo(ownerOnly);
        }
        assertThat(cluster.status()).hasSize(6).allSatisfy(s -> assertThat(s.clusterState()).isEqualTo("ok"))
                .extracting(LocalRedisCluster.NodeStatus::role).containsOnly("master", "slave");
    }
}
