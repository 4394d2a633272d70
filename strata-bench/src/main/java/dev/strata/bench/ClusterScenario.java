package dev.strata.bench;

import dev.strata.bench.engine.ClusterTtftMeasure;
import dev.strata.bench.engine.SyntheticModels;
import dev.strata.cluster.ClusterSettings;
import dev.strata.cluster.LocalRedisCluster;
import dev.strata.memory.log.Log;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * {@code strata bench cluster}: the CLUSTER tier on a real Redis Cluster that the scenario starts
 * on this machine ({@link LocalRedisCluster}: 3 primaries with 1 replica each, a password, free
 * ports). Block put and get throughput through the cluster block store against
 * {@code redis-benchmark} with the same value size, pipeline depth and connections
 * ({@link ClusterThroughputMeasure}); time to first token of a prompt whose prefix another
 * instance published through the cluster against a cold prefill, and against the same prefix
 * from this machine's pool ({@link ClusterTtftMeasure}); and the time reads take to recover their
 * hit ratio after a primary is killed ({@link ClusterFailoverMeasure}).
 *
 * <p>The cluster lives in {@code <work dir>/cluster-<pid>} and is stopped and its directory
 * deleted at the end, also when a measure fails. The model of the TTFT measure is synthesised
 * once into {@code <work dir>/models/} (the engine scenario's) and reused. {@code redis-server},
 * {@code redis-cli} and {@code redis-benchmark} must be on the PATH.
 *
 * <p>Runs on the calling thread; the measures start their own workers.
 */
public final class ClusterScenario implements Scenario {

    @Override
    public String name() {
        return "cluster";
    }

    /**
     * {@code maxmemory} of each node in a full run, bytes: room for a few seconds of new 1.25 MiB
     * values on one primary (the throughput measure writes at most 3 GiB to the primaries, as much
     * again to the replicas).
     */
    static final long FULL_RUN_NODE_MEMORY = 2L << 30;

    @Override
    public String description() {
        return "cluster tier on a local Redis Cluster: block put/get vs redis-benchmark, TTFT vs cold and pool, failover recovery";
    }

    @Override
    public List<Figure> run(Options options, List<String> notes) throws Exception {
        boolean quick = options.quick();
        int threads = Runtime.getRuntime().availableProcessors();
        Path work = options.workDir();
        Files.createDirectories(work);
        Progress progress = new Progress(Log.stream("bench"), 5);
        progress.step("synthesising (or reusing) the TTFT model under " + work.resolve("models"));
        Path model = SyntheticModels.prepare(EngineScenario.Models.of(quick).ttftDense(), "ttft-dense", work, Log.stream("bench"));
        RedisBenchmark.binary(); // fail before anything starts when the baseline is missing

        progress.step("starting a local Redis Cluster (3 primaries, 1 replica each)");
        Path dir = work.resolve("cluster-" + ProcessHandle.current().pid());
        deleteTree(dir);
        // a full run's new-key SET test writes seconds of values without evicting: room for them
        LocalRedisCluster cluster = quick ? create(dir) : create(dir, FULL_RUN_NODE_MEMORY);
        List<Figure> figures = new ArrayList<>();
        LocalRedisCluster.StopOnExit running = cluster.stopOnExit(); // stops it at the end, or if the run is interrupted
        try {
            cluster.start(Duration.ofSeconds(60));
            ClusterSettings settings = ClusterSettings.of(cluster, Duration.ofSeconds(2));
            progress.step("block put and get through the cluster store against redis-benchmark (256 KiB and 1.25 MiB)");
            figures.addAll(ClusterThroughputMeasure.figures(settings, quick, Log.stream("bench")));

            progress.step("TTFT on a prefix another instance published through the cluster, against cold and the pool");
            int promptTokens = quick ? 1024 : 8192;
            try {
                figures.addAll(ClusterTtftMeasure.measure(model, settings, threads, promptTokens, 16, quick ? 1 : 3, Log.stream("bench")));
            } catch (RuntimeException e) {
                String why = "not measured: " + e;
                figures.add(Figure.missing(ClusterTtftMeasure.coldFigureName(promptTokens), "s", ClusterTtftMeasure.COLD_BASELINE,
                        ClusterTtftMeasure.COLD_GOAL, why));
                figures.add(Figure.missing(ClusterTtftMeasure.poolFigureName(promptTokens), "s", ClusterTtftMeasure.POOL_BASELINE,
                        ClusterTtftMeasure.POOL_GOAL, why));
            }

            progress.step("recovery of reads after a primary is killed (SIGKILL)");
            try {
                figures.add(ClusterFailoverMeasure.measure(cluster, settings, quick ? 128 : 1024, Duration.ofSeconds(quick ? 30 : 60),
                        Log.stream("bench")));
            } catch (RuntimeException e) {
                figures.add(Figure.missing(ClusterFailoverMeasure.NAME, "s", ClusterFailoverMeasure.BASELINE, ClusterFailoverMeasure.GOAL,
                        "not measured: " + e));
            }
        } finally {
            running.close();
            try {
                deleteTree(dir);
            } catch (IOException e) {
                Log.warn("bench", "could not remove the cluster's directory " + dir + ": " + e.getMessage());
            }
        }
        notes.add("the cluster ran on this machine (loopback): its figures include no network; the nodes, the baseline's client and"
                + " Strata shared the machine's " + threads + " processors");
        return figures;
    }

    /** Describes a cluster of 3 primaries with 1 replica each and a password in {@code dir}, on free ports; not started. */
    static LocalRedisCluster create(Path dir) {
        return LocalRedisCluster.create(dir, 3, 1, LocalRedisCluster.freePortBase(6), true);
    }

    /** As {@link #create(Path)}, each node keeping up to {@code maxmemory} bytes (LRU beyond). */
    static LocalRedisCluster create(Path dir, long maxmemory) {
        return LocalRedisCluster.create(dir, 3, 1, LocalRedisCluster.freePortBase(6), true, maxmemory, "allkeys-lru");
    }

    /** Deletes {@code dir} and everything under it; nothing when it does not exist. */
    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
