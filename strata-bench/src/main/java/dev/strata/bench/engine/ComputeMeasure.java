package dev.strata.bench.engine;

import dev.strata.bench.Figure;
import dev.strata.bench.Paired;
import dev.strata.bench.Trials;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelCalibration;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The engine's compute figures on synthetic models, each against a ceiling measured in the same
 * run:
 * <ul>
 *   <li>decode: tokens per second of greedy decoding (one sequence, {@code ModelRunner.decode})
 *       against the memory-bandwidth roofline, the raw {@link MemorySegment#copy} bandwidth
 *       (bytes copied per second, one thread, a buffer larger than the caches) over the active
 *       weight bytes per token ({@link ModelCost}); the two alternate round by round;</li>
 *   <li>prefill: GFLOP/s of a prompt's prefill ({@link ModelCost#prefillFlops}) against the
 *       matmul kernel's own rate on a compute-bound square problem
 *       ({@link KernelCalibration#measureMatmul}, {@code [n, n]} weights, {@code n} tokens, the
 *       model's dtype, the same thread count), alternating.</li>
 * </ul>
 * Every round uses a prompt of its own (seeded random token ids), so no round reuses the KV
 * blocks of another.
 *
 * <p>Confined to the calling thread; the kernels run on their own pool.
 */
public final class ComputeMeasure {
    static final String DECODE_GOAL = ">= 0.6";
    static final String DECODE_BASELINE = "roofline: raw MemorySegment.copy bandwidth / active weight bytes per token";
    static final String PREFILL_BASELINE = "matmul kernel on a compute-bound square problem";
    private static final int BLOCK_TOKENS = 16;

    private ComputeMeasure() {
    }

    /**
     * Decode tokens/s of the model in {@code dir} against its memory-bandwidth roofline.
     *
     * @param promptTokens tokens prefilled before the timed steps
     * @param steps        decode steps timed per round
     * @param copyBytes    size of the copy that measures the bandwidth (larger than the caches)
     */
    public static Figure decode(String name, Path dir, int threads, int promptTokens, int steps, long copyBytes, int rounds) {
        try (ModelDirectory model = ModelDirectory.open(dir);
             KernelPool pool = new KernelPool(threads);
             Arena arena = Arena.ofConfined()) {
            ModelConfig c = model.config();
            ModelCost cost = ModelCost.of(model.weights());
            int blocks = (promptTokens + steps) / BLOCK_TOKENS + 2;
            try (EngineInstance engine = new EngineInstance(model, new Kernels(pool), BLOCK_TOKENS, blocks, null, null)) {
                MemorySegment src = arena.allocate(copyBytes, 4096);
                MemorySegment dst = arena.allocate(copyBytes, 4096);
                fillRandom(src, 11);
                dst.fill((byte) 1);
                long[] round = {0};
                Paired copyVsDecode = Trials.paired(rounds, () -> copyGBps(src, dst), () -> {
                    int[] prompt = prompt(c.vocabSize(), promptTokens, 1000 + round[0]++);
                    return decodeTokensPerSecond(engine.runner(), prompt, steps);
                });
                double copy = copyVsDecode.baselineSample().median();
                double roofline = copy * 1e9 / cost.activeBytes();
                long cache = lastLevelCacheBytes();
                String fits = cache <= 0 ? "last-level cache size unknown"
                        : cost.activeBytes() >= 2 * cache ? String.format(Locale.ROOT, "%.1fx the %d MiB last-level cache",
                                cost.activeBytes() / (double) cache, cache >> 20)
                        : String.format(Locale.ROOT, "NOT beyond the %d MiB last-level cache: not a memory roofline", cache >> 20);
                // each round's roofline from that round's copy bandwidth, paired with that round's decode
                Paired decodeVsRoofline = copyVsDecode.mapBaseline(gbps -> gbps * 1e9 / cost.activeBytes());
                return Figure.paired(name, "tokens/s", DECODE_BASELINE, decodeVsRoofline, DECODE_GOAL)
                        .withNote(String.format(Locale.ROOT, "%s; active weight bytes per token %.1f MB (%s, %s); copy %.2f"
                                        + " GB/s (one thread, %d MiB); %d decode steps after a %d-token prompt, %d kernel"
                                        + " threads; %d paired rounds", describe(c), cost.activeBytes() / 1e6, c.torchDtype(),
                                fits, copy, copyBytes >> 20, steps, promptTokens, threads, rounds));
            }
        }
    }

    /**
     * Prefill GFLOP/s of a {@code promptTokens}-token prompt on the model in {@code dir} against
     * the matmul kernel on {@code [square, square]} weights with {@code square} tokens.
     */
    public static Figure prefill(String name, Path dir, int threads, int promptTokens, int square, String goal, int rounds) {
        try (ModelDirectory model = ModelDirectory.open(dir); KernelPool pool = new KernelPool(threads)) {
            ModelConfig c = model.config();
            ModelCost cost = ModelCost.of(model.weights());
            int blocks = promptTokens / BLOCK_TOKENS + 2;
            double flops = cost.prefillFlops(promptTokens);
            try (EngineInstance engine = new EngineInstance(model, new Kernels(pool), BLOCK_TOKENS, blocks, null, null)) {
                long[] round = {0};
                Paired matmulVsPrefill = Trials.paired(rounds,
                        () -> KernelCalibration.measureMatmul(c.torchDtype(), square, square, square, pool, 3).gflops(),
                        () -> {
                            int[] prompt = prompt(c.vocabSize(), promptTokens, 5000 + round[0]++);
                            ModelRunner.Sequence seq = engine.runner().newSequence();
                            long start = System.nanoTime();
                            float[] logits = seq.prefill(prompt, false)[0];
                            long nanos = System.nanoTime() - start;
                            EngineInstance.argmax(logits);
                            seq.close();
                            return flops / nanos; // FLOP per ns == GFLOP/s
                        });
                return Figure.paired(name, "GFLOP/s", PREFILL_BASELINE, matmulVsPrefill, goal)
                        .withNote(String.format(Locale.ROOT, "%s; %d-token prompt, %.2f GFLOP (matrices, attention, LM head of"
                                        + " the last position); peak: %s matmul [%d, %d] x %d tokens; %d kernel threads;"
                                        + " %d paired rounds", describe(c), promptTokens, flops / 1e9, c.torchDtype(),
                                square, square, square, threads, rounds));
            }
        }
    }

    /** Decodes {@code steps} greedy tokens after {@code prompt}; the decode steps' rate. */
    static double decodeTokensPerSecond(ModelRunner runner, int[] prompt, int steps) {
        try (ModelRunner.Sequence seq = runner.newSequence()) {
            int token = EngineInstance.argmax(seq.prefill(prompt, false)[0]);
            long start = System.nanoTime();
            for (int i = 0; i < steps; i++) {
                token = EngineInstance.argmax(seq.decode(token));
            }
            return steps * 1e9 / (System.nanoTime() - start);
        }
    }

    static double copyGBps(MemorySegment src, MemorySegment dst) {
        long start = System.nanoTime();
        MemorySegment.copy(src, 0, dst, 0, src.byteSize());
        return src.byteSize() / (double) (System.nanoTime() - start);
    }

    /**
     * Bytes of the largest data or unified cache of processor 0 as Linux reports it
     * ({@code /sys/devices/system/cpu/cpu0/cache/index*}), or 0 when unknown.
     */
    static long lastLevelCacheBytes() {
        long best = 0;
        int bestLevel = -1;
        Path base = Path.of("/sys/devices/system/cpu/cpu0/cache");
        try (var dirs = java.nio.file.Files.list(base)) {
            for (Path d : dirs.filter(p -> p.getFileName().toString().startsWith("index")).toList()) {
                String type = java.nio.file.Files.readString(d.resolve("type")).trim();
                if (type.equals("Instruction")) {
                    continue;
                }
                int level = Integer.parseInt(java.nio.file.Files.readString(d.resolve("level")).trim());
                String size = java.nio.file.Files.readString(d.resolve("size")).trim(); // e.g. 32768K
                long bytes = size.endsWith("K") ? Long.parseLong(size.substring(0, size.length() - 1)) << 10
                        : size.endsWith("M") ? Long.parseLong(size.substring(0, size.length() - 1)) << 20 : Long.parseLong(size);
                if (level > bestLevel) {
                    bestLevel = level;
                    best = bytes;
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            return 0; // not Linux, or a layout this does not know: the note says so
        }
        return best;
    }

    /** {@code length} token ids in {@code [0, vocab)}, seeded. */
    static int[] prompt(int vocab, int length, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] t = new int[length];
        for (int i = 0; i < length; i++) {
            t[i] = r.nextInt(vocab);
        }
        return t;
    }

    static void fillRandom(MemorySegment s, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
    }

    /** e.g. {@code qwen3_moe 8 layers, H 1024, 16 experts top-4 of width 768}. */
    static String describe(ModelConfig c) {
        String s = String.format(Locale.ROOT, "%s %d layers, H %d, %d/%d heads of %d, vocab %d", c.family(), c.numHiddenLayers(),
                c.hiddenSize(), c.numAttentionHeads(), c.numKeyValueHeads(), c.headDim(), c.vocabSize());
        return c.moe() ? s + String.format(Locale.ROOT, ", %d experts top-%d of width %d", c.numExperts(), c.numExpertsPerTok(),
                c.expertIntermediateSize()) : s + ", MLP width " + c.intermediateSize();
    }
}
