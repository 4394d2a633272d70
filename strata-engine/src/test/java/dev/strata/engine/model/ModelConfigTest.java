package dev.strata.engine.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelConfigTest {
    @TempDir
    Path dir;

    static final String QWEN3_MOE = """
            {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
             "intermediate_size": 6144, "moe_intermediate_size": 768, "num_hidden_layers": 48,
             "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "rms_norm_eps": 1e-06,
             "rope_theta": 1000000.0, "rope_scaling": null, "vocab_size": 151936, "max_position_embeddings": 40960,
             "tie_word_embeddings": false, "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true,
             "decoder_sparse_step": 1, "mlp_only_layers": [], "torch_dtype": "bfloat16", "bos_token_id": 151643,
             "eos_token_id": 151645, "attention_bias": false}""";

    static final String MIXTRAL = """
            {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
             "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
             "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "vocab_size": 32000, "max_position_embeddings": 32768,
             "tie_word_embeddings": false, "num_local_experts": 8, "num_experts_per_tok": 2, "torch_dtype": "bfloat16",
             "bos_token_id": 1, "eos_token_id": 2}""";

    static final String OLMOE = """
            {"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024,
             "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16, "rms_norm_eps": 1e-05,
             "rope_theta": 10000.0, "vocab_size": 50304, "max_position_embeddings": 4096, "num_experts": 64,
             "num_experts_per_tok": 8, "norm_topk_prob": false, "clip_qkv": null, "torch_dtype": "float32",
             "bos_token_id": null, "eos_token_id": 50279, "tie_word_embeddings": false}""";

    static final String LLAMA = """
            {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
             "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
             "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "vocab_size": 128256,
             "max_position_embeddings": 131072, "torch_dtype": "bfloat16", "bos_token_id": 128000,
             "eos_token_id": [128001, 128008, 128009], "attention_bias": false, "tie_word_embeddings": false}""";

    static final String QWEN3 = """
            {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072,
             "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
             "rms_norm_eps": 1e-06, "rope_theta": 1000000, "vocab_size": 151936, "max_position_embeddings": 40960,
             "tie_word_embeddings": true, "torch_dtype": "float16", "eos_token_id": 151645, "bos_token_id": 151643}""";

    @Test
    void qwen3MoeFields() {
        ModelConfig c = ModelConfig.parse(QWEN3_MOE, "config.json");
        assertThat(c.family()).isEqualTo(ModelFamily.QWEN3_MOE);
        assertThat(c.expertIntermediateSize()).isEqualTo(768);
        assertThat(c.intermediateSize()).isEqualTo(6144);
        assertThat(c.numExperts()).isEqualTo(128);
        assertThat(c.numExpertsPerTok()).isEqualTo(8);
        assertThat(c.normTopkProb()).isTrue();
        assertThat(c.headDim()).isEqualTo(128);
        assertThat(c.qDim()).isEqualTo(4096);
        assertThat(c.kvDim()).isEqualTo(512);
        assertThat(c.qkNorm()).isEqualTo(QkNorm.PER_HEAD);
        assertThat(c.eosTokenIds()).containsExactly(151645);
        assertThat(c.bosTokenId()).isEqualTo(151643);
        assertThat(c.torchDtype()).isEqualTo(DType.BF16);
        assertThat(c.isMoeLayer(0)).isTrue();
        assertThat(c.isMoeLayer(47)).isTrue();
    }

    @Test
    void qwen3MoeSparseStepAndMlpOnlyLayers() {
        ModelConfig c = ModelConfig.parse(QWEN3_MOE.replace("\"decoder_sparse_step\": 1, \"mlp_only_layers\": []",
                "\"decoder_sparse_step\": 2, \"mlp_only_layers\": [3]"), "config.json");
        assertThat(c.isMoeLayer(0)).isFalse();
        assertThat(c.isMoeLayer(1)).isTrue();
        assertThat(c.isMoeLayer(3)).isFalse();
        assertThat(c.isMoeLayer(5)).isTrue();
        assertThat(c.mlpOnlyLayers()).containsExactly(3);
    }

    @Test
    void mixtralUsesLocalExpertsAndAlwaysRenormalises() {
        ModelConfig c = ModelConfig.parse(MIXTRAL, "config.json");
        assertThat(c.family()).isEqualTo(ModelFamily.MIXTRAL);
        assertThat(c.numExperts()).isEqualTo(8);
        assertThat(c.expertIntermediateSize()).isEqualTo(14336);
        assertThat(c.normTopkProb()).isTrue();
        assertThat(c.headDim()).isEqualTo(128);
        assertThat(c.qkNorm()).isEqualTo(QkNorm.NONE);
    }

    @Test
    void olmoeExpertWidthIsIntermediateSize() {
        ModelConfig c = ModelConfig.parse(OLMOE, "config.json");
        assertThat(c.expertIntermediateSize()).isEqualTo(1024);
        assertThat(c.normTopkProb()).isFalse();
        assertThat(c.bosTokenId()).isNull();
        assertThat(c.clipQkv()).isNull();
        assertThat(c.qkNorm()).isEqualTo(QkNorm.FULL_WIDTH);
        assertThat(c.torchDtype()).isEqualTo(DType.F32);
    }

    @Test
    void llamaRopeScalingAndEosList() {
        ModelConfig c = ModelConfig.parse(LLAMA, "config.json");
        assertThat(c.moe()).isFalse();
        assertThat(c.isMoeLayer(0)).isFalse();
        assertThat(c.eosTokenIds()).containsExactly(128001, 128008, 128009);
        assertThat(c.ropeScaling()).isEqualTo(new RopeScaling("llama3", 8.0, 1.0, 4.0, 8192));
        assertThat(c.ropeTheta()).isEqualTo(500000.0);
    }

    @Test
    void qwen3Dense() {
        ModelConfig c = ModelConfig.parse(QWEN3, "config.json");
        assertThat(c.family()).isEqualTo(ModelFamily.QWEN3);
        assertThat(c.tieWordEmbeddings()).isTrue();
        assertThat(c.headDim()).isEqualTo(128);
        assertThat(c.torchDtype()).isEqualTo(DType.F16);
        assertThat(c.numExperts()).isZero();
    }

    @Test
    void readsFromDirectory() throws Exception {
        Files.writeString(dir.resolve("config.json"), QWEN3);
        assertThat(ModelConfig.read(dir).hiddenSize()).isEqualTo(1024);
        assertThatThrownBy(() -> ModelConfig.read(dir.resolve("nothing")))
                .isInstanceOf(ModelFormatException.class).hasMessageContaining("nothing").hasMessageContaining("no such file");
    }

    private static void fails(String json, String... parts) {
        var a = assertThatThrownBy(() -> ModelConfig.parse(json, "/m/config.json")).isInstanceOf(ModelFormatException.class)
                .hasMessageContaining("/m/config.json");
        for (String p : parts) {
            a.hasMessageContaining(p);
        }
    }

    @Test
    void errorsNameFileFieldAndValue() {
        fails("{", "not valid JSON");
        fails("[1]", "JSON object");
        fails(QWEN3.replace("\"Qwen3ForCausalLM\"", "\"GPT2LMHeadModel\""), "'architectures'", "GPT2LMHeadModel");
        fails(QWEN3.replace("\"architectures\": [\"Qwen3ForCausalLM\"], ", ""), "'architectures'", "absent");
        fails(QWEN3.replace("\"model_type\": \"qwen3\"", "\"model_type\": \"llama\""), "'model_type'", "'llama'", "Qwen3ForCausalLM");
        fails(QWEN3.replace("\"hidden_size\": 1024", "\"hidden_size\": -3"), "'hidden_size'", "positive integer", "-3");
        fails(QWEN3.replace("\"hidden_size\": 1024", "\"hidden_size\": 10.5"), "'hidden_size'", "10.5");
        fails(QWEN3.replace("\"hidden_size\": 1024, ", ""), "'hidden_size'", "required");
        fails(QWEN3.replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"), "'num_key_value_heads'", "16", "5");
        fails(QWEN3.replace("\"head_dim\": 128", "\"head_dim\": 63"), "'head_dim'", "even", "63");
        fails(MIXTRAL.replace("\"hidden_size\": 4096", "\"hidden_size\": 4100"), "'hidden_size'", "multiple", "4100");
        fails(MIXTRAL.replace("\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 9"), "'num_experts_per_tok'", "num_local_experts 8", "9");
        fails(MIXTRAL.replace("\"num_local_experts\": 8, ", ""), "'num_local_experts'", "required");
        fails(MIXTRAL.replace("\"intermediate_size\": 14336, ", ""), "'intermediate_size'", "required");
        fails(QWEN3_MOE.replace("\"moe_intermediate_size\": 768, ", ""), "'moe_intermediate_size'", "required");
        fails(QWEN3_MOE.replace("\"mlp_only_layers\": []", "\"mlp_only_layers\": [48]"), "'mlp_only_layers'", "48");
        fails(QWEN3_MOE.replace("\"norm_topk_prob\": true", "\"norm_topk_prob\": \"yes\""), "'norm_topk_prob'", "\"yes\"");
        fails(QWEN3.replace("\"torch_dtype\": \"float16\"", "\"torch_dtype\": \"int8\""), "'torch_dtype'", "int8");
        fails(QWEN3.replace("\"rms_norm_eps\": 1e-06", "\"rms_norm_eps\": 0"), "'rms_norm_eps'", "positive number", "0");
        fails(QWEN3.replace("\"eos_token_id\": 151645", "\"eos_token_id\": [\"x\"]"), "'eos_token_id'", "[\"x\"]");
        fails(QWEN3.replace("\"bos_token_id\": 151643", "\"bos_token_id\": -1"), "'bos_token_id'", "-1");
        fails(QWEN3_MOE.replace("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}"),
                "'rope_scaling'", "'yarn'", "linear, llama3");
        fails(QWEN3_MOE.replace("\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"linear\"}"), "'rope_scaling'", "'factor'");
        fails(QWEN3_MOE.replace("\"rope_scaling\": null", "\"rope_scaling\": 3"), "'rope_scaling'", "3");
    }

    @Test
    void ropeScalingSubset() {
        ModelConfig lin = ModelConfig.parse(QWEN3_MOE.replace("\"rope_scaling\": null",
                "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}"), "c");
        assertThat(lin.ropeScaling()).isEqualTo(new RopeScaling("linear", 2.0, 0, 0, 0));
        ModelConfig def = ModelConfig.parse(QWEN3_MOE.replace("\"rope_scaling\": null",
                "\"rope_scaling\": {\"rope_type\": \"default\"}"), "c");
        assertThat(def.ropeScaling()).isNull();
    }

    @Test
    void everyFamilyNamesItsArchitecture() {
        for (String json : List.of(QWEN3_MOE, MIXTRAL, OLMOE, LLAMA, QWEN3)) {
            ModelConfig c = ModelConfig.parse(json, "c");
            assertThat(json).contains(c.family().architecture()).contains(c.family().modelType());
        }
    }
}
