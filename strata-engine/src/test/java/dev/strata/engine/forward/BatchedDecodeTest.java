package dev.strata.engine.forward;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.expert.SlotScope;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.testing.Property;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link ModelRunner#decodeBatch}: every sequence's logits are bit-identical to decoding it alone,
 * for every family and weight dtype, over random batches (sizes, which sequences take part in each
 * step, prompt lengths, shared prefixes), expert caps (unpaged, a cap that forces token groups, all
 * experts) and kernel thread counts; a pass that throws midway appends nothing.
 */
class BatchedDecodeTest {
    static final int BLOCK_TOKENS = 4;
    static final int VOCAB = 400;

    @TempDir
    static Path dir;
    static final Map<ModelFamily, Path> models = new EnumMap<>(ModelFamily.class);

    @BeforeAll
    static void synth() throws Exception {
        for (ModelFamily family : ModelFamily.values()) {
            DType dtype = switch (family) {
                case MIXTRAL -> DType.F16;
                case LLAMA -> DType.F32;
                default -> DType.BF16;
            };
            // hidden 40 and expert width 36: odd multiples of 4, so the kernels' vector bodies have tails
            SynthSpec spec = new SynthSpec(family, 2, 6, 2, 40, 36, 36, 6, 2, 8, VOCAB, dtype, 7000 + family.ordinal(), 1, 0,
                    family == ModelFamily.QWEN3);
            Path out = dir.resolve(family.cliName());
            ModelSynthesizer.write(spec, out, (d, t, b, tb) -> { });
            models.put(family, out);
        }
    }

    @ParameterizedTest
    @EnumSource(ModelFamily.class)
    void batchedDecodeEqualsDecodingEachSequenceAlone(ModelFamily family) {
        Path model = models.get(family);
        long[] grouped = {0}; // MoE layer runs of decode batches split into token groups
        int[] trial = {0};
        Property.forAll("batched decode " + family, 6, random -> {
            int threads = 1 + random.nextInt(3);
            int[] caps = {0, 2, 6}; // unpaged; a cap at top-k, so batches split into token groups; every expert
            int cap = caps[trial[0]++ % caps.length];
            SlotScope scope = random.nextBoolean() ? SlotScope.PER_LAYER : SlotScope.SHARED;
            int count = 1 + random.nextInt(6);
            int[][] prompts = new int[count][];
            for (int s = 0; s < count; s++) {
                int length = 1 + random.nextInt(13);
                prompts[s] = tokens(random, length);
                if (s > 0 && random.nextInt(3) == 0) { // share a prefix with an earlier prompt: prefix hits, dedup at commit
                    int[] other = prompts[random.nextInt(s)];
                    System.arraycopy(other, 0, prompts[s], 0, Math.min(other.length, length) - 1);
                }
            }
            int steps = 1 + random.nextInt(6);
            List<List<Integer>> history = new ArrayList<>(); // per sequence, the tokens decoded
            List<List<float[]>> got = new ArrayList<>(); // per sequence, the logits after each decoded token
            for (int s = 0; s < count; s++) {
                history.add(new ArrayList<>());
                got.add(new ArrayList<>());
            }
            try (ForwardRig rig = new ForwardRig(model, threads, BLOCK_TOKENS, 96, cap, scope)) {
                List<ModelRunner.Sequence> seqs = new ArrayList<>();
                for (int[] p : prompts) {
                    ModelRunner.Sequence seq = rig.runner.newSequence();
                    seq.prefill(p, false);
                    seqs.add(seq);
                }
                long groupedBefore = rig.runner.groupedLayerRuns();
                for (int step = 0; step < steps; step++) {
                    List<ModelRunner.Sequence> batch = new ArrayList<>();
                    List<Integer> members = new ArrayList<>();
                    for (int s = 0; s < count; s++) {
                        if (random.nextInt(4) != 0) {
                            members.add(s);
                        }
                    }
                    if (members.isEmpty()) {
                        members.add(random.nextInt(count));
                    }
                    java.util.Collections.shuffle(members, new java.util.Random(random.nextLong())); // batch order is free
                    int[] next = new int[members.size()];
                    for (int b = 0; b < members.size(); b++) {
                        ModelRunner.Sequence seq = seqs.get(members.get(b));
                        batch.add(seq);
                        next[b] = random.nextInt(VOCAB);
                        assertThat(seq.reserve(seq.length() + 1)).isEqualTo(dev.strata.cache.kv.AllocationStatus.ALLOCATED);
                    }
                    float[][] logits = rig.runner.decodeBatch(batch, next);
                    assertThat(logits.length).isEqualTo(members.size());
                    for (int b = 0; b < members.size(); b++) {
                        history.get(members.get(b)).add(next[b]);
                        got.get(members.get(b)).add(logits[b].clone()); // the sequence's array, overwritten by its next step
                    }
                    rig.kv.checkInvariants();
                    if (rig.pager != null) {
                        rig.pager.checkInvariants();
                    }
                }
                grouped[0] += rig.runner.groupedLayerRuns() - groupedBefore;
                for (ModelRunner.Sequence seq : seqs) {
                    seq.close();
                }
                rig.kv.checkInvariants();
            }
            // each sequence alone, unpaged, one kernel thread
            try (ForwardRig alone = new ForwardRig(model, 1, BLOCK_TOKENS, 96, 0, SlotScope.PER_LAYER)) {
                for (int s = 0; s < count; s++) {
                    try (ModelRunner.Sequence seq = alone.runner.newSequence()) {
                        seq.prefill(prompts[s], false);
                        List<Integer> h = history.get(s);
                        for (int i = 0; i < h.size(); i++) {
                            float[] want = seq.decode(h.get(i));
                            assertThat(bits(got.get(s).get(i))).as("sequence %d, decoded token %d (threads %d, cap %d, %s)", s, i,
                                    threads, cap, scope).isEqualTo(bits(want));
                        }
                    }
                }
            }
        });
        if (isMoe(family)) {
            assertThat(grouped[0]).as("some decode batch ran its experts in token groups").isPositive();
        }
    }

    @Test
    void aBatchIsCheckedBeforeAnythingRuns() {
        try (ForwardRig rig = new ForwardRig(models.get(ModelFamily.QWEN3_MOE), 1, BLOCK_TOKENS, 16, 0, SlotScope.PER_LAYER);
                ModelRunner.Sequence a = rig.runner.newSequence();
                ModelRunner.Sequence b = rig.runner.newSequence();
                ModelRunner.Sequence fresh = rig.runner.newSequence()) {
            a.prefill(new int[] {5, 6, 7}, false);
            b.prefill(new int[] {8, 9}, false);
            assertThatThrownBy(() -> rig.runner.decodeBatch(List.of(a, a), new int[] {1, 2}))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("twice");
            assertThatThrownBy(() -> rig.runner.decodeBatch(List.of(a, b), new int[] {1}))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("2 sequences but 1 tokens");
            assertThatThrownBy(() -> rig.runner.decodeBatch(List.of(a, b), new int[] {1, VOCAB + 1000}))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("" + (VOCAB + 1000));
            assertThatThrownBy(() -> rig.runner.decodeBatch(List.of(a, fresh), new int[] {1, 2}))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("prefilled");
            assertThat(a.length()).as("nothing appended by a refused batch").isEqualTo(3);
            assertThat(b.length()).isEqualTo(2);
            assertThat(rig.runner.decodeBatch(List.of(), new int[0]).length).isZero();
            rig.kv.checkInvariants();
        }
    }

    /**
     * A pass that throws in the middle (after every row's first layer wrote its KV, inside the first
     * MoE layer's routing) appends nothing: each sequence keeps its length, and decoding the same
     * tokens again, as a batch or alone, gives the bits a pass that never failed gives.
     */
    @Test
    void aDecodeThatThrowsMidPassAppendsNothingAndTheSameTokensDecodeAgain() {
        Path model = models.get(ModelFamily.QWEN3_MOE);
        SplittableRandom random = new SplittableRandom(4711);
        int[][] prompts = {tokens(random, 5), tokens(random, 8), tokens(random, 3)};
        int[] next = {random.nextInt(VOCAB), random.nextInt(VOCAB), random.nextInt(VOCAB)};
        int after = random.nextInt(VOCAB); // decoded alone by the first sequence after the batch
        float[][] want = new float[next.length + 1][];
        try (ForwardRig clean = new ForwardRig(model, 1, BLOCK_TOKENS, 96, 0, SlotScope.PER_LAYER)) {
            List<ModelRunner.Sequence> seqs = prefilled(clean, prompts);
            float[][] logits = clean.runner.decodeBatch(seqs, next);
            for (int i = 0; i < next.length; i++) {
                want[i] = logits[i].clone();
            }
            want[next.length] = seqs.get(0).decode(after).clone();
        }
        try (ForwardRig rig = new ForwardRig(model, 1, BLOCK_TOKENS, 96, 0, SlotScope.PER_LAYER)) {
            List<ModelRunner.Sequence> seqs = prefilled(rig, prompts);
            int[] routed = {0};
            boolean[] faulty = {true};
            rig.runner.routingObserver((layer, token, topK) -> {
                if (faulty[0] && routed[0]++ == 1) { // the second row's routing in the first MoE layer
                    throw new IllegalStateException("expert tier faulted mid-pass");
                }
            });
            assertThatThrownBy(() -> rig.runner.decodeBatch(seqs, next)).hasMessageContaining("faulted mid-pass");
            for (int i = 0; i < prompts.length; i++) {
                assertThat(seqs.get(i).length()).as("sequence " + i + " after the failed batch").isEqualTo(prompts[i].length);
            }
            routed[0] = 0;
            assertThatThrownBy(() -> seqs.get(1).decode(next[1])).hasMessageContaining("faulted mid-pass");
            assertThat(seqs.get(1).length()).as("sequence 1 after its failed decode").isEqualTo(prompts[1].length);

            faulty[0] = false;
            float[][] logits = rig.runner.decodeBatch(seqs, next);
            for (int i = 0; i < next.length; i++) {
                assertThat(bits(logits[i])).as("sequence " + i + " decoded again").isEqualTo(bits(want[i]));
                assertThat(seqs.get(i).length()).isEqualTo(prompts[i].length + 1);
            }
            assertThat(bits(seqs.get(0).decode(after))).as("the next token after").isEqualTo(bits(want[next.length]));
            rig.kv.checkInvariants();
            for (ModelRunner.Sequence s : seqs) {
                s.close();
            }
        }
    }

    /** Each prompt prefilled in a new sequence of {@code rig}, holding a slot for its next token. */
    private static List<ModelRunner.Sequence> prefilled(ForwardRig rig, int[][] prompts) {
        List<ModelRunner.Sequence> seqs = new ArrayList<>();
        for (int[] p : prompts) {
            ModelRunner.Sequence seq = rig.runner.newSequence();
            seq.prefill(p, false);
            assertThat(seq.reserve(p.length + 1)).isEqualTo(dev.strata.cache.kv.AllocationStatus.ALLOCATED);
            seqs.add(seq);
        }
        return seqs;
    }

    private static boolean isMoe(ModelFamily family) {
        return configOf(family).moe();
    }

    private static dev.strata.engine.model.ModelConfig configOf(ModelFamily family) {
        try (dev.strata.engine.model.ModelDirectory d = dev.strata.engine.model.ModelDirectory.open(models.get(family))) {
            return d.config();
        }
    }

    private static int[] tokens(SplittableRandom random, int length) {
        int[] t = new int[length];
        for (int i = 0; i < length; i++) {
            t[i] = random.nextInt(VOCAB);
        }
        return t;
    }

    static int[] bits(float[] x) {
        int[] b = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            b[i] = Float.floatToRawIntBits(x[i]);
        }
        return b;
    }
}
