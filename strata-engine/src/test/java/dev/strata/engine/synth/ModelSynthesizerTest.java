package dev.strata.engine.synth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.model.ModelFormatException;
import dev.strata.engine.model.ModelWeights;
import dev.strata.engine.model.QkNorm;
import dev.strata.engine.model.Tensor;
import dev.strata.engine.model.ByteRange;
import dev.strata.engine.model.WeightFiles;
import dev.strata.engine.tokenizer.ChatMessage;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class ModelSynthesizerTest {
    @TempDir
    Path dir;

    private static SynthSpec spec(ModelFamily f, DType dtype, int shards, int clusters, boolean tie) {
        // odd sizes: H 40, 5 heads of 8 (kv 1), experts of width 24 (qwen3-moe) or 36, 7 experts top-3
        return new SynthSpec(f, 3, 7, 3, 40, 36, 24, 5, 1, 8, 420, dtype, 11, shards, clusters, tie);
    }

    private static final ModelSynthesizer.Progress QUIET = (d, t, b, tb) -> { };

    @ParameterizedTest
    @EnumSource(ModelFamily.class)
    void synthesizedModelLoadsBackWithEveryShapeChecked(ModelFamily family) throws Exception {
        DType dtype = switch (family) {
            case QWEN3_MOE, LLAMA -> DType.BF16;
            case MIXTRAL -> DType.F16;
            default -> DType.F32;
        };
        int shards = family == ModelFamily.QWEN3_MOE || family == ModelFamily.LLAMA ? 3 : 1;
        boolean tie = family == ModelFamily.QWEN3;
        SynthSpec s = spec(family, dtype, shards, 0, tie);
        ModelSynthesizer.Summary sum = ModelSynthesizer.write(s, dir, QUIET);
        assertThat(sum.weightFiles()).hasSize(shards);
        assertThat(Files.exists(dir.resolve(WeightFiles.INDEX_FILE))).isEqualTo(shards > 1);
        try (ModelDirectory m = ModelDirectory.open(dir)) {
            ModelConfig c = m.config();
            assertThat(c.family()).isEqualTo(family);
            assertThat(c.numHiddenLayers()).isEqualTo(3);
            assertThat(c.hiddenSize()).isEqualTo(40);
            assertThat(c.headDim()).isEqualTo(8);
            assertThat(c.torchDtype()).isEqualTo(dtype);
            assertThat(c.vocabSize()).isEqualTo(m.tokenizer().size()).isEqualTo(420);
            assertThat(c.tieWordEmbeddings()).isEqualTo(tie);
            ModelWeights w = m.weights();
            assertThat(w.unusedTensors()).isEmpty();
            assertThat(w.embedding().shape()).containsExactly(420, 40);
            assertThat(w.lmHead() == w.embedding()).isEqualTo(tie);
            assertThat(m.files().files()).hasSize(shards);
            for (ModelWeights.Layer layer : w.layers()) {
                assertThat(layer.attention().q().shape()).containsExactly(40, 40);
                assertThat(layer.attention().k().shape()).containsExactly(8, 40);
                assertThat(layer.attention().o().shape()).containsExactly(40, 40);
                assertThat(layer.attention().qNorm() != null).isEqualTo(family.qkNorm() != QkNorm.NONE);
                if (family.qkNorm() == QkNorm.FULL_WIDTH) {
                    assertThat(layer.attention().kNorm().shape()).containsExactly(8);
                    assertThat(layer.attention().qNorm().shape()).containsExactly(40);
                }
                assertThat(layer.moe()).isEqualTo(family.moe());
                if (family.moe()) {
                    assertThat(layer.router().shape()).containsExactly(7, 40);
                    assertThat(layer.experts()).hasSize(7);
                    int width = family == ModelFamily.QWEN3_MOE ? 24 : 36;
                    for (ModelWeights.Expert e : layer.experts()) {
                        assertThat(e.mlp().gate().shape()).containsExactly(width, 40);
                        assertThat(e.mlp().up().shape()).containsExactly(width, 40);
                        assertThat(e.mlp().down().shape()).containsExactly(40, width);
                        assertThat(e.bytes()).isEqualTo(3L * width * 40 * dtype.bytes());
                        checkRangesMatchMappedBytes(e);
                    }
                } else {
                    assertThat(layer.mlp().gate().shape()).containsExactly(36, 40);
                    assertThat(layer.mlp().down().shape()).containsExactly(40, 36);
                }
            }
            for (String name : m.files().names()) {
                assertThat(notAllZero(m.files().tensor(name))).as(name).isTrue();
            }
            // the family's real chat template is written and renders
            assertThat(m.chat().usesTemplate()).isTrue();
            String prompt = m.chat().render(List.of(ChatMessage.user("Bake the bread at 220 degrees 🌊")), true);
            assertThat(prompt).contains("Bake the bread at 220 degrees 🌊").endsWith(switch (family) {
                case QWEN3_MOE, QWEN3 -> "<|im_start|>assistant\n";
                case LLAMA -> "<|start_header_id|>assistant<|end_header_id|>\n\n";
                case MIXTRAL -> " [/INST]";
                case OLMOE -> "<|assistant|>\n";
            });
            // each family gets its real tokenizer kind: Mixtral SentencePiece-style (Llama 2 layout), the others byte-level
            assertThat(m.tokenizer().isByteLevel()).isEqualTo(family != ModelFamily.MIXTRAL);
            if (m.tokenizer().isByteLevel()) {
                assertThat(m.tokenizer().decode(m.tokenizer().encode(prompt))).isEqualTo(prompt);
            } else {
                // as in Llama 2's own files: "<s>" is added by the template, and skipping it decodes the rest exactly
                assertThat(m.tokenizer().addsBos()).isTrue();
                assertThat(m.tokenizer().encode(prompt)[0]).isEqualTo(m.tokenizer().id("<s>")).isEqualTo(1);
                assertThat(m.tokenizer().decode(m.tokenizer().encode(prompt), true)).isEqualTo(prompt.replace("<s>", ""));
                assertThat(Files.readString(dir.resolve("tokenizer.json"))).contains("\"byte_fallback\" : true", "\"Prepend\"",
                        "<0xF0>");
                assertThat(m.tokenizer().encode("\uD834\uDD1E")).as("byte fallback for U+1D11E, outside the vocabulary")
                        .containsExactly(m.tokenizer().id("▁"), m.tokenizer().id("<0xF0>"), m.tokenizer().id("<0x9D>"),
                                m.tokenizer().id("<0x84>"), m.tokenizer().id("<0x9E>"));
            }
            assertThat(m.tokenizerConfig().eosToken()).isNotNull();
            assertThat(m.tokenizer().id(m.tokenizerConfig().eosToken())).isEqualTo(c.eosTokenIds().getFirst());
        }
    }

    private static boolean notAllZero(Tensor t) {
        for (long i = 0; i < t.elements(); i++) {
            if (t.getFloat(i) != 0f && Float.isFinite(t.getFloat(i))) {
                return true;
            }
        }
        return false;
    }

    private static void checkRangesMatchMappedBytes(ModelWeights.Expert e) throws Exception {
        List<Tensor> ts = e.tensors();
        for (int i = 0; i < 3; i++) {
            ByteRange r = e.ranges().get(i);
            assertThat(r.tensor()).isEqualTo(ts.get(i).name());
            ByteBuffer b = ByteBuffer.allocate((int) r.length());
            try (FileChannel ch = FileChannel.open(r.file())) {
                ch.read(b, r.offset());
            }
            assertThat(b.array()).isEqualTo(ts.get(i).data().toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void sameSeedSameBytesAndShardingDoesNotChangeValues() throws Exception {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        Path c = dir.resolve("c");
        ModelSynthesizer.write(spec(ModelFamily.OLMOE, DType.BF16, 1, 0, false), a, QUIET);
        ModelSynthesizer.write(spec(ModelFamily.OLMOE, DType.BF16, 1, 0, false), b, QUIET);
        ModelSynthesizer.write(spec(ModelFamily.OLMOE, DType.BF16, 4, 0, false), c, QUIET);
        assertThat(Files.readAllBytes(a.resolve("model.safetensors"))).isEqualTo(Files.readAllBytes(b.resolve("model.safetensors")));
        assertThat(Files.readString(a.resolve("tokenizer.json"))).isEqualTo(Files.readString(b.resolve("tokenizer.json")));
        try (WeightFiles one = WeightFiles.open(a); WeightFiles four = WeightFiles.open(c)) {
            assertThat(four.files()).hasSize(4);
            assertThat(four.names()).containsExactlyInAnyOrderElementsOf(one.names());
            for (String n : one.names()) {
                assertThat(four.tensor(n).data().toArray(ValueLayout.JAVA_BYTE)).as(n)
                        .isEqualTo(one.tensor(n).data().toArray(ValueLayout.JAVA_BYTE));
            }
        }
        SynthSpec other = new SynthSpec(ModelFamily.OLMOE, 3, 7, 3, 40, 36, 24, 5, 1, 8, 420, DType.BF16, 12, 1, 0, false);
        Path d = dir.resolve("d");
        ModelSynthesizer.write(other, d, QUIET);
        assertThat(Files.readAllBytes(d.resolve("model.safetensors"))).isNotEqualTo(Files.readAllBytes(a.resolve("model.safetensors")));
    }

    @Test
    void shapeMismatchesAndMissingTensorsNameTheTensorAndTheExpectation() throws Exception {
        ModelSynthesizer.write(spec(ModelFamily.QWEN3_MOE, DType.BF16, 1, 0, false), dir, QUIET);
        Path config = dir.resolve("config.json");
        String good = Files.readString(config);
        Files.writeString(config, good.replace("\"moe_intermediate_size\" : 24", "\"moe_intermediate_size\" : 48"));
        assertThatThrownBy(() -> ModelDirectory.open(dir)).isInstanceOf(ModelFormatException.class)
                .hasMessageContaining("model.layers.0.mlp.experts.0.gate_proj.weight has shape [24, 40], expected [48, 40] "
                        + "from moe_intermediate_size 48 and hidden_size 40");
        Files.writeString(config, good.replace("\"num_hidden_layers\" : 3", "\"num_hidden_layers\" : 4"));
        assertThatThrownBy(() -> ModelDirectory.open(dir)).isInstanceOf(ModelFormatException.class)
                .hasMessageContaining("tensor 'model.layers.3.self_attn.q_proj.weight' is missing; expected shape [40, 40]");
        Files.writeString(config, good.replace("\"num_experts\" : 7", "\"num_experts\" : 8"));
        assertThatThrownBy(() -> ModelDirectory.open(dir))
                .hasMessageContaining("model.layers.0.mlp.gate.weight has shape [7, 40], expected [8, 40] from num_experts 8");
        Files.writeString(config, good.replace("\"vocab_size\" : 420", "\"vocab_size\" : 400"));
        assertThatThrownBy(() -> ModelDirectory.open(dir)).hasMessageContaining("420 token ids exceed vocab_size 400");
        Files.writeString(config, good.replace("\"num_key_value_heads\" : 1", "\"num_key_value_heads\" : 5"));
        assertThatThrownBy(() -> ModelDirectory.open(dir))
                .hasMessageContaining("self_attn.k_proj.weight has shape [8, 40], expected [40, 40] from num_key_value_heads 5 × head_dim 8");
        Files.writeString(config, good.replace("\"attention_bias\" : false", "\"attention_bias\" : true"));
        assertThatThrownBy(() -> ModelDirectory.open(dir)).hasMessageContaining("tensor 'model.layers.0.self_attn.q_proj.bias' is missing");
        Files.writeString(config, good);
        try (ModelDirectory m = ModelDirectory.open(dir)) {
            assertThat(m.weights().expert(2, 6).mlp().down().name()).isEqualTo("model.layers.2.mlp.experts.6.down_proj.weight");
        }
    }

    @Test
    void topicClustersGiveRoutingSkewAndLocality() throws Exception {
        int experts = 16;
        int clusters = 4;
        double structured = topCoverage(new SynthSpec(ModelFamily.QWEN3_MOE, 1, experts, 2, 64, 64, 32, 4, 2, 16, 600, DType.F32,
                5, 1, clusters, false), dir.resolve("s"), clusters, experts);
        double plain = topCoverage(new SynthSpec(ModelFamily.QWEN3_MOE, 1, experts, 2, 64, 64, 32, 4, 2, 16, 600, DType.F32,
                5, 1, 0, false), dir.resolve("p"), clusters, experts);
        // share of a cluster's tokens whose first expert is among the cluster's 4 favourite experts
        assertThat(structured).isGreaterThan(0.85);
        assertThat(plain).isLessThan(structured - 0.2);
    }

    /** For tokens the sample uses: router(embedding) top-1 per token; share covered by each cluster's 4 most used experts. */
    private static double topCoverage(SynthSpec s, Path out, int clusters, int experts) throws Exception {
        ModelSynthesizer.write(s, out, QUIET);
        try (ModelDirectory m = ModelDirectory.open(out)) {
            int[] cluster = ModelSynthesizer.tokenClusters(m.tokenizer(), clusters, m.config().vocabSize());
            Tensor emb = m.weights().embedding();
            Tensor router = m.weights().layer(0).router();
            int h = s.hidden();
            int[][] counts = new int[clusters][experts];
            int[] ids = m.tokenizer().encodeOrdinary(TextSample.all());
            for (int id : Arrays.stream(ids).distinct().toArray()) {
                int best = 0;
                double bestLogit = Double.NEGATIVE_INFINITY;
                for (int e = 0; e < experts; e++) {
                    double dot = 0;
                    for (int j = 0; j < h; j++) {
                        dot += emb.getFloat((long) id * h + j) * router.getFloat((long) e * h + j);
                    }
                    if (dot > bestLogit) {
                        bestLogit = dot;
                        best = e;
                    }
                }
                counts[cluster[id]][best]++;
            }
            long covered = 0;
            long total = 0;
            for (int[] row : counts) {
                List<Integer> sorted = new ArrayList<>(Stream.of(Arrays.stream(row).boxed().toArray(Integer[]::new)).toList());
                sorted.sort((x, y) -> y - x);
                covered += sorted.get(0) + sorted.get(1) + sorted.get(2) + sorted.get(3);
                total += Arrays.stream(row).sum();
            }
            return (double) covered / total;
        }
    }

    @Test
    void vocabularyBeyondTheSampleIsPadding() throws Exception {
        SynthSpec big = new SynthSpec(ModelFamily.LLAMA, 1, 1, 1, 32, 48, 16, 2, 1, 16, 5000, DType.BF16, 3, 1, 0, false);
        ModelSynthesizer.Summary s = ModelSynthesizer.write(big, dir, QUIET);
        assertThat(s.vocab()).isEqualTo(5000);
        assertThat(s.tokenizer()).isLessThan(5000).isGreaterThan(300);
        try (ModelDirectory m = ModelDirectory.open(dir)) {
            assertThat(m.config().vocabSize()).isEqualTo(5000);
            assertThat(m.weights().embedding().shape()).containsExactly(5000, 32);
            assertThat(m.tokenizer().size()).isEqualTo(s.tokenizer());
        }
    }

    @Test
    void bf16RoundsToNearestEven() {
        assertThat(SafetensorsWriter.toBf16(1.0f)).isEqualTo((short) 0x3F80);
        assertThat(SafetensorsWriter.toBf16(Float.intBitsToFloat(0x3F808000))).isEqualTo((short) 0x3F80); // tie, even stays
        assertThat(SafetensorsWriter.toBf16(Float.intBitsToFloat(0x3F818000))).isEqualTo((short) 0x3F82); // tie, odd rounds up
        assertThat(SafetensorsWriter.toBf16(Float.intBitsToFloat(0x3F808001))).isEqualTo((short) 0x3F81);
        assertThat(Float.isNaN(Float.intBitsToFloat(SafetensorsWriter.toBf16(Float.NaN) << 16))).isTrue();
    }

    @Test
    void badSpecsAreRefused() {
        assertThatThrownBy(() -> new SynthSpec(ModelFamily.MIXTRAL, 2, 4, 5, 64, 64, 32, 4, 2, 16, 600, DType.F32, 1, 1, 0, false))
                .hasMessageContaining("--top-k 5 exceeds --experts 4");
        assertThatThrownBy(() -> new SynthSpec(ModelFamily.LLAMA, 2, 4, 2, 64, 64, 32, 4, 3, 16, 600, DType.F32, 1, 1, 0, false))
                .hasMessageContaining("--kv-heads 3 must divide --heads 4");
        assertThatThrownBy(() -> new SynthSpec(ModelFamily.LLAMA, 2, 4, 2, 64, 64, 32, 4, 2, 15, 600, DType.F32, 1, 1, 0, false))
                .hasMessageContaining("even");
        assertThatThrownBy(() -> new SynthSpec(ModelFamily.LLAMA, 2, 4, 2, 64, 64, 32, 4, 2, 16, 200, DType.F32, 1, 1, 0, false))
                .hasMessageContaining("--vocab 200");
        assertThatThrownBy(() -> new SynthSpec(ModelFamily.LLAMA, 0, 4, 2, 64, 64, 32, 4, 2, 16, 600, DType.F32, 1, 1, 0, false))
                .hasMessageContaining("--layers must be positive, got 0");
    }
}
