package dev.strata.engine.forward;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.cache.expert.SlotScope;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.engine.model.Tensor;
import dev.strata.engine.model.WeightFiles;
import dev.strata.engine.synth.SafetensorsWriter;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The engine's forward pass against the double-precision {@link ReferenceForward} for every family
 * (golden test), and bit-identity of greedy generation across expert paging, expert caps, prefix
 * hits and kernel thread counts.
 *
 * <p>Tolerance: the engine computes in float (BF16/F16/F32 weights widened exactly, F32
 * accumulation), the reference in double over the same weight values. Every logit must lie within
 * {@link #RELATIVE_TOLERANCE} × (the largest |logit| of that position, at least 1) of the reference,
 * and the argmax must agree.
 */
class ModelRunnerTest {
    /** Largest accepted |engine − reference| per logit, relative to the position's largest |logit| (at least 1). */
    static final double RELATIVE_TOLERANCE = 1e-5;
    static final int BLOCK_TOKENS = 4;
    static final int PROMPT = 11; // odd: two full blocks and a partial one
    static final int STEPS = 5;

    @TempDir
    Path dir;

    /** A small model of {@code family}: 3 layers, H 48, 6 heads of 8 over 2 KV heads, 6 experts top-2, seeded. */
    private static SynthSpec spec(ModelFamily family) {
        DType dtype = switch (family) {
            case MIXTRAL -> DType.F16;
            case LLAMA -> DType.F32;
            default -> DType.BF16;
        };
        return new SynthSpec(family, 3, 6, 2, 48, 40, 24, 6, 2, 8, 400, dtype, 1000 + family.ordinal(), 1, 0,
                family == ModelFamily.QWEN3);
    }

    private Path synth(ModelFamily family) throws Exception {
        Path out = dir.resolve(family.cliName());
        ModelSynthesizer.write(spec(family), out, (d, t, b, tb) -> { });
        return out;
    }

    private static int[] prompt(long seed, int vocab) {
        SplittableRandom random = new SplittableRandom(seed);
        int[] p = new int[PROMPT];
        for (int i = 0; i < p.length; i++) {
            p[i] = random.nextInt(vocab);
        }
        return p;
    }

    @ParameterizedTest
    @EnumSource(ModelFamily.class)
    void logitsMatchTheDoubleReferenceForPrefillAndDecode(ModelFamily family) throws Exception {
        golden(family.toString(), family, synth(family));
    }

    /** Config fields the synthesizer leaves at their defaults: llama3 and linear RoPE scaling, OLMoE's clip_qkv. */
    @ParameterizedTest
    @EnumSource(value = ModelFamily.class, names = {"LLAMA", "QWEN3", "OLMOE"})
    void logitsMatchTheReferenceWithRopeScalingAndClippedQkv(ModelFamily family) throws Exception {
        Path model = synth(family);
        int[] prompt = prompt(7 + family.ordinal(), spec(family).vocab());
        double[][] plain = referenceLogits(model, prompt);
        Path config = model.resolve("config.json");
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = (ObjectNode) json.readTree(config.toFile());
        String label;
        switch (family) {
            case LLAMA -> {
                // head_dim 8, theta 10000: wavelengths 6.3, 63, 628, 6283 against 16/4 and 16/1: one pair blended, three scaled
                ObjectNode scaling = root.putObject("rope_scaling");
                scaling.put("rope_type", "llama3").put("factor", 8.0).put("low_freq_factor", 1.0)
                        .put("high_freq_factor", 4.0).put("original_max_position_embeddings", 16);
                label = "LLAMA rope llama3";
            }
            case QWEN3 -> {
                root.putObject("rope_scaling").put("rope_type", "linear").put("factor", 2.5);
                label = "QWEN3 rope linear";
            }
            default -> {
                root.put("clip_qkv", 0.05);
                label = "OLMOE clip_qkv 0.05";
            }
        }
        json.writeValue(config.toFile(), root);
        golden(label, family, model);
        double[][] changed = referenceLogits(model, prompt);
        assertThat(changed[PROMPT - 1]).as("%s changes the logits", label).isNotEqualTo(plain[PROMPT - 1]);
    }

    /** attention_bias: the synthesized Llama rewritten with seeded q/k/v/o biases added. */
    @org.junit.jupiter.api.Test
    void logitsMatchTheReferenceWithAttentionBiases() throws Exception {
        ModelFamily family = ModelFamily.LLAMA;
        Path model = synth(family);
        int[] prompt = prompt(7 + family.ordinal(), spec(family).vocab());
        double[][] plain = referenceLogits(model, prompt);
        List<SafetensorsWriter.Spec> tensors = new ArrayList<>();
        try (ModelDirectory m = ModelDirectory.open(model)) {
            for (String name : m.files().names()) {
                Tensor t = m.files().tensor(name);
                float[] values = new float[(int) t.elements()];
                for (int i = 0; i < values.length; i++) {
                    values[i] = t.getFloat(i);
                }
                tensors.add(spec(name, t.dtype(), t.shape(), values));
            }
            ModelConfig c = m.config();
            SplittableRandom random = new SplittableRandom(31);
            for (int l = 0; l < c.numHiddenLayers(); l++) {
                String a = "model.layers." + l + ".self_attn.";
                int[] widths = {c.qDim(), c.kvDim(), c.kvDim(), c.hiddenSize()};
                String[] names = {"q_proj", "k_proj", "v_proj", "o_proj"};
                for (int i = 0; i < 4; i++) {
                    float[] bias = new float[widths[i]];
                    for (int j = 0; j < bias.length; j++) {
                        bias[j] = (float) (0.2 * random.nextGaussian());
                    }
                    tensors.add(spec(a + names[i] + ".bias", DType.F32, new long[] {widths[i]}, bias));
                }
            }
        }
        Path rewritten = model.resolve("rewritten.tmp");
        SafetensorsWriter.write(rewritten, tensors, Map.of("format", "pt"));
        Files.move(rewritten, model.resolve(WeightFiles.SINGLE_FILE), StandardCopyOption.REPLACE_EXISTING);
        Path config = model.resolve("config.json");
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = (ObjectNode) json.readTree(config.toFile());
        root.put("attention_bias", true);
        json.writeValue(config.toFile(), root);
        try (ModelDirectory m = ModelDirectory.open(model)) {
            assertThat(m.weights().layer(0).attention().oBias()).isNotNull();
            assertThat(m.weights().unusedTensors()).isEmpty();
        }
        golden("LLAMA attention_bias", family, model);
        assertThat(referenceLogits(model, prompt)[PROMPT - 1]).as("biases change the logits").isNotEqualTo(plain[PROMPT - 1]);
    }

    private static SafetensorsWriter.Spec spec(String name, DType dtype, long[] shape, float[] values) {
        int[] at = {0};
        return new SafetensorsWriter.Spec(name, dtype, shape, () -> values[at[0]++]);
    }

    private static double[][] referenceLogits(Path model, int[] prompt) {
        try (ModelDirectory m = ModelDirectory.open(model)) {
            return new ReferenceForward(m.weights()).logits(prompt);
        }
    }

    private void golden(String label, ModelFamily family, Path model) {
        // MoE models page their experts at the tightest cap, so prefill runs in token groups
        int k = spec(family).topK();
        try (ForwardRig rig = new ForwardRig(model, 2, BLOCK_TOKENS, 16, k, SlotScope.PER_LAYER)) {
            ReferenceForward reference = new ReferenceForward(rig.model.weights());
            int vocab = rig.model.config().vocabSize();
            int[] prompt = prompt(7 + family.ordinal(), vocab);
            double worst = 0;
            double largest = 0;
            try (ModelRunner.Sequence s = rig.runner.newSequence()) {
                float[][] engine = s.prefill(prompt, true);
                double[][] expected = reference.logits(prompt);
                assertThat(engine.length).isEqualTo(expected.length);
                for (int p = 0; p < prompt.length; p++) {
                    for (double v : expected[p]) {
                        largest = Math.max(largest, Math.abs(v));
                    }
                    worst = Math.max(worst, check(label, "prefill position " + p, engine[p], expected[p]));
                }
                int[] tokens = prompt.clone();
                float[] last = engine[prompt.length - 1];
                for (int step = 0; step < STEPS; step++) {
                    int next = ForwardRig.argmax(last);
                    tokens = java.util.Arrays.copyOf(tokens, tokens.length + 1);
                    tokens[tokens.length - 1] = next;
                    last = s.decode(next);
                    double[][] ref = reference.logits(tokens);
                    worst = Math.max(worst, check(label, "decode step " + step, last, ref[ref.length - 1]));
                }
            }
            if (family.moe()) {
                assertThat(rig.runner.groupedLayerRuns()).as("prefill at the tightest cap runs in token groups").isPositive();
            }
            System.out.printf("golden %s: largest relative logit error %.3g (tolerance %.0g), largest |logit| %.3g%n",
                    label, worst, RELATIVE_TOLERANCE, largest);
        }
    }

    private static double check(String family, String where, float[] engine, double[] expected) {
        assertThat(engine).hasSize(expected.length);
        double scale = 1;
        for (double v : expected) {
            scale = Math.max(scale, Math.abs(v));
        }
        double worst = 0;
        for (int i = 0; i < expected.length; i++) {
            worst = Math.max(worst, Math.abs(engine[i] - expected[i]) / scale);
        }
        assertThat(worst).as("%s %s: largest relative logit error", family, where).isLessThanOrEqualTo(RELATIVE_TOLERANCE);
        assertThat(ForwardRig.argmax(engine)).as("%s %s: argmax", family, where).isEqualTo(ForwardRig.argmax(expected));
        return worst;
    }

    @ParameterizedTest
    @EnumSource(ModelFamily.class)
    void greedyGenerationIsBitIdenticalAcrossPagingCapsPrefixHitsAndThreads(ModelFamily family) throws Exception {
        Path model = synth(family);
        SynthSpec spec = spec(family);
        int[] prompt;
        ForwardRig.Generation baseline;
        // baseline: experts read in place (all resident), one kernel thread, cold KV
        try (ForwardRig rig = new ForwardRig(model, 1, BLOCK_TOKENS, 16, 0, SlotScope.PER_LAYER)) {
            prompt = prompt(99 + family.ordinal(), rig.model.config().vocabSize());
            assertThat(rig.kv.stats().recomputeSecondsPerBlock()).as("no prefill yet").isNaN();
            baseline = rig.greedy(prompt, STEPS);
            assertThat(baseline.reusedTokens()).isZero();
            assertThat(rig.kv.stats().recomputeSecondsPerBlock()).as("the prefill told the KV manager its speed").isPositive();
            // a second run of the same prompt reuses the committed blocks (never the last token)
            ForwardRig.Generation hit = rig.greedy(prompt, STEPS);
            assertThat(hit.reusedTokens()).isEqualTo((PROMPT - 1) / BLOCK_TOKENS * BLOCK_TOKENS);
            assertIdentical(family + " prefix hit", hit, baseline);
        }
        List<String> variants = new ArrayList<>();
        List<int[]> settings = new ArrayList<>(); // {threads, slotsPerLayer, scope ordinal, KV slots[, 1: masters on DISK]}
        settings.add(new int[] {3, 0, 0, 16});
        // the tightest KV: 16 tokens fill 4 blocks, so the second run evicts the first run's cached tail
        settings.add(new int[] {1, 0, 0, (PROMPT + STEPS) / BLOCK_TOKENS});
        if (family.moe()) {
            for (int k = spec.topK(); k <= spec.experts(); k++) {
                settings.add(new int[] {k % 2 == 0 ? 1 : 3, k, SlotScope.PER_LAYER.ordinal(), 16});
            }
            settings.add(new int[] {1, spec.topK(), SlotScope.SHARED.ordinal(), 16});
            // misses from DISK through the transfer engine: resident experts run while the others arrive
            settings.add(new int[] {2, spec.topK() + 1, SlotScope.PER_LAYER.ordinal(), 16, 1});
            settings.add(new int[] {3, spec.topK(), SlotScope.SHARED.ordinal(), 16, 1});
        }
        for (int[] v : settings) {
            SlotScope scope = SlotScope.values()[v[2]];
            boolean onDisk = v.length > 4 && v[4] == 1;
            String name = family + " threads " + v[0] + " expert slots/layer " + (v[1] == 0 ? "all (in place)" : v[1])
                    + " " + scope + " KV slots " + v[3] + (onDisk ? " masters on DISK" : "");
            Path diskDir = onDisk ? dir.resolve("disk-" + variants.size()) : null;
            try (ForwardRig rig = new ForwardRig(model, v[0], BLOCK_TOKENS, v[3], v[1], scope, diskDir)) {
                ForwardRig.Generation cold = rig.greedy(prompt, STEPS);
                assertIdentical(name + " cold", cold, baseline);
                ForwardRig.Generation hit = rig.greedy(prompt, STEPS);
                assertThat(hit.reusedTokens()).isPositive();
                assertIdentical(name + " prefix hit", hit, baseline);
                if (rig.pager != null) {
                    assertThat(rig.pager.verifyResidentBytes()).isPositive();
                }
                if (onDisk) {
                    assertThat(rig.pager.stats().bytesFetched()).as("%s: misses came from DISK", name).isPositive();
                }
            }
            variants.add(name);
        }
        assertThat(variants).hasSize(settings.size());
    }

    @org.junit.jupiter.api.Test
    void badTokensAndAFullKvCacheGetErrorsNamingTheValues() throws Exception {
        Path model = synth(ModelFamily.QWEN3);
        try (ForwardRig rig = new ForwardRig(model, 1, BLOCK_TOKENS, 2, 0, SlotScope.PER_LAYER)) {
            try (ModelRunner.Sequence s = rig.runner.newSequence()) {
                assertThatThrownBy(() -> s.prefill(new int[] {1, 400, 2}, false)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("token 400").hasMessageContaining("[0, 400)");
                assertThatThrownBy(() -> s.decode(3)).isInstanceOf(IllegalStateException.class);
            }
            try (ModelRunner.Sequence s = rig.runner.newSequence()) {
                // 11 tokens need 3 blocks of 4; the arena has 2 slots
                assertThatThrownBy(() -> s.prefill(prompt(5, 400), false)).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("11 tokens").hasMessageContaining("NO_SPACE");
            }
            rig.kv.checkInvariants();
            assertThat(rig.kv.freeSlots()).isEqualTo(2);
        }
    }

    private static void assertIdentical(String what, ForwardRig.Generation actual, ForwardRig.Generation expected) {
        assertThat(actual.tokens()).as("%s: tokens", what).containsExactly(expected.tokens());
        assertThat(actual.logits()).hasSameSizeAs(expected.logits());
        for (int i = 0; i < expected.logits().size(); i++) {
            float[] a = actual.logits().get(i);
            float[] e = expected.logits().get(i);
            for (int j = 0; j < e.length; j++) {
                if (Float.floatToRawIntBits(a[j]) != Float.floatToRawIntBits(e[j])) {
                    throw new AssertionError(what + ": logit " + j + " of step " + i + " is " + a[j] + ", expected "
                            + e[j] + " bit for bit");
                }
            }
        }
    }
}
