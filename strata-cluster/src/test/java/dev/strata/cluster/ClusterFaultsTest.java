package dev.strata.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CLUSTER tier under the faults a deployment meets, on real local Redis Clusters: a primary
 * killed with SIGKILL during traffic (3 primaries, 3 replicas), and a cluster whose nodes reach
 * their memory limit.
 */
class ClusterFaultsTest {
    private static final KvGeometry SMALL = KvGeometry.of(2, 2, 16, KvDtype.FP16).withBlockTokens(4);   // 1 KiB blocks
    private static final KvGeometry LARGE = KvGeometry.of(8, 8, 64, KvDtype.FP16).withBlockTokens(32);  // 256 KiB blocks

    @TempDir
    Path dir;

    private static List<MemorySegment> block(Arena arena, KvGeometry g, long seed) {
        MemorySegment s = arena.allocate(g.bytesPerBlock(), 64);
        Random r = new Random(seed);
        for (long i = 0; i < s.byteSize(); i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        return List.of(s);
    }

    private static ObjectKey[] keys(int n, long base) {
        ObjectKey[] k = new ObjectKey[n];
        for (int i = 0; i < n; i++) {
            k[i] = new ObjectKey(0xFA17, base + i);
        }
        return k;
    }

    /** Reads every block; counts hits, and fails on any byte that differs from what was published. */
    private static int readAll(ClusterBlockStore store, Arena arena, ObjectKey[] k, long seedBase, KvGeometry g) {
        int hits = 0;
        MemorySegment into = arena.allocate(g.bytesPerBlock(), 64);
        for (int i = 0; i < k.length; i++) {
            into.fill((byte) 0);
            if (store.read(k[i], List.of(into))) {
                assertThat(into.mismatch(block(arena, g, seedBase + i).getFirst())).as("block %d is served byte for byte", i).isEqualTo(-1);
                hits++;
            }
        }
        return hits;
    }

    @Test
    void aKilledPrimaryIsFollowedToItsReplicaAndNoWrongByteIsEverServed() throws Exception {
        LocalRedisCluster cluster = TestClusters.start(dir.resolve("cluster"), 3, 1);
        try (Arena arena = Arena.ofShared();
             ClusterBlockStore store = ClusterBlockStore.open(ClusterSettings.of(cluster, Duration.ofMillis(500)),
                     ModelFingerprint.of("failover", SMALL), SMALL, Duration.ofSeconds(5))) {
            ObjectKey[] k = keys(120, new Random().nextLong() >>> 8);
            for (int i = 0; i < k.length; i++) {
                store.publish(k[i], block(arena, SMALL, 1000 + i));
            }
            assertThat(store.awaitWrites(Duration.ofSeconds(10))).isTrue();
            assertThat(store.metrics().published()).isEqualTo(k.length);
            awaitReplicated(cluster);
            assertThat(readAll(store, arena, k, 1000, SMALL)).isEqualTo(k.length);

            int victim = cluster.primaryPorts().getFirst();
            assertThat(cluster.kill(victim)).isTrue();
            long killed = System.nanoTime();
            int hits = 0;
            long deadline = killed + Duration.ofSeconds(45).toNanos();
            int rounds = 0;
            while (hits < k.length && System.nanoTime() < deadline) {
                long start = System.nanoTime();
                hits = readAll(store, arena, k, 1000, SMALL); // misses while the slots have no primary, never a wrong byte
                long roundMillis = (System.nanoTime() - start) / 1_000_000;
                // a round never waits longer than each read's timeout: 120 reads of at most 0.5 s + 1 s slack each
                assertThat(roundMillis).isLessThan(120 * 1_500L);
                rounds++;
                if (hits < k.length) {
                    Thread.sleep(100);
                }
            }
            double recovered = (System.nanoTime() - killed) / 1e9;
            System.out.printf("cluster failover: every block hit again %.1f s after SIGKILL of primary %d (%d rounds)%n", recovered, victim,
                    rounds);
            assertThat(hits).as("every block is served again after the replica's promotion").isEqualTo(k.length);
            assertThat(store.metrics().corrupt()).isZero();
            assertThat(cluster.primaryPorts()).doesNotContain(victim).hasSize(3);
            // and writes go on to the promoted primary
            ObjectKey[] more = keys(30, new Random().nextLong() >>> 8);
            for (int i = 0; i < more.length; i++) {
                store.publish(more[i], block(arena, SMALL, 5000 + i));
            }
            assertThat(store.awaitWrites(Duration.ofSeconds(10))).isTrue();
            assertThat(readAll(store, arena, more, 5000, SMALL)).isEqualTo(more.length);
        } finally {
            cluster.stop();
        }
    }

    /** Waits until every replica reports its link to its primary up and at the primary's offset. */
    private static void awaitReplicated(LocalRedisCluster cluster) throws InterruptedException {
        String password = ClusterSettings.of(cluster, Duration.ofSeconds(1)).password();
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        for (int port : cluster.ports()) {
            RedisURI uri = RedisURI.Builder.redis(LocalRedisCluster.HOST, port).withPassword(password.toCharArray()).build();
            io.lettuce.core.RedisClient c = io.lettuce.core.RedisClient.create(uri);
            try (StatefulRedisConnection<String, String> conn = c.connect()) {
                while (true) {
                    String info = conn.sync().info("replication");
                    if (!info.contains("role:slave")) {
                        break;
                    }
                    if (info.contains("master_link_status:up") && offset(info, "slave_repl_offset") >= offset(info, "master_repl_offset")) {
                        break;
                    }
                    assertThat(System.nanoTime()).as("replica %d catches up", port).isLessThan(deadline);
                    Thread.sleep(50);
                }
            } finally {
                c.shutdown();
            }
        }
    }

    private static long offset(String info, String field) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith(field + ":")) {
                return Long.parseLong(line.substring(field.length() + 1).trim());
            }
        }
        return -1;
    }

    @Test
    void aFullClusterEvictsBlocksThatAreThenMissesAndNothingFails() throws Exception {
        // 16 MiB per node: a node's memory also holds its clients' buffers (a 256 KiB write in flight on each of the
        // store's connections per primary), which eviction cannot free; in a node of a few MiB they alone fill it
        LocalRedisCluster cluster = TestClusters.start(dir.resolve("small"), 3, 0, 16L << 20);
        try (Arena arena = Arena.ofShared();
             ClusterBlockStore store = ClusterBlockStore.open(ClusterSettings.of(cluster, Duration.ofSeconds(2)),
                     ModelFingerprint.of("maxmemory", LARGE), LARGE, Duration.ofSeconds(5))) {
            ObjectKey[] k = keys(288, new Random().nextLong() >>> 8); // 72 MiB of blocks into 48 MiB of nodes
            for (int i = 0; i < k.length; i++) {
                store.publish(k[i], block(arena, LARGE, 7000 + i));
                if (i % 8 == 7) {
                    assertThat(store.awaitWrites(Duration.ofSeconds(10))).isTrue();
                }
            }
            assertThat(store.awaitWrites(Duration.ofSeconds(10))).isTrue();
            ClusterMetrics m = store.metrics();
            assertThat(m.errors()).as("the cluster evicts; no write is refused").isZero();
            assertThat(m.published()).isEqualTo(k.length);
            long misses = m.misses();
            int hits = readAll(store, arena, k, 7000, LARGE);
            assertThat(hits).as("some blocks fit").isPositive().isLessThan(k.length);
            assertThat(m.misses() - misses).as("every evicted block is a miss").isEqualTo(k.length - hits);
            assertThat(m.errors()).isZero();
            assertThat(m.corrupt()).isZero();
        } finally {
            cluster.stop();
        }
    }
}
