package dev.strata.bench.engine;

import dev.strata.bench.Figure;
import dev.strata.bench.Paired;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.memory.Sizes;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.node.index.BlockIndexConfig;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.index.PoolSharedBlockStore;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.ObjectKey;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;

/**
 * Time to first token on a cross-instance prefix hit against a cold prefill of the same prompt.
 *
 * <p>Two engine instances, each with its own {@link dev.strata.cache.kv.KvBlockManager} and
 * {@link ModelRunner}, share KV blocks through one POOL: a fresh pool file under {@code /dev/shm}
 * ({@link PoolTier}), its {@link PoolBlockIndex} and a {@link PoolSharedBlockStore} per instance.
 * Instance A creates the pool, instance B attaches to it separately (its own mapping, process
 * slot and index handle), as a second serving process would. Each round takes a new seeded
 * random prompt:
 * <ol>
 *   <li>A prefills it cold (nothing cached anywhere; its pool lookup misses) and takes the greedy
 *       first token: the cold TTFT. Its full blocks are published in the pool at commit; the
 *       measure waits for the publication to finish, untimed.</li>
 *   <li>B gets the same prompt: it matches the prefix in the pool, loads every full block but the
 *       last token's out of the pool into its own KV slots (checksums verified), computes the
 *       remaining tokens and takes the first token: the warm TTFT.</li>
 * </ol>
 * Both first tokens' logits must be bit-identical (paging changes where bytes are, never what
 * the model computes), and B must have reused the whole prefix; otherwise the measure fails.
 * Figure {@code ttft_cross_instance_prefix_hit_<n>tok}: the warm TTFT against the cold one;
 * goal ratio {@code <= 0.1} (at least 90% lower).
 *
 * <p>Confined to the calling thread.
 */
public final class PrefixTtftMeasure {
    public static final String GOAL = "<= 0.1";
    public static final String BASELINE = "cold prefill of the same prompt (no cached prefix)";
    private static final int HASH_VERSION = PrefixHasher.VERSION;

    private PrefixTtftMeasure() {
    }

    /** The figure's name for a prompt length, e.g. {@code ttft_cross_instance_prefix_hit_8192tok}. */
    public static String figureName(int promptTokens) {
        return "ttft_cross_instance_prefix_hit_" + promptTokens + "tok";
    }

    /**
     * Measures {@code rounds} prompts of {@code promptTokens} tokens (after one unmeasured round).
     *
     * @param blockTokens tokens per KV block
     */
    public static Figure measure(Path dir, int threads, int promptTokens, int blockTokens, int rounds, PrintStream log)
            throws IOException {
        try (ModelDirectory model = ModelDirectory.open(dir); KernelPool pool = new KernelPool(threads)) {
            KvGeometry g = ModelRunner.kvGeometry(model.config(), blockTokens);
            int blocks = promptTokens / blockTokens + 2; // the prompt and a partial block
            long promptBytes = (long) blocks * g.bytesPerBlock();
            Kernels kernels = new Kernels(pool);
            try (SharedPool shm = SharedPool.create("bench-ttft-" + ProcessHandle.current().pid(), g, blocks * 3,
                         EngineInstance.fingerprint(model, g));
                 EngineInstance a = new EngineInstance(model, kernels, blockTokens, blocks, new PoolSharedBlockStore(shm.indexA()), null);
                 EngineInstance b = new EngineInstance(model, kernels, blockTokens, blocks, new PoolSharedBlockStore(shm.indexB()), null)) {
                double[] cold = new double[rounds];
                double[] warm = new double[rounds];
                int expectReused = (promptTokens - 1) / blockTokens * blockTokens;
                for (int r = -1; r < rounds; r++) { // round -1: warm-up, not kept
                    int[] prompt = ComputeMeasure.prompt(model.config().vocabSize(), promptTokens, 90_000 + r);
                    long start = System.nanoTime();
                    Ttft first = firstToken(a.runner(), prompt);
                    double coldSeconds = (System.nanoTime() - start) / 1e9;
                    a.awaitIdle(); // publication into the pool finished (untimed)
                    start = System.nanoTime();
                    Ttft second = firstToken(b.runner(), prompt);
                    double warmSeconds = (System.nanoTime() - start) / 1e9;
                    if (first.reused != 0 || second.reused != expectReused) {
                        throw new IllegalStateException("round " + r + ": instance A reused " + first.reused
                                + " prompt tokens (expected 0), instance B " + second.reused + " (expected " + expectReused
                                + " from the pool)");
                    }
                    if (!Arrays.equals(first.logits, second.logits)) {
                        throw new IllegalStateException("round " + r + ": the first token's logits differ between the cold"
                                + " prefill and the prefix loaded from the pool");
                    }
                    log.printf(Locale.ROOT, "      round %d: cold %.3f s, pool hit %.4f s%n", r, coldSeconds, warmSeconds);
                    if (r >= 0) {
                        cold[r] = coldSeconds;
                        warm[r] = warmSeconds;
                    }
                }
                Paired coldVsWarm = Paired.of(cold, warm); // each round: the cold prefill, then the pool hit
                double coldMedian = coldVsWarm.baselineSample().median();
                double warmMedian = coldVsWarm.subjectSample().median();
                return Figure.paired(figureName(promptTokens), "s", BASELINE, coldVsWarm, GOAL)
                        .withNote(String.format(Locale.ROOT, "%s; two instances sharing a /dev/shm pool; %d-token blocks of %d KiB"
                                        + " (%d MiB of KV per prompt); the prefix hit loads %d tokens and computes %d;"
                                        + " %.0f%% lower than cold; %d kernel threads; %d paired rounds",
                                ComputeMeasure.describe(model.config()), blockTokens, g.bytesPerBlock() >> 10, promptBytes >> 20,
                                expectReused, promptTokens - expectReused, 100 * (1 - warmMedian / coldMedian), threads, rounds));
            }
        }
    }

    /**
     * A fresh pool file under {@code /dev/shm} with its block index, attached twice (its own
     * mapping, process slot and index handle each) as two serving processes attach to one pool:
     * A creates it, B attaches. {@link #close} detaches both and deletes the file.
     */
    record SharedPool(Path path, PoolTier tierA, PoolBlockIndex indexA, PoolTier tierB, PoolBlockIndex indexB)
            implements AutoCloseable {

        /** Creates a pool named {@code name} for {@code blocks} blocks of geometry {@code g}. */
        static SharedPool create(String name, KvGeometry g, int blocks, ObjectKey fingerprint) throws IOException {
            Path path = Path.of("/dev/shm", "strata-" + name + ".pool");
            long capacity = Sizes.alignUp(g.bytesPerBlock(), PoolConfig.DEFAULT_CHUNK_SIZE) * blocks;
            PoolConfig create = PoolConfig.builder(name).path(path).capacity(capacity).mode(PoolConfig.Mode.CREATE)
                    .rootRegionSize(PoolBlockIndex.suggestedRegionSize(capacity, PoolConfig.DEFAULT_CHUNK_SIZE,
                            PoolConfig.DEFAULT_PROCESS_SLOTS))
                    .sweepInterval(Duration.ZERO).conclude();
            PoolConfig attach = PoolConfig.builder(name).path(path).mode(PoolConfig.Mode.ATTACH).sweepInterval(Duration.ZERO)
                    .conclude();
            BlockIndexConfig indexConfig = BlockIndexConfig.builder(HASH_VERSION, fingerprint).conclude();
            PoolTier tierA = PoolTier.open(create);
            PoolBlockIndex indexA = null;
            PoolTier tierB = null;
            try {
                indexA = PoolBlockIndex.open(tierA, indexConfig);
                tierB = PoolTier.open(attach);
                return new SharedPool(path, tierA, indexA, tierB, PoolBlockIndex.open(tierB, indexConfig));
            } catch (RuntimeException e) {
                try (PoolTier ta = tierA; PoolBlockIndex ia = indexA; PoolTier tb = tierB) {
                    assert ta != null; // closed in reverse order when the block ends
                } finally {
                    Files.deleteIfExists(path);
                }
                throw e;
            }
        }

        /** Detaches B, then A (closing A's index and tier), and deletes the pool file. */
        @Override
        public void close() throws IOException {
            try (PoolTier ta = tierA; PoolBlockIndex ia = indexA; PoolTier tb = tierB; PoolBlockIndex ib = indexB) {
                assert ta != null && ia != null && tb != null && ib != null; // closed in reverse order when the block ends
            } finally {
                Files.deleteIfExists(path);
            }
        }
    }

    /** A prefill's logits and how many prompt tokens it loaded instead of computing. */
    record Ttft(float[] logits, int reused) {
    }

    /** Prefills {@code prompt} in a new sequence and picks the first token, as a server answers. */
    static Ttft firstToken(ModelRunner runner, int[] prompt) {
        try (ModelRunner.Sequence seq = runner.newSequence()) {
            float[] logits = seq.prefill(prompt, false)[0];
            EngineInstance.argmax(logits);
            return new Ttft(logits, seq.reusedTokens());
        }
    }
}
