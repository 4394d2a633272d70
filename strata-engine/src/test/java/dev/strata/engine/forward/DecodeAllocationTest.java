package dev.strata.engine.forward;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.expert.SlotScope;
import dev.strata.cache.kv.AllocationStatus;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A decode step allocates no activation array: the hidden state, q/k/v, attention output, MLP and
 * expert buffers and the logits are sized once per sequence or per runner and reused. After many
 * decode steps (one sequence, and a batch of three) the runner's activation arrays and each
 * sequence's logits array are the very same objects as before them.
 *
 * <p>The bytes a decode step allocates on the calling thread ({@code ThreadMXBean}, one kernel
 * thread, the least of several rounds) are measured and printed: what remains is allocated inside
 * the kernels (each call's range lambda, and Vector API temporaries until the JIT has compiled the
 * kernels, which on a loaded machine takes from a few hundred to several thousand steps and varies
 * from run to run), so it is reported, not asserted.
 */
class DecodeAllocationTest {
    static final int HIDDEN = 256;
    static final int VOCAB = 1024;
    static final int BLOCK_TOKENS = 16;
    static final int WARM_STEPS = 200; // lets the JIT compile the decode path before measuring
    static final int ROUNDS = 24;
    static final int ROUND_STEPS = 32;

    @TempDir
    Path dir;

    /** 2 layers, H 256, 4 heads of 64 over 2 KV heads, 4 experts top-2 of width 256 (MoE), vocab 1024, BF16. */
    private Path synth(ModelFamily family) throws Exception {
        SynthSpec spec = new SynthSpec(family, 2, 4, 2, HIDDEN, 512, 256, 4, 2, 64, VOCAB, DType.BF16,
                77 + family.ordinal(), 1, 0, false);
        Path out = dir.resolve(family.cliName());
        ModelSynthesizer.write(spec, out, (d, t, b, tb) -> { });
        return out;
    }

    private static long allocatedBytes() {
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        return threads.getThreadAllocatedBytes(Thread.currentThread().threadId());
    }

    @ParameterizedTest
    @EnumSource(value = ModelFamily.class, names = {"QWEN3", "QWEN3_MOE"})
    void aDecodeStepReusesEveryActivationArray(ModelFamily family) throws Exception {
        int slots = (8 + WARM_STEPS + ROUNDS * ROUND_STEPS) / BLOCK_TOKENS + 2;
        try (ForwardRig rig = new ForwardRig(synth(family), 1, BLOCK_TOKENS, slots, 0, SlotScope.PER_LAYER);
                ModelRunner.Sequence seq = rig.runner.newSequence()) {
            float[] logits = seq.prefill(new int[] {3, 14, 15, 92, 65, 35, 89, 79}, false)[0];
            int token = ForwardRig.argmax(logits);
            for (int i = 0; i < WARM_STEPS; i++) {
                token = ForwardRig.argmax(seq.decode(token));
            }
            List<Object> arrays = rig.runner.forwardPass().activationArrays();
            long least = Long.MAX_VALUE;
            for (int round = 0; round < ROUNDS; round++) {
                long before = allocatedBytes();
                for (int i = 0; i < ROUND_STEPS; i++) {
                    token = ForwardRig.argmax(seq.decode(token));
                }
                least = Math.min(least, (allocatedBytes() - before) / ROUND_STEPS);
            }
            System.out.printf("%s: %d bytes allocated per decode step (least of %d rounds)%n", family, least, ROUNDS);
            assertThat(seq.decode(token)).as("decode returns the sequence's own logits array").isSameAs(logits);
            assertSameArrays(rig.runner.forwardPass().activationArrays(), arrays);
        }
    }

    @ParameterizedTest
    @EnumSource(value = ModelFamily.class, names = {"QWEN3", "QWEN3_MOE"})
    void aBatchedDecodeStepReusesEveryActivationArray(ModelFamily family) throws Exception {
        int batch = 3;
        int slots = batch * ((4 + WARM_STEPS + ROUNDS * ROUND_STEPS) / BLOCK_TOKENS + 2);
        try (ForwardRig rig = new ForwardRig(synth(family), 1, BLOCK_TOKENS, slots, 0, SlotScope.PER_LAYER)) {
            List<ModelRunner.Sequence> seqs = new ArrayList<>();
            int[] next = new int[batch];
            try {
                for (int s = 0; s < batch; s++) {
                    ModelRunner.Sequence seq = rig.runner.newSequence();
                    seqs.add(seq);
                    next[s] = ForwardRig.argmax(seq.prefill(new int[] {5 + s, 9, 2 * s + 1, 40}, false)[0]);
                }
                for (int i = 0; i < WARM_STEPS; i++) {
                    batchStep(rig, seqs, next);
                }
                List<Object> arrays = rig.runner.forwardPass().activationArrays();
                float[][] logits = batchStep(rig, seqs, next);
                long least = Long.MAX_VALUE;
                for (int round = 0; round < ROUNDS; round++) {
                    long before = allocatedBytes();
                    for (int i = 0; i < ROUND_STEPS; i++) {
                        batchStep(rig, seqs, next);
                    }
                    least = Math.min(least, (allocatedBytes() - before) / ((long) ROUND_STEPS * batch));
                }
                System.out.printf("%s: %d bytes allocated per decoded token of a batch of %d%n", family, least, batch);
                float[][] last = batchStep(rig, seqs, next);
                assertThat(last).as("the batch's logits arrays are reused").isSameAs(logits);
                for (int s = 0; s < batch; s++) {
                    assertThat(last[s]).isSameAs(logits[s]);
                }
                assertSameArrays(rig.runner.forwardPass().activationArrays(), arrays);
            } finally {
                for (ModelRunner.Sequence seq : seqs) {
                    seq.close();
                }
            }
        }
    }

    private static void assertSameArrays(List<Object> now, List<Object> before) {
        assertThat(now).hasSameSizeAs(before);
        for (int i = 0; i < now.size(); i++) {
            assertThat(now.get(i)).as("activation array %d after the decode steps", i).isSameAs(before.get(i));
        }
    }

    private static float[][] batchStep(ForwardRig rig, List<ModelRunner.Sequence> seqs, int[] next) {
        for (int s = 0; s < next.length; s++) {
            ModelRunner.Sequence seq = seqs.get(s);
            if (seq.reserve(seq.length() + 1) != AllocationStatus.ALLOCATED) { // no assertion object per step
                throw new AssertionError("no KV slot for the next token of a sequence of " + seq.length());
            }
        }
        float[][] logits = rig.runner.decodeBatch(seqs, next);
        for (int s = 0; s < next.length; s++) {
            next[s] = ForwardRig.argmax(logits[s]);
        }
        return logits;
    }
}
