package dev.strata.bench.engine;

import dev.strata.bench.Figure;
import dev.strata.bench.Paired;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cluster.ClusterBlockStore;
import dev.strata.cluster.ClusterSettings;
import dev.strata.cluster.PoolThenClusterBlockStore;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.node.index.PoolSharedBlockStore;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Time to first token on a prefix another machine published through the cluster, against a cold
 * prefill of the same prompt, and against the same prompt loaded from this machine's pool.
 *
 * <p>Three engine instances over one model, each with its own {@link dev.strata.cache.kv.KvBlockManager}
 * and {@link ModelRunner}:
 * <ul>
 *   <li>A, the machine that computes: its shared store is this machine's pool, then the cluster
 *       ({@link PoolThenClusterBlockStore}), so that each block it commits is published to both;</li>
 *   <li>C, another machine: its shared store is a {@link ClusterBlockStore} of its own (its own
 *       client and connections), and no pool;</li>
 *   <li>P, another process of A's machine: its shared store is the same pool, attached
 *       separately ({@link PrefixTtftMeasure.SharedPool}).</li>
 * </ul>
 * Each round takes a new seeded random prompt: A prefills it cold and takes the greedy first
 * token (the cold TTFT); the measure waits, untimed, until A's manager has published every block
 * and the cluster has answered every write ({@link ClusterBlockStore#awaitWrites}); then C and P
 * (in alternating order from round to round) get the same prompt, load every full block but the
 * last token's out of the cluster or the pool, compute the rest and take the first token. All
 * three first tokens' logits must be bit-identical and C and P must have
 * reused the whole prefix; otherwise the measure fails.
 *
 * <p>Figures: {@code ttft_cluster_prefix_hit_<n>tok}, C's TTFT against A's cold one (goal ratio
 * {@code <= 0.2}, at least 80% lower); {@code ttft_cluster_hit_vs_pool_hit_<n>tok}, C's TTFT
 * against P's: a network pool against a memory-semantic pool, for context (goal {@code >= 0}),
 * with the published reference figure in its note.
 *
 * <p>Confined to the calling thread.
 */
public final class ClusterTtftMeasure {
    public static final String COLD_GOAL = "<= 0.2";
    public static final String COLD_BASELINE = PrefixTtftMeasure.BASELINE;
    public static final String POOL_GOAL = ">= 0";
    public static final String POOL_BASELINE = "the same prefix loaded from this machine's /dev/shm pool";
    /** The published comparison this figure stands beside. */
    public static final String REFERENCE = "published figure for a CXL pool vs an RDMA pool: 89.6% lower TTFT";
    private static final Duration TIMEOUT = Duration.ofSeconds(2); // per cluster call: a loaded machine must not turn hits into misses

    private ClusterTtftMeasure() {
    }

    /** Name of the figure against the cold prefill, e.g. {@code ttft_cluster_prefix_hit_8192tok}. */
    public static String coldFigureName(int promptTokens) {
        return "ttft_cluster_prefix_hit_" + promptTokens + "tok";
    }

    /** Name of the figure against the pool hit, e.g. {@code ttft_cluster_hit_vs_pool_hit_8192tok}. */
    public static String poolFigureName(int promptTokens) {
        return "ttft_cluster_hit_vs_pool_hit_" + promptTokens + "tok";
    }

    /**
     * Measures {@code rounds} prompts of {@code promptTokens} tokens (after one unmeasured round).
     *
     * @param dir         the model directory
     * @param cluster     the cluster, reached as the serving processes reach it
     * @param blockTokens tokens per KV block
     * @return the two figures
     */
    public static List<Figure> measure(Path dir, ClusterSettings cluster, int threads, int promptTokens, int blockTokens, int rounds,
            PrintStream log) throws IOException {
        try (ModelDirectory model = ModelDirectory.open(dir); KernelPool pool = new KernelPool(threads)) {
            KvGeometry g = ModelRunner.kvGeometry(model.config(), blockTokens);
            int blocks = promptTokens / blockTokens + 2; // the prompt and a partial block
            ObjectKey fingerprint = EngineInstance.fingerprint(model, g);
            ClusterSettings settings = cluster.withTimeout(TIMEOUT);
            Kernels kernels = new Kernels(pool);
            try (PrefixTtftMeasure.SharedPool shm = PrefixTtftMeasure.SharedPool.create("bench-cluster-ttft-" + ProcessHandle.current().pid(),
                         g, blocks * 3, fingerprint);
                 ClusterBlockStore clusterOfA = ClusterBlockStore.open(settings, fingerprint, g, Duration.ofSeconds(30));
                 ClusterBlockStore clusterOfC = ClusterBlockStore.open(settings, fingerprint, g, Duration.ofSeconds(30));
                 EngineInstance a = new EngineInstance(model, kernels, blockTokens, blocks,
                         new PoolThenClusterBlockStore(new PoolSharedBlockStore(shm.indexA()), clusterOfA), null);
                 EngineInstance c = new EngineInstance(model, kernels, blockTokens, blocks, clusterOfC, null);
                 EngineInstance p = new EngineInstance(model, kernels, blockTokens, blocks, new PoolSharedBlockStore(shm.indexB()), null)) {
                double[] cold = new double[rounds];
                double[] clusterHit = new double[rounds];
                double[] poolHit = new double[rounds];
                int expectReused = (promptTokens - 1) / blockTokens * blockTokens;
                for (int r = -1; r < rounds; r++) { // round -1: warm-up, not kept
                    int[] prompt = ComputeMeasure.prompt(model.config().vocabSize(), promptTokens, 95_000 + r);
                    long start = System.nanoTime();
                    PrefixTtftMeasure.Ttft first = PrefixTtftMeasure.firstToken(a.runner(), prompt);
                    double coldSeconds = (System.nanoTime() - start) / 1e9;
                    a.awaitIdle(); // publication into the pool finished and the cluster's writes sent (untimed)
                    if (!clusterOfA.awaitWrites(Duration.ofSeconds(60))) {
                        throw new IllegalStateException("round " + r + ": the cluster had not answered instance A's writes after 60 s");
                    }
                    double[] hit = new double[2]; // [cluster, pool]
                    for (int k = 0; k < 2; k++) {
                        int which = (k + Math.max(r, 0)) % 2; // alternate which instance goes first
                        EngineInstance reader = which == 0 ? c : p;
                        start = System.nanoTime();
                        PrefixTtftMeasure.Ttft t = PrefixTtftMeasure.firstToken(reader.runner(), prompt);
                        hit[which] = (System.nanoTime() - start) / 1e9;
                        String from = which == 0 ? "the cluster" : "the pool";
                        if (first.reused() != 0 || t.reused() != expectReused) {
                            throw new IllegalStateException("round " + r + ": instance A reused " + first.reused()
                                    + " prompt tokens (expected 0), the instance reading " + from + " " + t.reused() + " (expected "
                                    + expectReused + ")");
                        }
                        if (!Arrays.equals(first.logits(), t.logits())) {
                            throw new IllegalStateException("round " + r + ": the first token's logits differ between the cold"
                                    + " prefill and the prefix loaded from " + from);
                        }
                    }
                    log.printf(Locale.ROOT, "      round %d: cold %.3f s, cluster hit %.4f s, pool hit %.4f s%n", r, coldSeconds, hit[0],
                            hit[1]);
                    if (r >= 0) {
                        cold[r] = coldSeconds;
                        clusterHit[r] = hit[0];
                        poolHit[r] = hit[1];
                    }
                }
                Paired coldVsCluster = Paired.of(cold, clusterHit); // each round: cold, then both hits in alternating order
                Paired poolVsCluster = Paired.of(poolHit, clusterHit);
                double coldMedian = coldVsCluster.baselineSample().median();
                double clusterMedian = coldVsCluster.subjectSample().median();
                double poolMedian = poolVsCluster.baselineSample().median();
                String setup = String.format(Locale.ROOT, "%s; %d-token blocks of %d KiB (%d blocks per prompt); the hit loads %d tokens"
                                + " and computes %d; %d kernel threads; %d paired rounds", ComputeMeasure.describe(model.config()),
                        blockTokens, g.bytesPerBlock() >> 10, promptTokens / blockTokens, expectReused, promptTokens - expectReused, threads,
                        rounds);
                return List.of(
                        Figure.paired(coldFigureName(promptTokens), "s", COLD_BASELINE, coldVsCluster, COLD_GOAL)
                                .withNote(String.format(Locale.ROOT, "another instance with its own cluster client published the"
                                        + " prefix; %.1f%% lower than cold; %s", 100 * (1 - clusterMedian / coldMedian), setup)),
                        Figure.paired(poolFigureName(promptTokens), "s", POOL_BASELINE, poolVsCluster, POOL_GOAL)
                                .withNote(String.format(Locale.ROOT, "a network pool (the cluster, on this machine's loopback) against a"
                                                + " memory-semantic pool: the pool hit is %.1f%% lower than the cluster hit; %s; %s",
                                        100 * (1 - poolMedian / clusterMedian), REFERENCE, setup)));
            }
        }
    }
}
