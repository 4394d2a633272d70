package dev.strata.analysis.kvplan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.kv.KvDtype;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Presets and reading Hugging Face {@code config.json} files, with errors naming file and field. */
class ModelSpecTest {
    @TempDir
    Path dir;

    private Path write(String name, String json) throws IOException {
        Path d = Files.createDirectories(dir.resolve(name));
        return Files.writeString(d.resolve("config.json"), json);
    }

    @Test
    void llamaConfigRoundTripsToThePreset() throws IOException {
        Path file = write("Llama-2-70b-hf", """
                {"architectures": ["LlamaForCausalLM"], "hidden_size": 8192, "intermediate_size": 28672,
                 "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
                 "rms_norm_eps": 1e-05, "torch_dtype": "float16", "vocab_size": 32000}
                """);
        ModelSpec spec = ModelSpec.fromConfigJson(file, null);
        ModelSpec preset = ModelSpec.preset("llama-2-70b");
        assertThat(spec.name()).isEqualTo("Llama-2-70b-hf");
        assertThat(spec).usingRecursiveComparison().ignoringFields("name").isEqualTo(preset);
        assertThat(spec.headDim()).isEqualTo(128); // hidden_size / num_attention_heads
        PlanRequest request = KvCapacityPlannerTest.seed(256_000_000_000L, 0, 0);
        PlanRequest fromFile = new PlanRequest(spec, 4, null, 16, 4096, request.deviceBytes(), request.weightsPerDevice(),
                request.overheadBytes(), request.hostBytes(), 0, 0, request.decodeStepNanos(), request.hostLinkBytesPerSecond(),
                request.poolLinkBytesPerSecond(), request.diskLinkBytesPerSecond());
        assertThat(KvCapacityPlanner.plan(fromFile).tiers()).isEqualTo(KvCapacityPlanner.plan(request).tiers());
    }

    @Test
    void defaultsAndMoeFields() throws IOException {
        // no num_key_value_heads: multi-head attention; no head_dim: hidden / heads
        ModelSpec mha = ModelSpec.fromConfigJson(write("mha", """
                {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32, "torch_dtype": "float16"}
                """), null);
        assertThat(mha).usingRecursiveComparison().ignoringFields("name").isEqualTo(ModelSpec.preset("llama-2-7b"));
        ModelSpec qwen = ModelSpec.fromConfigJson(write("Qwen3-30B-A3B", """
                {"hidden_size": 2048, "head_dim": 128, "num_attention_heads": 32, "num_hidden_layers": 48,
                 "num_key_value_heads": 4, "num_experts": 128, "num_experts_per_tok": 8, "intermediate_size": 6144,
                 "moe_intermediate_size": 768, "torch_dtype": "bfloat16"}
                """), null);
        assertThat(qwen).usingRecursiveComparison().ignoringFields("name").isEqualTo(ModelSpec.preset("qwen3-30b-a3b"));
        assertThat(qwen.expertBytes()).isEqualTo(3L * 2048 * 768 * 2);
        ModelSpec mixtral = ModelSpec.fromConfigJson(write("Mixtral-8x7B", """
                {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
                 "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2, "torch_dtype": "bfloat16"}
                """), null);
        assertThat(mixtral).usingRecursiveComparison().ignoringFields("name").isEqualTo(ModelSpec.preset("mixtral-8x7b"));
        // a multimodal model's text_config, and the newer "dtype" key
        ModelSpec vl = ModelSpec.fromConfigJson(write("vl", """
                {"model_type": "vl", "dtype": "bfloat16", "text_config": {"hidden_size": 4096, "num_attention_heads": 32,
                 "num_hidden_layers": 36, "num_key_value_heads": 8, "head_dim": 128}}
                """), null);
        assertThat(vl.layers()).isEqualTo(36);
        assertThat(vl.dtype()).isEqualTo(KvDtype.BF16);
        // no dtype anywhere: the fallback is used when given
        assertThat(ModelSpec.fromConfigJson(write("nodtype", """
                {"hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 2}
                """), KvDtype.FP8_E4M3).dtype()).isEqualTo(KvDtype.FP8_E4M3);
    }

    @Test
    void presetsCarryTheirRealShapes() {
        assertThat(ModelSpec.presetNames()).containsExactly("llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b",
                "mixtral-8x7b", "qwen3-30b-a3b", "qwen3-32b");
        for (String name : ModelSpec.presetNames()) {
            ModelSpec m = ModelSpec.preset(name);
            assertThat(m.name()).isEqualTo(name);
            assertThat(m.headDim()).isEqualTo(128);
            assertThat(m.isMoe()).isEqualTo(name.startsWith("mixtral") || name.equals("qwen3-30b-a3b"));
        }
        assertThat(ModelSpec.preset("LLAMA-3-70B").layers()).isEqualTo(80);
        assertThat(ModelSpec.preset("qwen3-32b").kvHeads()).isEqualTo(8);
        assertThat(ModelSpec.preset("mixtral-8x7b").expertBytes()).isEqualTo(3L * 4096 * 14336 * 2);
    }

    @Test
    void errorsNameTheFileAndTheField() throws IOException {
        Path missing = write("missing", """
                {"hidden_size": 4096, "num_attention_heads": 32, "torch_dtype": "float16"}
                """);
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(missing, null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("model config " + missing + ": field 'num_hidden_layers' is missing");
        Path text = write("text", """
                {"hidden_size": 4096, "num_attention_heads": "32", "num_hidden_layers": 32, "torch_dtype": "float16"}
                """);
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(text, null))
                .hasMessage("model config " + text + ": field 'num_attention_heads' = \"32\" is not a non-negative integer");
        Path zero = write("zero", """
                {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 0, "torch_dtype": "float16"}
                """);
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(zero, null))
                .hasMessage("model config " + zero + ": field 'num_hidden_layers' = 0 is not a positive integer");
        Path dtype = write("dtype", """
                {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2, "torch_dtype": "float64"}
                """);
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(dtype, null)).hasMessageContaining(dtype.toString())
                .hasMessageContaining("'torch_dtype' = 'float64'");
        Path noDtype = write("nodtype", """
                {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2}
                """);
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(noDtype, null)).hasMessageContaining("'torch_dtype' is missing");
        Path gqa = write("gqa", """
                {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2, "num_key_value_heads": 5,
                 "torch_dtype": "float16"}
                """);
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(gqa, null)).hasMessageContaining("'num_key_value_heads' = 5");
        Path width = write("width", """
                {"hidden_size": 4000, "num_attention_heads": 48, "num_hidden_layers": 2, "torch_dtype": "float16"}
                """);
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(width, null)).hasMessageContaining("'head_dim' is missing")
                .hasMessageContaining("4000");
        Path moe = write("moe", """
                {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2, "num_local_experts": 8,
                 "torch_dtype": "float16"}
                """);
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(moe, null)).hasMessageContaining("'num_experts_per_tok' is missing");
        Path broken = write("broken", "{\"hidden_size\": 4096,,}");
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(broken, null)).hasMessageContaining(broken.toString())
                .hasMessageContaining("not valid JSON");
        Path array = write("array", "[1, 2]");
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(array, null)).hasMessageContaining("not a JSON object");
        Path none = dir.resolve("nowhere/config.json");
        assertThatThrownBy(() -> ModelSpec.fromConfigJson(none, null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("model config " + none + " does not exist");
    }
}
