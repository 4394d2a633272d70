package dev.strata.bench.engine;

import dev.strata.bench.Figure;
import dev.strata.bench.Paired;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvManagerConfig;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.node.index.PoolSharedBlockStore;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * Time to first token on a prefix cached in a tier slower than recomputing it, against a cold
 * prefill of the same prompt: a cached prefix must never make a request slower than no cache.
 *
 * <p>Instance A prefills each round's prompt cold (the baseline) and publishes its blocks in a
 * pool shared with two more instances, B and C, which read the pool through {@link SlowReads}:
 * each block read waits three times B's measured recompute time of a block first, one read at a
 * time (a modelled slow tier: a busy disk, a cluster behind a slow network). B runs with
 * {@code kv.recompute-when-faster} on (the default), C with it off. Both have served prompts of
 * their own before (their prefill speed is known to their KV managers, as a running server's is).
 * Each round B and then C answer A's prompt: B (the subject) recomputes what its measured load
 * times say is slower to load, loading at most one block of the slow tier (the probe that keeps
 * its estimate current); C loads every block, which the note reports as the cost avoided. All
 * three first tokens' logits must be bit-identical, C must have loaded the whole prefix and B at
 * most one block; otherwise the measure fails.
 *
 * <p>Figure {@code ttft_slow_tier_prefix_hit_<n>tok}: B's TTFT against A's cold one, goal
 * {@code <= 1.25} (loading every block takes three times the cold prefill or more).
 *
 * <p>Confined to the calling thread.
 */
public final class SlowTierTtftMeasure {
    /**
     * At most a quarter above the cold prefill: the gate costs a probe block now and then and a
     * match, about 3% here, and paired TTFTs on a two-processor machine spread by up to 15%.
     */
    public static final String GOAL = "<= 1.25";
    private static final double SLOWDOWN = 3; // a block read takes this many times the block's recompute

    private SlowTierTtftMeasure() {
    }

    /** The figure's name for a prompt length, e.g. {@code ttft_slow_tier_prefix_hit_2048tok}. */
    public static String figureName(int promptTokens) {
        return "ttft_slow_tier_prefix_hit_" + promptTokens + "tok";
    }

    /**
     * Measures {@code rounds} prompts of {@code promptTokens} tokens (after one unmeasured round,
     * which gives B its first load-time estimate).
     */
    public static Figure measure(Path dir, int threads, int promptTokens, int blockTokens, int rounds, PrintStream log)
            throws IOException {
        try (ModelDirectory model = ModelDirectory.open(dir); KernelPool pool = new KernelPool(threads)) {
            KvGeometry g = ModelRunner.kvGeometry(model.config(), blockTokens);
            int blocks = promptTokens / blockTokens + 2; // the prompt and a partial block
            int fullBlocks = (promptTokens - 1) / blockTokens;
            Kernels kernels = new Kernels(pool);
            int vocab = model.config().vocabSize();
            SlowReads toB;
            SlowReads toC;
            try (PrefixTtftMeasure.SharedPool shm = PrefixTtftMeasure.SharedPool.create("bench-slow-" + ProcessHandle.current().pid(),
                         g, blocks * 3, EngineInstance.fingerprint(model, g));
                 EngineInstance a = new EngineInstance(model, kernels, blockTokens, blocks, new PoolSharedBlockStore(shm.indexA()), null);
                 EngineInstance b = new EngineInstance(model, kernels, blockTokens, blocks,
                         toB = new SlowReads(new PoolSharedBlockStore(shm.indexB())), null);
                 EngineInstance c = new EngineInstance(model, kernels, blockTokens, blocks,
                         toC = new SlowReads(new PoolSharedBlockStore(shm.indexB())), null,
                         KvManagerConfig.defaults().recomputeWhenFaster(false))) {
                // B and C have served before: cold prompts of their own (their pool lookups miss), the
                // kernels compiled first, so that B's estimate of its prefill speed is a running server's
                for (int w = 0; w < 3; w++) {
                    EngineInstance first = w == 0 ? a : b;
                    PrefixTtftMeasure.firstToken(first.runner(), ComputeMeasure.prompt(vocab, promptTokens, 70_000 + w));
                    PrefixTtftMeasure.firstToken(c.runner(), ComputeMeasure.prompt(vocab, promptTokens, 70_100 + w));
                    first.awaitIdle(); // the blocks' publication has landed: their slots can be reused by the next prompt
                    c.awaitIdle();
                }
                // the slow tier: each read waits SLOWDOWN times what B's KV manager measured a block's recompute to take
                double recomputeBlock = b.kv().stats().recomputeSecondsPerBlock();
                long delayNanos = Math.max(1_000_000L, (long) (SLOWDOWN * recomputeBlock * 1e9));
                toB.readDelayNanos(delayNanos);
                toC.readDelayNanos(delayNanos);
                double[] cold = new double[rounds];
                double[] gated = new double[rounds];
                double[] loadedAll = new double[rounds];
                int probed = 0; // blocks B loaded over the measured rounds
                for (int r = -1; r < rounds; r++) { // round -1: warm-up, not kept
                    int[] prompt = ComputeMeasure.prompt(vocab, promptTokens, 80_000 + r);
                    long start = System.nanoTime();
                    PrefixTtftMeasure.Ttft first = PrefixTtftMeasure.firstToken(a.runner(), prompt);
                    double coldSeconds = (System.nanoTime() - start) / 1e9;
                    a.awaitIdle(); // publication into the pool finished (untimed)
                    start = System.nanoTime();
                    PrefixTtftMeasure.Ttft viaGate = PrefixTtftMeasure.firstToken(b.runner(), prompt);
                    double gatedSeconds = (System.nanoTime() - start) / 1e9;
                    start = System.nanoTime();
                    PrefixTtftMeasure.Ttft viaLoads = PrefixTtftMeasure.firstToken(c.runner(), prompt);
                    double loadedSeconds = (System.nanoTime() - start) / 1e9;
                    if (first.reused() != 0 || viaLoads.reused() != fullBlocks * blockTokens
                            || (r >= 0 && viaGate.reused() > blockTokens)) {
                        throw new IllegalStateException("round " + r + ": instance A reused " + first.reused()
                                + " prompt tokens (expected 0), B " + viaGate.reused() + " (expected at most one block of "
                                + blockTokens + "), C " + viaLoads.reused() + " (expected " + fullBlocks * blockTokens + ")");
                    }
                    if (!Arrays.equals(first.logits(), viaGate.logits()) || !Arrays.equals(first.logits(), viaLoads.logits())) {
                        throw new IllegalStateException("round " + r + ": the first token's logits differ between the cold"
                                + " prefill, the gated instance and the loading one");
                    }
                    log.printf(Locale.ROOT, "      round %d: cold %.3f s, slow tier with the gate %.3f s (%d tokens loaded),"
                            + " loading every block %.3f s%n", r, coldSeconds, gatedSeconds, viaGate.reused(), loadedSeconds);
                    b.awaitIdle();
                    c.awaitIdle();
                    if (r >= 0) {
                        cold[r] = coldSeconds;
                        gated[r] = gatedSeconds;
                        loadedAll[r] = loadedSeconds;
                        probed += viaGate.reused() / blockTokens;
                    }
                }
                Paired coldVsGated = Paired.of(cold, gated);
                double coldMedian = coldVsGated.baselineSample().median();
                double loadedMedian = dev.strata.bench.Sample.of(loadedAll).median();
                return Figure.paired(figureName(promptTokens), "s", PrefixTtftMeasure.BASELINE, coldVsGated, GOAL)
                        .withNote(String.format(Locale.ROOT, "%s; the prefix another instance published in a /dev/shm pool,"
                                        + " read through a modelled slow tier: each block read waits %.1f ms first (%.0f times"
                                        + " the recompute of a block as the instance measured it; %.1f times a block's share of"
                                        + " the cold prefill), one at a time; with kv.recompute-when-faster the instance loaded"
                                        + " %d of %d blocks in %d rounds (probes) and recomputed the rest; loading every block"
                                        + " instead took %.3f s, %.1f times the cold prefill; %d kernel threads; %d paired rounds",
                                ComputeMeasure.describe(model.config()), delayNanos / 1e6, SLOWDOWN,
                                delayNanos / 1e9 / (coldMedian * blockTokens / promptTokens), probed, fullBlocks * rounds, rounds,
                                loadedMedian, loadedMedian / coldMedian, threads, rounds));
            }
        }
    }
}
