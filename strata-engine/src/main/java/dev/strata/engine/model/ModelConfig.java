package dev.strata.engine.model;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The fields of a Hugging Face {@code config.json} that the engine uses, for Qwen3-MoE, Mixtral,
 * OLMoE, Llama and Qwen3, validated. Immutable; any thread.
 *
 * <p>Family rules applied when reading: {@code head_dim} defaults to
 * {@code hidden_size / num_attention_heads}; {@code num_key_value_heads} defaults to
 * {@code num_attention_heads}; the expert width is {@code moe_intermediate_size} for Qwen3-MoE and
 * {@code intermediate_size} for Mixtral and OLMoE; Mixtral always renormalises its top-k weights
 * (its router takes the softmax over the top-k logits), so {@code normTopkProb} is true for it;
 * a Qwen3-MoE layer is MoE when it is not in {@code mlp_only_layers} and
 * {@code (layer + 1) % decoder_sparse_step == 0}; Mixtral and OLMoE layers are all MoE.
 *
 * @param family                 the family chosen from {@code architectures[0]}
 * @param hiddenSize             model width H
 * @param intermediateSize       width of dense MLPs (and of Mixtral/OLMoE experts)
 * @param expertIntermediateSize width of one expert's MLP (0 for dense families)
 * @param numHiddenLayers        decoder layers
 * @param numAttentionHeads      query heads
 * @param numKeyValueHeads       key/value heads (GQA), divides numAttentionHeads
 * @param headDim                width of one head (even, for RoPE)
 * @param rmsNormEps             epsilon of every RMSNorm
 * @param ropeTheta              RoPE base
 * @param ropeScaling            null, or the supported subset
 * @param vocabSize              rows of the embedding and of lm_head
 * @param maxPositionEmbeddings  longest position
 * @param tieWordEmbeddings      lm_head shares the embedding matrix
 * @param numExperts             experts per MoE layer (0 for dense families)
 * @param numExpertsPerTok       top-k (0 for dense families)
 * @param normTopkProb           renormalise the top-k router weights to sum to 1
 * @param decoderSparseStep      every n-th layer is MoE (Qwen3-MoE; 1 otherwise)
 * @param mlpOnlyLayers          layers forced dense (Qwen3-MoE; empty otherwise)
 * @param torchDtype             dtype the weights were saved in
 * @param bosTokenId             null when the model has none
 * @param eosTokenIds            one or more end-of-sequence ids (may be empty)
 * @param attentionBias          q/k/v/o projections have biases
 * @param qkNorm                 q/k normalisation of the family
 * @param clipQkv                OLMoE's clip of q/k/v activations, null when absent
 */
public record ModelConfig(ModelFamily family, int hiddenSize, int intermediateSize, int expertIntermediateSize,
                          int numHiddenLayers, int numAttentionHeads, int numKeyValueHeads, int headDim,
                          double rmsNormEps, double ropeTheta, RopeScaling ropeScaling, int vocabSize,
                          int maxPositionEmbeddings, boolean tieWordEmbeddings, int numExperts, int numExpertsPerTok,
                          boolean normTopkProb, int decoderSparseStep, List<Integer> mlpOnlyLayers, DType torchDtype,
                          Integer bosTokenId, List<Integer> eosTokenIds, boolean attentionBias, QkNorm qkNorm,
                          Double clipQkv) {

    public static final String FILE_NAME = "config.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    public ModelConfig {
        mlpOnlyLayers = List.copyOf(mlpOnlyLayers);
        eosTokenIds = List.copyOf(eosTokenIds);
    }

    /** Whether any layer is a mixture of experts. */
    public boolean moe() {
        return numExperts > 0;
    }

    /** Whether layer {@code layer} (0-based) is a mixture of experts. */
    public boolean isMoeLayer(int layer) {
        if (numExperts == 0) {
            return false;
        }
        return !mlpOnlyLayers.contains(layer) && (layer + 1) % decoderSparseStep == 0;
    }

    /** Width of the concatenated query heads: heads × head_dim. */
    public int qDim() {
        return numAttentionHeads * headDim;
    }

    /** Width of the concatenated key (or value) heads: kv_heads × head_dim. */
    public int kvDim() {
        return numKeyValueHeads * headDim;
    }

    /** Reads and validates {@code dir/config.json} (or the file itself when given a file). */
    public static ModelConfig read(Path dirOrFile) {
        Path file = Files.isDirectory(dirOrFile) ? dirOrFile.resolve(FILE_NAME) : dirOrFile;
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new ModelFormatException(file + ": no such file (a model directory needs config.json)");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
        return parse(text, file.toString());
    }

    /** Parses the text of a {@code config.json}; {@code source} names it in errors. */
    public static ModelConfig parse(String json, String source) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JsonProcessingException e) {
            throw new ModelFormatException(source + ": not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new ModelFormatException(source + ": expected a JSON object at the top level");
        }
        return new Reader(root, source).read();
    }

    /** Field access with errors that name the file, the field and the value. */
    private record Reader(JsonNode root, String source) {

        ModelFormatException error(String field, String problem) {
            return new ModelFormatException(source + ": field '" + field + "' " + problem);
        }

        String show(JsonNode n) {
            return n == null ? "absent" : n.toString();
        }

        boolean has(String field) {
            JsonNode n = root.get(field);
            return n != null && !n.isNull();
        }

        int positiveInt(String field) {
            JsonNode n = root.get(field);
            if (n == null || n.isNull()) {
                throw error(field, "is required");
            }
            if (!n.canConvertToInt() || !n.isIntegralNumber() || n.intValue() <= 0) {
                throw error(field, "must be a positive integer, got " + show(n));
            }
            return n.intValue();
        }

        int positiveInt(String field, int fallback) {
            return has(field) ? positiveInt(field) : fallback;
        }

        double positiveDouble(String field, double fallback) {
            JsonNode n = root.get(field);
            if (n == null || n.isNull()) {
                return fallback;
            }
            if (!n.isNumber() || !(n.doubleValue() > 0) || Double.isInfinite(n.doubleValue())) {
                throw error(field, "must be a positive number, got " + show(n));
            }
            return n.doubleValue();
        }

        boolean bool(String field, boolean fallback) {
            JsonNode n = root.get(field);
            if (n == null || n.isNull()) {
                return fallback;
            }
            if (!n.isBoolean()) {
                throw error(field, "must be true or false, got " + show(n));
            }
            return n.booleanValue();
        }

        Integer optionalId(String field) {
            JsonNode n = root.get(field);
            if (n == null || n.isNull()) {
                return null;
            }
            if (!n.isIntegralNumber() || !n.canConvertToInt() || n.intValue() < 0) {
                throw error(field, "must be a token id (integer >= 0), got " + show(n));
            }
            return n.intValue();
        }

        List<Integer> ids(String field) {
            JsonNode n = root.get(field);
            List<Integer> out = new ArrayList<>();
            if (n == null || n.isNull()) {
                return out;
            }
            if (n.isArray()) {
                for (JsonNode e : n) {
                    if (!e.isIntegralNumber() || !e.canConvertToInt() || e.intValue() < 0) {
                        throw error(field, "must hold token ids (integers >= 0), got " + show(n));
                    }
                    out.add(e.intValue());
                }
                return out;
            }
            Integer one = optionalId(field);
            if (one != null) {
                out.add(one);
            }
            return out;
        }

        ModelFamily family() {
            JsonNode a = root.get("architectures");
            if (a == null || !a.isArray() || a.isEmpty() || !a.get(0).isTextual()) {
                throw error("architectures", "must be a list naming the model class, got " + show(a));
            }
            String name = a.get(0).asText();
            ModelFamily f = ModelFamily.ofArchitecture(name);
            if (f == null) {
                throw error("architectures", "names '" + name + "', which Strata does not support "
                        + "(Qwen3MoeForCausalLM, MixtralForCausalLM, OlmoeForCausalLM, LlamaForCausalLM, Qwen3ForCausalLM)");
            }
            return f;
        }

        DType dtype() {
            String field = has("torch_dtype") ? "torch_dtype" : "dtype";
            JsonNode n = root.get(field);
            if (n == null || n.isNull()) {
                return DType.BF16;
            }
            DType d = n.isTextual() ? DType.ofTorch(n.asText()) : null;
            if (d == null) {
                throw error(field, "must be bfloat16, float16 or float32, got " + show(n));
            }
            return d;
        }

        RopeScaling ropeScaling() {
            JsonNode n = root.get("rope_scaling");
            if (n == null || n.isNull()) {
                return null;
            }
            if (!n.isObject()) {
                throw error("rope_scaling", "must be null or an object, got " + show(n));
            }
            JsonNode t = n.has("rope_type") ? n.get("rope_type") : n.get("type");
            String type = t == null ? "absent" : t.asText();
            return switch (type) {
                case "default" -> null;
                case "linear" -> new RopeScaling("linear", scalingNumber(n, "factor"), 0, 0, 0);
                case "llama3" -> new RopeScaling("llama3", scalingNumber(n, "factor"), scalingNumber(n, "low_freq_factor"),
                        scalingNumber(n, "high_freq_factor"), (int) scalingNumber(n, "original_max_position_embeddings"));
                default -> throw error("rope_scaling", "has rope_type '" + type
                        + "', which Strata does not support (null, default, linear, llama3); value " + show(n));
            };
        }

        double scalingNumber(JsonNode scaling, String key) {
            JsonNode v = scaling.get(key);
            if (v == null || !v.isNumber() || !(v.doubleValue() > 0)) {
                throw error("rope_scaling", "needs a positive number '" + key + "', got " + show(v) + " in " + show(scaling));
            }
            return v.doubleValue();
        }

        ModelConfig read() {
            ModelFamily family = family();
            JsonNode mt = root.get("model_type");
            if (mt != null && mt.isTextual() && !mt.asText().equals(family.modelType())) {
                throw error("model_type", "is '" + mt.asText() + "' but architectures names " + family.architecture()
                        + " (model_type '" + family.modelType() + "')");
            }
            int hidden = positiveInt("hidden_size");
            int layers = positiveInt("num_hidden_layers");
            int heads = positiveInt("num_attention_heads");
            int kvHeads = positiveInt("num_key_value_heads", heads);
            if (heads % kvHeads != 0) {
                throw error("num_key_value_heads", "must divide num_attention_heads " + heads + ", got " + kvHeads);
            }
            int headDim;
            if (has("head_dim")) {
                headDim = positiveInt("head_dim");
            } else {
                if (hidden % heads != 0) {
                    throw error("hidden_size", "must be a multiple of num_attention_heads " + heads
                            + " when head_dim is absent, got " + hidden);
                }
                headDim = hidden / heads;
            }
            if (headDim % 2 != 0) {
                throw error("head_dim", "must be even (RoPE rotates pairs), got " + headDim);
            }
            int vocab = positiveInt("vocab_size");
            int intermediate = positiveInt("intermediate_size");
            int experts = 0;
            int topK = 0;
            int expertWidth = 0;
            boolean normTopk = false;
            int sparseStep = 1;
            List<Integer> mlpOnly = new ArrayList<>();
            if (family.moe()) {
                String expertsField = family == ModelFamily.MIXTRAL ? "num_local_experts" : "num_experts";
                experts = positiveInt(expertsField);
                topK = positiveInt("num_experts_per_tok");
                if (topK > experts) {
                    throw error("num_experts_per_tok", "must be at most " + expertsField + " " + experts + ", got " + topK);
                }
                switch (family) {
                    case QWEN3_MOE -> {
                        expertWidth = positiveInt("moe_intermediate_size");
                        normTopk = bool("norm_topk_prob", false);
                        sparseStep = positiveInt("decoder_sparse_step", 1);
                        mlpOnly = ids("mlp_only_layers");
                        for (int l : mlpOnly) {
                            if (l >= layers) {
                                throw error("mlp_only_layers", "holds layer " + l + " but num_hidden_layers is " + layers);
                            }
                        }
                    }
                    case MIXTRAL -> {
                        expertWidth = intermediate;
                        normTopk = true;
                    }
                    default -> {
                        expertWidth = intermediate;
                        normTopk = bool("norm_topk_prob", false);
                    }
                }
            }
            Double clip = null;
            if (has("clip_qkv")) {
                clip = positiveDouble("clip_qkv", 0);
            }
            return new ModelConfig(family, hidden, intermediate, expertWidth, layers, heads, kvHeads, headDim,
                    positiveDouble("rms_norm_eps", 1e-6), positiveDouble("rope_theta", 10000.0), ropeScaling(), vocab,
                    positiveInt("max_position_embeddings", 4096), bool("tie_word_embeddings", false), experts, topK,
                    normTopk, sparseStep, mlpOnly, dtype(), optionalId("bos_token_id"), ids("eos_token_id"),
                    bool("attention_bias", false), family.qkNorm(), clip);
        }
    }
}
