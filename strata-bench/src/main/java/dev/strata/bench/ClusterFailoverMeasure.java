package dev.strata.bench;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import dev.strata.cluster.ClusterBlockStore;
import dev.strata.cluster.ClusterSettings;
import dev.strata.cluster.LocalRedisCluster;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.LockSupport;

/**
 * Recovery of the cluster tier after a primary is killed: how long reads of published blocks
 * take to hit again as often as they did before.
 *
 * <p>Blocks are published (every write answered) and left a moment to reach the replicas.
 * Readers then read them round and round through a {@link ClusterBlockStore} with the serving
 * default timeout ({@link StrataConfig#DEFAULT_CLUSTER_TIMEOUT_MILLIS} ms per call), each at most
 * one read a millisecond (a miss answered at once does not make a reader spin and take the
 * processors the cluster's nodes need for their failover), each read counted as a hit or not in the
 * time window it finished in ({@link #WINDOW_MILLIS} ms windows). After {@link #BEFORE_MILLIS} ms
 * one primary is killed with SIGKILL ({@link LocalRedisCluster#kill}); the cluster promotes its
 * replica once the other nodes agree that it failed (after the cluster-node-timeout), and the
 * store's client follows the new topology by itself. Nothing else is done for it.
 *
 * <p>The level before the kill is the hit ratio over the windows before it; recovery is the
 * time from the kill to the start of the first {@link #STABLE_WINDOWS} consecutive windows whose
 * hit ratios are all within 0.01 of that level. Figure {@code cluster_recovery_after_primary_kill}
 * in seconds, against the cluster-node-timeout (the time the cluster itself waits before it
 * declares a node failed: the floor of any recovery), goal on the value {@code <= 15 s}; a
 * missing figure, naming the limit, when the reads have not recovered within it. The note says
 * which nodes are primaries afterwards and how often the client followed a topology change.
 *
 * <p>Confined to the calling thread; it starts its own readers and stops them before returning.
 * The killed node stays down: run this last on a cluster.
 */
public final class ClusterFailoverMeasure {
    static final String NAME = "cluster_recovery_after_primary_kill";
    static final String BASELINE = "cluster-node-timeout (the cluster's failure detection)";
    static final String GOAL = "<= 15 s";
    /** The cluster-node-timeout of a {@link LocalRedisCluster}, in seconds. */
    static final double NODE_TIMEOUT_SECONDS = 2.0;
    private static final int WINDOW_MILLIS = 100;
    private static final int BEFORE_MILLIS = 1000;
    private static final int STABLE_WINDOWS = 5;
    private static final int READERS = 4;
    /** Each reader starts a read at most once a millisecond, as requests arrive, not as fast as misses come back. */
    private static final long READ_INTERVAL_NANOS = 1_000_000;
    private static final KvGeometry GEOMETRY = new KvGeometry(2, 2, 64, KvDtype.BF16, 16); // 8 KiB blocks

    private ClusterFailoverMeasure() {
    }

    /**
     * Kills a primary of {@code cluster} while reading and measures the recovery; a missing
     * figure with the reason when the reads never recover within {@code limit}.
     *
     * @param blocks blocks published and read round and round
     */
    public static Figure measure(LocalRedisCluster cluster, ClusterSettings settings, int blocks, Duration limit, PrintStream log)
            throws InterruptedException {
        ClusterSettings s = settings.withTimeout(Duration.ofMillis(StrataConfig.DEFAULT_CLUSTER_TIMEOUT_MILLIS));
        int windows = (int) ((BEFORE_MILLIS + limit.toMillis()) / WINDOW_MILLIS) + 1;
        AtomicIntegerArray reads = new AtomicIntegerArray(windows); // reads finished in each window
        AtomicIntegerArray hits = new AtomicIntegerArray(windows);  // of them, hits
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService readers = Executors.newFixedThreadPool(READERS, r -> {
            Thread t = new Thread(r, "bench-cluster-reader");
            t.setDaemon(true);
            return t;
        });
        ObjectKey model = ModelFingerprint.of("bench-cluster-failover", GEOMETRY);
        try (Arena arena = Arena.ofShared();
             ClusterBlockStore store = ClusterBlockStore.open(s, model, GEOMETRY, Duration.ofSeconds(30))) {
            publish(settings, model, blocks, arena);
            Thread.sleep(500); // replication to the replicas is asynchronous
            int port = cluster.primaryPorts().getFirst();
            long start = System.nanoTime();
            List<Future<?>> running = new ArrayList<>();
            for (int w = 0; w < READERS; w++) {
                int first = w;
                running.add(readers.submit(() -> {
                    MemorySegment into = arena.allocate(GEOMETRY.bytesPerBlock());
                    for (int i = first; !stop.get(); i = (i + READERS) % blocks) {
                        long began = System.nanoTime();
                        boolean hit = store.read(key(i), List.of(into));
                        long ended = System.nanoTime();
                        if (ended - began < READ_INTERVAL_NANOS) { // paced: a miss answered at once must not spin
                            LockSupport.parkNanos(READ_INTERVAL_NANOS - (ended - began));
                        }
                        int window = (int) ((ended - start) / (WINDOW_MILLIS * 1_000_000L));
                        if (window >= windows) {
                            return;
                        }
                        reads.incrementAndGet(window);
                        if (hit) {
                            hits.incrementAndGet(window);
                        }
                    }
                }));
            }
            Thread.sleep(BEFORE_MILLIS);
            if (!cluster.kill(port)) {
                throw new IllegalStateException("primary on port " + port + " was not running");
            }
            double killedAt = (System.nanoTime() - start) / 1e9;
            int killWindow = (int) Math.ceil(killedAt * 1000 / WINDOW_MILLIS); // first window wholly after the kill
            int beforeReads = 0;
            int beforeHits = 0;
            for (int w = 0; w < (int) (killedAt * 1000 / WINDOW_MILLIS); w++) {
                beforeReads += reads.get(w);
                beforeHits += hits.get(w);
            }
            if (beforeReads == 0) {
                throw new IllegalStateException("no read finished in the " + BEFORE_MILLIS + " ms before the kill");
            }
            double level = (double) beforeHits / beforeReads;
            double recovered = Double.NaN;
            long deadline = System.nanoTime() + limit.toNanos();
            while (Double.isNaN(recovered) && System.nanoTime() < deadline) {
                Thread.sleep(WINDOW_MILLIS);
                int complete = (int) ((System.nanoTime() - start) / (WINDOW_MILLIS * 1_000_000L)); // windows now finished
                for (int w = killWindow; w + STABLE_WINDOWS <= complete && Double.isNaN(recovered); w++) {
                    if (stableFrom(w, reads, hits, level)) {
                        recovered = w * WINDOW_MILLIS / 1000.0 - killedAt;
                    }
                }
            }
            stop.set(true);
            for (Future<?> f : running) {
                try {
                    f.get(10, TimeUnit.SECONDS);
                } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                    throw new IllegalStateException("a reader failed: " + e, e);
                }
            }
            log.printf(Locale.ROOT, "      primary %d killed at %.2f s; hit ratio before %.3f; per %d ms after the kill: %s%n", port,
                    killedAt, level, WINDOW_MILLIS, ratios(reads, hits, killWindow, Math.min(windows, killWindow + 200)));
            // what the cluster and the client did, for a reader of the figure
            String followed = String.format(Locale.ROOT, "primaries after: %s; the client followed %d topology changes and skipped the"
                    + " cluster for %d reads", cluster.primaryPorts(), store.metrics().topologyRefreshes(), store.metrics().skipped());
            if (Double.isNaN(recovered)) {
                return Figure.missing(NAME, "s", BASELINE, GOAL, String.format(Locale.ROOT,
                        "reads had not recovered their hit ratio of %.3f %d s after primary %d was killed; %s", level, limit.toSeconds(),
                        port, followed));
            }
            return Figure.sampled(NAME, "s", BASELINE, Sample.of(recovered), NODE_TIMEOUT_SECONDS, GOAL).withNote(String.format(Locale.ROOT,
                    "3 primaries with 1 replica each; %d readers reading %d published 8 KiB blocks round and round, at most one"
                            + " read a millisecond each, %d ms timeout per read; primary %d killed with SIGKILL; hit ratio before %.3f; recovered when %d consecutive %d ms windows"
                            + " were back within 0.01 of it; the client follows the failover by itself; %s", READERS, blocks,
                    StrataConfig.DEFAULT_CLUSTER_TIMEOUT_MILLIS, port, level, STABLE_WINDOWS, WINDOW_MILLIS, followed));
        } finally {
            stop.set(true);
            readers.shutdownNow();
        }
    }

    /** Publishes blocks 0..blocks-1 through a store of its own with {@code settings}' timeout, and waits until all are written. */
    private static void publish(ClusterSettings settings, ObjectKey model, int blocks, Arena arena) {
        try (ClusterBlockStore writer = ClusterBlockStore.open(settings, model, GEOMETRY, Duration.ofSeconds(30))) {
            MemorySegment block = arena.allocate(GEOMETRY.bytesPerBlock());
            for (int i = 0; i < blocks; i++) {
                block.fill((byte) i);
                PublishStatus st = writer.publish(key(i), List.of(block)); // the value is a copy: the block may change at once
                if (st != PublishStatus.PUBLISHED) {
                    throw new IllegalStateException("block " + i + " was not sent (" + st + ") before the kill");
                }
            }
            if (!writer.awaitWrites(Duration.ofSeconds(30)) || writer.metrics().published() != blocks) {
                throw new IllegalStateException(writer.metrics().published() + " of " + blocks + " blocks were written before the kill");
            }
        }
    }

    private static boolean stableFrom(int from, AtomicIntegerArray reads, AtomicIntegerArray hits, double level) {
        for (int w = from; w < from + STABLE_WINDOWS; w++) {
            int n = reads.get(w);
            if (n == 0 || (double) hits.get(w) / n < level - 0.01) {
                return false;
            }
        }
        return true;
    }

    /** The hit ratios of windows [from, to) with reads, as text (one decimal each). */
    private static String ratios(AtomicIntegerArray reads, AtomicIntegerArray hits, int from, int to) {
        StringBuilder b = new StringBuilder();
        for (int w = from; w < to; w++) {
            int n = reads.get(w);
            if (n == 0 && w > from && reads.get(w - 1) == 0) {
                continue;
            }
            b.append(n == 0 ? "-" : String.format(Locale.ROOT, "%.1f", (double) hits.get(w) / n)).append(' ');
        }
        return b.toString().trim();
    }

    private static ObjectKey key(int i) {
        return new ObjectKey(0x4641_494C_4F56_4552L, 0x9E37_79B9_7F4A_7C15L * (i + 1));
    }
}
