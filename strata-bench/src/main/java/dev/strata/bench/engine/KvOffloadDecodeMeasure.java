package dev.strata.bench.engine;

import dev.strata.bench.Figure;
import dev.strata.bench.Paired;
import dev.strata.bench.Trials;
import dev.strata.cache.kv.BlockLocation;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvLink;
import dev.strata.cache.kv.KvManagerStats;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.serve.ServeEngine;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.DoubleSupplier;

/**
 * Decode tokens/s of a sequence whose KV is swapped out to the offload tiers and back while it
 * decodes, against the same decoding with all its KV resident: the overhead of KV offloading as a
 * serving engine with HOST and DISK KV tiers pays it.
 *
 * <p>Two {@link ServeEngine}s open the same model: the baseline with no offload tier and KV slots
 * for the sequence and a second one of the same length, the subject with slots for one sequence
 * and a HOST KV tier above a DISK KV tier ({@link ServeEngine.Options.Builder#hostKv},
 * {@link ServeEngine.Options.Builder#diskKv}), which its KV manager writes committed blocks
 * through to. Each round both prefill the same seeded prompt and decode {@code steps} greedy
 * tokens, and every {@code period} steps both run a filler prompt of the same length in another
 * sequence, untimed: the other request a serving engine runs meanwhile. The baseline keeps its
 * sequence's KV resident beside the filler's; the subject's sequence is preempted first (its committed blocks
 * kept in the offload tiers, its slots freed once the offloads the preemption started have
 * landed) and staged for its resume as a scheduler stages the preempted sequence it resumes next
 * ({@link ModelRunner.Sequence#stageForResume}: the store's copies, on HOST or DISK, are read into
 * HOST staging buffers asynchronously), a filler prompt of the same length runs in another
 * sequence so that the freed slots are reused and the sequence's blocks leave the device (the
 * staging reads run meanwhile; the filler's own offloads may still be in flight when the resume
 * starts, as in a serving engine), and the sequence resumes as a scheduler resumes a decoding
 * sequence ({@link ModelRunner.Sequence#resumeForDecode}): its staged blocks are copied into slots
 * (prefetch hits; late ones wait for their read), the others loaded back from HOST or DISK by the
 * manager's loads, and the tokens whose KV did not come back are computed with its next token.
 * The preemption, the staging call and the filler are not timed; the resume is. So both sides do
 * the same work but for the offload and its resume, and the filler's effect on the processor's
 * caches falls on both. Both sides must decode the same tokens. Figure {@code kv_offload_decode_vs_resident}: tokens/s against the all-resident
 * side (goal ratio {@code >= 0.8}).
 *
 * <p>Confined to the calling thread.
 */
public final class KvOffloadDecodeMeasure {
    public static final String NAME = "kv_offload_decode_vs_resident";
    public static final String GOAL = ">= 0.8";
    public static final String BASELINE = "the same decoding and filler requests with all KV resident (no offload tier)";
    private static final int BLOCK_TOKENS = 16;

    private KvOffloadDecodeMeasure() {
    }

    /**
     * Measures the model in {@code dir}.
     *
     * @param diskDir directory of the DISK KV tier's files (removed at close)
     * @param period  decode steps between two swaps, at least 1
     */
    public static Figure measure(Path dir, Path diskDir, int threads, int promptTokens, int steps, int period, int rounds) {
        if (period < 1 || steps < period) {
            throw new IllegalArgumentException("KV offload decode: need 1 <= period <= steps, got period " + period + ", steps " + steps);
        }
        int seqBlocks = (promptTokens + steps) / BLOCK_TOKENS + 2;
        int kvBlocks = seqBlocks + 2; // one sequence and little more: the filler takes the slots a preempted sequence freed
        ServeEngine.Options resident = ServeEngine.Options.builder().threads(threads).blockTokens(BLOCK_TOKENS)
                .kvBlocks(2 * seqBlocks + 2).conclude(); // the sequence stays resident beside the filler
        try (ServeEngine base = new ServeEngine(dir, resident)) {
            long blockBytes = ModelRunner.kvGeometry(base.model().config(), BLOCK_TOKENS).bytesPerBlock();
            long hostBytes = blockBytes * seqBlocks / 2; // half a sequence on HOST: the rest goes on to DISK
            long diskBytes = blockBytes * seqBlocks * 8;
            ServeEngine.Options offloading = ServeEngine.Options.builder().threads(threads).blockTokens(BLOCK_TOKENS).kvBlocks(kvBlocks)
                    .hostKv(hostBytes).diskKv(diskDir, diskBytes).conclude();
            try (ServeEngine tiered = new ServeEngine(dir, offloading)) {
                int vocab = base.model().config().vocabSize();
                List<int[]> baseTokens = new ArrayList<>();
                List<int[]> tieredTokens = new ArrayList<>();
                int[] roundOf = {0, 0};
                int[] swaps = {0};
                DoubleSupplier baseRun = () -> decode(base.runner(), base.kv(), vocab, promptTokens, steps, period, false,
                        31_000 + roundOf[0]++, baseTokens, null);
                DoubleSupplier tieredRun = () -> decode(tiered.runner(), tiered.kv(), vocab, promptTokens, steps, period, true,
                        31_000 + roundOf[1]++, tieredTokens, swaps);
                Paired p = Trials.paired(rounds, baseRun, tieredRun);
                for (int i = 0; i < baseTokens.size(); i++) {
                    if (!Arrays.equals(baseTokens.get(i), tieredTokens.get(i))) {
                        throw new IllegalStateException("round " + i + ": decoding with KV swapped through HOST/DISK gave other tokens"
                                + " than with all KV resident");
                    }
                }
                KvManagerStats s = tiered.kv().stats();
                long loaded = s.bytes(KvLink.RELOAD) + s.bytes(KvLink.PREFETCH);
                return Figure.paired(NAME, "tokens/s", BASELINE, p, GOAL).withNote(String.format(Locale.ROOT,
                        "%s; %d-token prompt, %d decode steps, the sequence swapped out and back every %d steps (%d swaps in all);"
                                + " KV blocks of %d KiB, HOST KV tier %d KiB above a DISK KV tier %d KiB; each preempted sequence staged"
                                + " for its resume (%d blocks staged into HOST buffers); loaded back %.1f MiB"
                                + " (%d blocks found on HOST, %d on DISK; %d prefetch hits, %d late, %d failed stagings); %d paired rounds",
                        ComputeMeasure.describe(base.model().config()), promptTokens, steps, period, swaps[0], blockBytes >> 10,
                        hostBytes >> 10, diskBytes >> 10, s.blocks(KvLink.STAGE), loaded / (double) (1 << 20), s.hits(BlockLocation.HOST),
                        s.hits(BlockLocation.DISK), s.prefetchHits(), s.prefetchLate(), s.failedStagings(), rounds));
            }
        }
    }

    /**
     * Waits (applying completions) until no block's offload is in flight, without waiting for the
     * staging reads, which go on and may be late at the resume.
     */
    private static void awaitOffloads(KvBlockManager kv) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            kv.poll();
            if (kv.offloadsInFlight() == 0) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("KV offloads still in flight 60 s after the filler");
            }
            LockSupport.parkNanos(50_000);
        }
    }

    /**
     * Prefills a seeded prompt and decodes {@code steps} greedy tokens; every {@code period} steps a
     * filler sequence runs untimed, and with {@code swap} the sequence is swapped out before it,
     * staged for its resume and swapped back after it. Returns tokens/s over the decode steps and
     * the resumes.
     */
    private static double decode(ModelRunner runner, KvBlockManager kv, int vocab, int promptTokens, int steps, int period, boolean swap,
            long seed, List<int[]> record, int[] swaps) {
        int[] prompt = ComputeMeasure.prompt(vocab, promptTokens, seed);
        int[] out = new int[steps];
        long untimed = 0;
        try (ModelRunner.Sequence seq = runner.newSequence()) {
            int token = EngineInstance.argmax(seq.prefill(prompt, false)[0]);
            long start = System.nanoTime();
            for (int i = 0; i < steps; i++) {
                float[] logits;
                if (i > 0 && i % period == 0) {
                    long fillerStart = System.nanoTime();
                    if (swap) {
                        seq.preempt();
                        if (!kv.awaitIdle(60, TimeUnit.SECONDS)) { // the offloads the preemption started have landed, its slots are free
                            throw new IllegalStateException("KV offloads still in flight 60 s after a preemption");
                        }
                        seq.stageForResume(); // the lookahead a scheduler gives the sequence it resumes next: reads run while the filler does
                    }
                    try (ModelRunner.Sequence filler = runner.newSequence()) { // with a swap, takes the freed slots: the blocks leave the device
                        filler.prefill(ComputeMeasure.prompt(vocab, promptTokens + i, ~seed - i), false);
                    }
                    if (swap) {
                        awaitOffloads(kv); // the filler's write-through copies are its work: its slots are reusable once they land
                    }
                    untimed += System.nanoTime() - fillerStart;
                    if (swap) {
                        if (!seq.resumeForDecode()) {
                            throw new IllegalStateException("the KV cache has no room to resume the swapped-out sequence");
                        }
                        swaps[0]++;
                    }
                }
                logits = seq.decode(token);
                token = EngineInstance.argmax(logits);
                out[i] = token;
            }
            double tps = steps * 1e9 / (System.nanoTime() - start - untimed);
            record.add(out);
            return tps;
        }
    }
}
