package dev.strata.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CLUSTER tier's own block connections ({@link BlockPipeline}) against a real local Redis
 * Cluster of 3 primaries and 3 replicas: many 256 KiB reads in flight at once land byte for byte
 * in destinations of several parts; a read that a paused primary does not answer in time ends
 * absent, and its reply, arriving later, never touches the destinations; credentials the cluster
 * refuses fail each request as an authentication error naming the node, never the password.
 */
class BlockPipelineTest {
    // 4 layers x 4 KV heads x 128 x FP16 x 32 tokens, K and V: 256 KiB blocks
    private static final KvGeometry GEOMETRY = KvGeometry.of(4, 4, 128, KvDtype.FP16).withBlockTokens(32);
    private static final ObjectKey MODEL = ModelFingerprint.of("pipeline-test", GEOMETRY);
    private static final Duration TIMEOUT = Duration.ofSeconds(1);
    private static final int[] PARTS = {100_000, 62_144, 100_000}; // a destination of three unequal parts

    @TempDir
    static Path dir;
    static LocalRedisCluster cluster;
    static ClusterSettings settings;
    static ClusterBlockStore writer;
    static ClusterBlockStore reader;
    static RedisClusterClient raw;
    static StatefulRedisClusterConnection<String, String> rawConnection;
    private static final Arena ARENA = Arena.ofShared();
    private static long nextKey = new Random().nextLong();

    @BeforeAll
    static void startCluster() {
        assertThat(GEOMETRY.bytesPerBlock()).isEqualTo(PARTS[0] + PARTS[1] + PARTS[2]);
        cluster = TestClusters.start(dir.resolve("cluster"), 3, 1);
        settings = ClusterSettings.of(cluster, TIMEOUT);
        writer = ClusterBlockStore.open(settings, MODEL, GEOMETRY, Duration.ofSeconds(5));
        reader = ClusterBlockStore.open(settings, MODEL, GEOMETRY, Duration.ofSeconds(5));
        raw = RedisClusterClient.create(cluster.nodes().stream().map(n -> RedisURI.Builder
                .redis(LocalRedisCluster.HOST, Integer.parseInt(n.substring(n.indexOf(':') + 1)))
                .withPassword(settings.password().toCharArray()).build()).toList());
        rawConnection = raw.connect();
    }

    @AfterAll
    static void stopCluster() {
        if (rawConnection != null) {
            rawConnection.close();
            raw.shutdown();
        }
        if (writer != null) {
            writer.close();
        }
        if (reader != null) {
            reader.close();
        }
        if (cluster != null) {
            cluster.stop();
        }
    }

    private static ObjectKey[] keys(int n) {
        ObjectKey[] k = new ObjectKey[n];
        for (int i = 0; i < n; i++) {
            k[i] = new ObjectKey(0xB10C, nextKey++);
        }
        return k;
    }

    /** A block of seeded random bytes in the three parts. */
    private static List<MemorySegment> block(long seed) {
        Random r = new Random(seed);
        List<MemorySegment> parts = new ArrayList<>();
        for (int size : PARTS) {
            MemorySegment m = ARENA.allocate(size, 64);
            for (long i = 0; i < size; i += 8) {
                m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
            }
            parts.add(m);
        }
        return parts;
    }

    /** Destinations of the three parts, every byte {@code fill}. */
    private static List<MemorySegment> filled(byte fill) {
        List<MemorySegment> parts = new ArrayList<>();
        for (int size : PARTS) {
            parts.add(ARENA.allocate(size, 64).fill(fill));
        }
        return parts;
    }

    private static boolean sameBytes(List<MemorySegment> a, List<MemorySegment> b) {
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i).mismatch(b.get(i)) != -1) {
                return false;
            }
        }
        return true;
    }

    private static void publish(ObjectKey[] k) {
        for (ObjectKey key : k) {
            assertThat(writer.awaitWriteRoom(Duration.ofSeconds(10))).isTrue();
            assertThat(writer.publish(key, block(key.low()))).isEqualTo(PublishStatus.PUBLISHED);
        }
        assertThat(writer.awaitWrites(Duration.ofSeconds(20))).as("writes answered").isTrue();
    }

    @Test
    void manyReadsInFlightLandByteForByteInDestinationsOfSeveralParts() {
        ObjectKey[] k = keys(96);
        long published = writer.metrics().published();
        publish(k);
        assertThat(writer.metrics().published()).isEqualTo(published + k.length);
        long hits = reader.metrics().hits();
        List<CompletableFuture<Boolean>> reads = new ArrayList<>();
        List<List<MemorySegment>> into = new ArrayList<>();
        for (int round = 0; round < 2; round++) { // every block twice, all 192 reads in flight together
            for (ObjectKey key : k) {
                List<MemorySegment> d = filled((byte) 0x5A);
                into.add(d);
                reads.add(reader.readAsync(key, d));
            }
        }
        for (int i = 0; i < reads.size(); i++) {
            assertThat(reads.get(i).join()).as("read %d", i).isTrue();
            assertThat(sameBytes(into.get(i), block(k[i % k.length].low()))).as("bytes of read %d", i).isTrue();
        }
        assertThat(reader.metrics().hits()).isEqualTo(hits + reads.size());
        assertThat(reader.read(keys(1)[0], filled((byte) 0))).as("a key never written").isFalse();
    }

    /**
     * Reads in flight to one primary go on the least loaded of its connections: a store with 3
     * connections per primary dials three on each primary, one with 1 dials one, every read lands,
     * and closing the store closes them all.
     */
    @Test
    void readsInFlightSpreadOverTheConnectionsOfEachPrimary() throws Exception {
        ObjectKey[] k = keys(48);
        publish(k);
        int primaries = cluster.primaryCount();
        assertThat(connectionsOpenedReading(settings.withConnectionsPerPrimary(1), k)).as("connections dialled, 1 per primary")
                .isEqualTo(primaries);
        assertThat(connectionsOpenedReading(settings.withConnectionsPerPrimary(3), k)).as("connections dialled, 3 per primary")
                .isEqualTo(3 * primaries);
        assertThatThrownBy(() -> settings.withConnectionsPerPrimary(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 0");
    }

    /**
     * Opens a store with {@code s}, reads every key with all reads in flight, and returns how many
     * block connections it opened to the primaries: the clients that were not there before and
     * whose last command is a GET. The other clients of the cluster come and go meanwhile (each
     * store's cluster client refreshes the topology on connections of its own every few seconds),
     * so they are told apart by identity, never counted in a sum.
     */
    private static int connectionsOpenedReading(ClusterSettings s, ObjectKey[] k) throws InterruptedException {
        Set<String> before = clientsOnPrimaries().keySet();
        List<List<MemorySegment>> into = new ArrayList<>();
        for (int i = 0; i < k.length; i++) {
            into.add(filled((byte) 0)); // every destination first, so that the reads go out together
        }
        Set<String> opened = new HashSet<>();
        try (ClusterBlockStore store = ClusterBlockStore.open(s, MODEL, GEOMETRY, Duration.ofSeconds(5))) {
            List<CompletableFuture<Boolean>> reads = new ArrayList<>();
            for (int i = 0; i < k.length; i++) {
                reads.add(store.readAsync(k[i], into.get(i)));
            }
            for (int i = 0; i < reads.size(); i++) {
                assertThat(reads.get(i).join()).as("read %d", i).isTrue();
                assertThat(sameBytes(into.get(i), block(k[i].low()))).as("bytes of read %d", i).isTrue();
            }
            clientsOnPrimaries().forEach((client, lastCommand) -> {
                if (!before.contains(client) && lastCommand.equals("get")) {
                    opened.add(client);
                }
            });
        }
        Set<String> left = new HashSet<>(opened);
        for (int i = 0; i < 50 && !left.isEmpty(); i++) {
            Thread.sleep(100); // the server sees a closed connection a moment later
            left.retainAll(clientsOnPrimaries().keySet());
        }
        assertThat(left).as("block connections still open after the store closed").isEmpty();
        return opened.size();
    }

    /** Every client connected to the primaries ({@code CLIENT LIST}): "node id/client id" -> the client's last command. */
    private static Map<String, String> clientsOnPrimaries() {
        Map<String, String> clients = new HashMap<>();
        for (var node : rawConnection.getPartitions()) {
            if (node.is(io.lettuce.core.cluster.models.partitions.RedisClusterNode.NodeFlag.UPSTREAM)) {
                for (String line : rawConnection.getConnection(node.getNodeId()).sync().clientList().lines().toList()) {
                    clients.put(node.getNodeId() + "/" + field(line, "id"), field(line, "cmd"));
                }
            }
        }
        return clients;
    }

    /** The value of {@code name} in one line of {@code CLIENT LIST} ("id=7 addr=... cmd=get ..."). */
    private static String field(String clientLine, String name) {
        for (String f : clientLine.split(" ")) {
            if (f.startsWith(name + "=")) {
                return f.substring(name.length() + 1);
            }
        }
        throw new AssertionError("no " + name + " in the client line '" + clientLine + "'");
    }

    @Test
    void aReadThatAPausedPrimaryDoesNotAnswerEndsAbsentAndItsLateReplyNeverTouchesTheDestinations() throws Exception {
        ObjectKey[] k = keys(12);
        publish(k);
        // the keys of one primary, paused by the cluster itself (CLIENT PAUSE) for three timeouts
        String node = rawConnection.getPartitions().getMasterBySlot(SlotHash.getSlot(writer.keyOf(k[0]))).getNodeId();
        List<ObjectKey> onNode = new ArrayList<>();
        for (ObjectKey key : k) {
            if (rawConnection.getPartitions().getMasterBySlot(SlotHash.getSlot(writer.keyOf(key))).getNodeId().equals(node)) {
                onNode.add(key);
            }
        }
        RedisAdvancedClusterCommands<String, String> nodeCommands = rawConnection.sync();
        nodeCommands.getConnection(node).clientPause(3 * TIMEOUT.toMillis());
        List<List<MemorySegment>> into = new ArrayList<>();
        List<CompletableFuture<Boolean>> reads = new ArrayList<>();
        long start = System.nanoTime();
        for (ObjectKey key : onNode) {
            List<MemorySegment> d = filled((byte) 0x33);
            into.add(d);
            reads.add(reader.readAsync(key, d));
        }
        for (CompletableFuture<Boolean> r : reads) {
            assertThat(r.get(TIMEOUT.toMillis() + 1_500, TimeUnit.MILLISECONDS)).as("a read the paused node did not answer").isFalse();
        }
        assertThat(System.nanoTime() - start).as("answered within the timeout").isLessThan(TIMEOUT.toNanos() + 1_500_000_000L);
        assertThat(reader.metrics().errors(ClusterMetrics.ErrorKind.TIMEOUT)).isPositive();
        Thread.sleep(3 * TIMEOUT.toMillis() + 500); // the pause ends; the node answers the reads nobody waits for any more
        for (List<MemorySegment> d : into) {
            assertThat(sameBytes(d, filled((byte) 0x33))).as("the late reply did not touch the destinations").isTrue();
        }
        List<MemorySegment> again = filled((byte) 0);
        assertThat(reader.read(onNode.get(0), again)).as("the node serves again").isTrue();
        assertThat(sameBytes(again, block(onNode.get(0).low()))).isTrue();
    }

    @Test
    void credentialsTheClusterRefusesFailEachRequestAsAuthenticationNamingTheNodeNotThePassword() {
        String wrong = "not-the-password-" + Long.toHexString(new Random().nextLong());
        try (BlockPipeline pipeline = new BlockPipeline(rawConnection::getPartitions, () -> { }, null, wrong, TIMEOUT.toNanos(), 1)) {
            ObjectKey key = keys(1)[0];
            ClusterBlockRead read = new ClusterBlockRead(key, ClusterBlockFormat.geometryFingerprint(GEOMETRY), GEOMETRY.bytesPerBlock(),
                    filled((byte) 0));
            CompletionException e = org.assertj.core.api.Assertions.catchThrowableOfType(CompletionException.class,
                    () -> pipeline.get(writer.keyOf(key), read).join());
            assertThat(e.getCause()).isInstanceOf(BlockPipeline.RequestFailure.class);
            BlockPipeline.RequestFailure f = (BlockPipeline.RequestFailure) e.getCause();
            assertThat(f.kind).isEqualTo(ClusterMetrics.ErrorKind.AUTH);
            assertThat(f.getMessage()).contains(LocalRedisCluster.HOST + ":").doesNotContain(wrong);
        }
    }
}
