package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cluster.ClusterSettings;
import dev.strata.cluster.LocalRedisCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cluster scenario's quick run, on a real local Redis Cluster it starts itself (redis-server
 * and redis-benchmark must be installed), produces every figure, well formed (no speed is
 * asserted), and leaves no cluster behind.
 */
class ClusterScenarioTest {
    @TempDir
    Path work;

    @Test
    void theQuickRunProducesEveryFigureAndStopsItsCluster() throws Exception {
        List<String> notes = new ArrayList<>();
        List<Figure> figures = new ClusterScenario().run(new Scenario.Options(true, work, false), notes);
        Map<String, Figure> byName = figures.stream().collect(Collectors.toMap(Figure::name, Function.identity()));
        assertThat(byName.keySet()).containsExactlyInAnyOrder("cluster_block_put_256KiB", "cluster_block_get_256KiB",
                "cluster_block_put_1280KiB", "cluster_block_get_1280KiB", "ttft_cluster_prefix_hit_1024tok",
                "ttft_cluster_hit_vs_pool_hit_1024tok", "cluster_recovery_after_primary_kill");
        Figure recovery = byName.get("cluster_recovery_after_primary_kill");
        assertThat(recovery.unit()).isEqualTo("s");
        assertThat(recovery.note()).contains("primaries after: [").contains("topology changes");
        if (Double.isNaN(recovery.value())) { // how long a failover takes is the cluster's and the client's timing, not asserted
            assertThat(recovery.met()).isFalse();
            assertThat(recovery.note()).contains("reads had not recovered their hit ratio").contains("30 s after primary");
        } else {
            assertThat(recovery.baselineValue()).isEqualTo(2.0);
        }
        for (Figure f : figures) {
            if (f == recovery && Double.isNaN(f.value())) {
                continue;
            }
            assertThat(f.value()).as("%s value (%s)", f.name(), f.note()).isFinite().isPositive();
            assertThat(f.baselineValue()).as("%s baseline (%s)", f.name(), f.note()).isFinite().isPositive();
            FigureChecks.assertConsistent(f);
            assertThat(f.note()).as("%s note", f.name()).isNotBlank();
        }
        for (String size : List.of("256KiB", "1280KiB")) {
            assertThat(byName.get("cluster_block_put_" + size).unit()).isEqualTo("blocks/s");
            assertThat(byName.get("cluster_block_get_" + size).baseline()).contains("redis-benchmark").contains("-P 4 -c 4");
            assertThat(byName.get("cluster_block_get_" + size).note()).contains("16 requests in flight").contains("MB/s")
                    .contains("on each of 3 primaries").contains("of its GETs finding their key");
        }
        assertThat(byName.get("ttft_cluster_prefix_hit_1024tok").goal()).isEqualTo("<= 0.2");
        assertThat(byName.get("ttft_cluster_prefix_hit_1024tok").note()).contains("the hit loads 1008 tokens");
        assertThat(byName.get("ttft_cluster_hit_vs_pool_hit_1024tok").note())
                .contains("published figure for a CXL pool vs an RDMA pool: 89.6% lower TTFT");
        assertThat(notes).anyMatch(n -> n.contains("loopback"));
        // the cluster was stopped and its directory removed; the model stays for the next run
        try (Stream<Path> left = Files.list(work)) {
            assertThat(left.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith("cluster-"));
        }
        assertThat(work.resolve("models")).isDirectoryContaining(p -> p.getFileName().toString().startsWith("ttft-dense-"));
    }

    @Test
    void redisBenchmarkCsvIsParsedAndAnOutputWithoutRatesIsAnError() throws IOException {
        String csv = """
                Cluster has 3 master nodes:

                Master 0: 9f01824f381461035e480f72707ab7dcbbb1ade8 127.0.0.1:31001
                "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
                "SET","1418.44","7.022","0.480","5.383","11.351","26.767","477.951"
                "GET","2012.07","3.587","0.200","2.327","7.879","21.071","91.711"
                """;
        assertThat(RedisBenchmark.parse(csv, "redis-benchmark", "set,get")).containsExactly(1418.44, 2012.07);
        assertThat(RedisBenchmark.parse("\"SET\",\"10.0\"\n", "redis-benchmark -t set", "set")).containsExactly(10.0, Double.NaN);
        assertThat(RedisBenchmark.parse("\"GET\",\"20.0\"\n", "redis-benchmark -t get", "get")).containsExactly(Double.NaN, 20.0);
        assertThatThrownBy(() -> RedisBenchmark.parse("\"SET\",\"10.0\"\n", "redis-benchmark -t set,get", "set,get"))
                .isInstanceOf(IOException.class).hasMessageContaining("no SET and GET rate").hasMessageContaining("-t set,get");
        assertThatThrownBy(() -> RedisBenchmark.parse("\"SET\",\"10.0\"\n", "redis-benchmark -t get", "get"))
                .isInstanceOf(IOException.class).hasMessageContaining("no GET rate");
    }

    @Test
    void primariesStatisticsAreSummedAndAnAnswerWithoutCountersIsAnError() throws IOException {
        String out = """
                >>> Calling INFO stats keyspace memory
                127.0.0.1:21000: # Memory\r
                maxmemory:1073741824\r
                # Stats\r
                evicted_keys:0\r
                keyspace_hits:7160\r
                keyspace_misses:0\r
                # Keyspace\r
                db0:keys=512,expires=0,avg_ttl=0\r
                127.0.0.1:21001: # Memory\r
                maxmemory:268435456\r
                # Stats\r
                evicted_keys:1978\r
                keyspace_hits:2855\r
                keyspace_misses:2693\r
                # Keyspace\r
                """;
        RedisBenchmark.Keyspace k = RedisBenchmark.parseKeyspace(out);
        assertThat(k).isEqualTo(new RedisBenchmark.Keyspace(2, 10_015, 2_693, 1_978, 512, 268_435_456));
        assertThat(k.hitFraction()).isCloseTo(10_015.0 / 12_708, org.assertj.core.data.Offset.offset(1e-12));
        assertThatThrownBy(() -> RedisBenchmark.parseKeyspace(">>> Calling INFO stats\n127.0.0.1:21000: ERR\n"))
                .isInstanceOf(IOException.class).hasMessageContaining("0 keyspace_hits");
        assertThatThrownBy(() -> RedisBenchmark.parseKeyspace("keyspace_hits:1\nkeyspace_misses:2\nmaxmemory:0\n"))
                .isInstanceOf(IOException.class).hasMessageContaining("1 keyspace_hits and 0 evicted_keys");
        assertThatThrownBy(() -> RedisBenchmark.parseKeyspace("keyspace_hits:1\nkeyspace_misses:x\n"))
                .isInstanceOf(IOException.class).hasMessageContaining("keyspace_misses:x");
    }

    /**
     * In cluster mode redis-benchmark's {@code -r} names keys on each primary: a working set its
     * nodes cannot hold turns many of its GETs into nil replies, and the run says how many; keys
     * that fit are all found. A SET test of new keys says how many keys it left and evicted.
     */
    @Test
    void redisBenchmarkReportsTheShareOfItsGetsThatFoundTheirKey() throws IOException {
        LocalRedisCluster cluster = LocalRedisCluster.create(work.resolve("rb-cluster"), 3, 0, LocalRedisCluster.freePortBase(3), true,
                16L << 20, "allkeys-lru");
        try {
            cluster.start(java.time.Duration.ofSeconds(60));
            String node = cluster.nodes().getFirst();
            String password = ClusterSettings.of(cluster, java.time.Duration.ofSeconds(2)).password();
            long value = 256 << 10;
            RedisBenchmark.flushAll(node, password);
            RedisBenchmark.Rates fits = RedisBenchmark.run(node, password, value, 4, 4, 600, 8); // 2 MiB a primary
            assertThat(fits.getHitFraction()).isEqualTo(1.0);
            // a primary that answers late during the SET test, as one does on a loaded machine (here its writes are paused),
            // gets few of the test's requests, and some of its keys none: they are written before the GETs all the same
            RedisBenchmark.flushAll(node, password);
            pauseWrites(cluster.nodes().get(1), password, 1_500);
            RedisBenchmark.Rates late = RedisBenchmark.run(node, password, value, 4, 4, 600, 8);
            assertThat(late.getHitFraction()).as("GETs that found their key after a late primary").isEqualTo(1.0);
            RedisBenchmark.flushAll(node, password);
            RedisBenchmark.Rates overflows = RedisBenchmark.run(node, password, value, 4, 4, 600, 256); // up to 64 MiB a primary
            assertThat(overflows.getHitFraction()).isPositive().isLessThan(0.9);
            assertThat(RedisBenchmark.keyspace(node, password).primaries()).isEqualTo(3);
            RedisBenchmark.flushAll(node, password);
            // 24 values of 256 KiB (320 KiB each as allocated, 7.5 MiB) fit one 16 MiB primary even if every request lands
            // there: redis-benchmark sends each client's requests to one primary, and a client whose primary is slow leaves
            // its share to the others (36 of 60 keys on one primary seen under load; 45 or so fill it)
            RedisBenchmark.NewKeys fresh = RedisBenchmark.setNewKeys(node, password, value, 4, 4, 24);
            assertThat(fresh).as("keys held and evicted after 24 new keys").extracting(RedisBenchmark.NewKeys::keys,
                    RedisBenchmark.NewKeys::evicted).containsExactly(24L, 0L);
            RedisBenchmark.NewKeys overfull = RedisBenchmark.setNewKeys(node, password, value, 4, 4, 240); // 264 values, 82 MiB allocated, in 48
            assertThat(overfull.evicted()).isPositive();
            assertThat(overfull.keys()).isLessThan(264);
        } finally {
            cluster.stop();
        }
    }

    /** Pauses the write commands of the node at {@code hostPort} for {@code millis} ({@code CLIENT PAUSE ... WRITE}); returns at once. */
    private static void pauseWrites(String hostPort, String password, long millis) throws IOException {
        int colon = hostPort.lastIndexOf(':');
        ProcessBuilder pb = new ProcessBuilder(RedisBenchmark.binary().resolveSibling("redis-cli").toString(), "-h",
                hostPort.substring(0, colon), "-p", hostPort.substring(colon + 1), "CLIENT", "PAUSE", Long.toString(millis), "WRITE")
                .redirectErrorStream(true);
        if (password != null) {
            pb.environment().put("REDISCLI_AUTH", password);
        }
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        try {
            assertThat(p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)).as("redis-cli CLIENT PAUSE finished").isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
        assertThat(out.strip()).as("CLIENT PAUSE answer").isEqualTo("OK");
    }

    /**
     * redis-benchmark in cluster mode rounds a test's duration up to its 250 ms timer: 300 requests
     * printed as 1195.22/s took 0.251 s by its clock, and between 0.001 and 0.251 s in truth.
     */
    @Test
    void redisBenchmarkRatesAreTakenAtTheMiddleOfTheTickTheirDurationWasRoundedTo() {
        RedisBenchmark.Rates r = RedisBenchmark.of(300, new double[] {1195.22, 119521.92 / 100}, 1);
        assertThat(r.setSeconds()).isCloseTo(0.251, org.assertj.core.data.Offset.offset(1e-4));
        assertThat(r.setPerSecond()).isCloseTo(300 / 0.126, org.assertj.core.data.Offset.offset(1.0));
        assertThat(r.uncertainty()).isCloseTo(0.125 / 0.251, org.assertj.core.data.Offset.offset(1e-3));
        RedisBenchmark.Rates longRun = RedisBenchmark.of(12_000, new double[] {12_000 / 4.001, 12_000 / 3.001}, 1);
        assertThat(longRun.getPerSecond()).isCloseTo(12_000 / 2.876, org.assertj.core.data.Offset.offset(1.0));
        assertThat(longRun.uncertainty()).as("half a tick against the shorter test").isCloseTo(0.125 / 3.001,
                org.assertj.core.data.Offset.offset(1e-4));
        assertThat(longRun.highestPerSecond(12_000)).isCloseTo(12_000 / 2.751, org.assertj.core.data.Offset.offset(1.0));
    }
}
