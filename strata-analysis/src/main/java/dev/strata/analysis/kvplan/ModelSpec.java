package dev.strata.analysis.kvplan;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The facts about a model that decide the size of its KV cache (and, for mixture-of-experts
 * models, of its experts): read from a Hugging Face {@code config.json} or taken from a preset.
 *
 * <p>Immutable; any thread.
 *
 * @param name               the model's name (the preset's, or the file's directory)
 * @param layers             decoder layers, all keeping a KV cache ({@code num_hidden_layers})
 * @param attentionHeads     query heads per layer ({@code num_attention_heads})
 * @param kvHeads            key/value heads per layer ({@code num_key_value_heads})
 * @param headDim            elements per head ({@code head_dim})
 * @param hiddenSize         model width, elements ({@code hidden_size})
 * @param dtype              the weights' element type ({@code torch_dtype}), the KV's by default
 * @param experts            routed experts per MoE layer, 0 for a dense model
 * @param expertsPerToken    experts each token is routed to, 0 for a dense model
 * @param expertIntermediate intermediate width of one expert's feed-forward block, elements, 0 for a dense model
 */
public record ModelSpec(String name, int layers, int attentionHeads, int kvHeads, int headDim, int hiddenSize,
        KvDtype dtype, int experts, int expertsPerToken, int expertIntermediate) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * @throws IllegalArgumentException naming the model and the field when a value is out of range
     */
    public ModelSpec {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("model name must be given");
        }
        positive(name, "layers", layers);
        positive(name, "attention heads", attentionHeads);
        positive(name, "KV heads", kvHeads);
        positive(name, "head dim", headDim);
        positive(name, "hidden size", hiddenSize);
        if (dtype == null) {
            throw new IllegalArgumentException("model '" + name + "': dtype must be given");
        }
        if (attentionHeads % kvHeads != 0) {
            throw new IllegalArgumentException("model '" + name + "': " + attentionHeads + " attention heads are not a multiple of "
                    + kvHeads + " KV heads");
        }
        if (experts < 0 || expertsPerToken < 0 || expertIntermediate < 0 || expertsPerToken > experts
                || (experts > 0) != (expertsPerToken > 0) || (experts > 0) != (expertIntermediate > 0)) {
            throw new IllegalArgumentException("model '" + name + "': inconsistent experts: " + experts + " experts, "
                    + expertsPerToken + " per token, intermediate size " + expertIntermediate);
        }
    }

    /** A dense model. */
    public static ModelSpec dense(String name, int layers, int attentionHeads, int kvHeads, int headDim, int hiddenSize,
            KvDtype dtype) {
        return new ModelSpec(name, layers, attentionHeads, kvHeads, headDim, hiddenSize, dtype, 0, 0, 0);
    }

    /** True for a mixture-of-experts model. */
    public boolean isMoe() {
        return experts > 0;
    }

    /**
     * Bytes of one expert in one layer in the weights' dtype: its gate, up and down projections,
     * {@code 3 × hiddenSize × expertIntermediate} elements; 0 for a dense model.
     */
    public long expertBytes() {
        return 3L * hiddenSize * expertIntermediate * dtype.bytes();
    }

    /** The full (all ranks) KV geometry with the given KV dtype and block size. */
    public KvGeometry kvGeometry(KvDtype kvDtype, int blockTokens) {
        return new KvGeometry(layers, kvHeads, headDim, kvDtype == null ? dtype : kvDtype, blockTokens);
    }

    // ---------------------------------------------------------------------------------------------
    // presets

    private static final Map<String, ModelSpec> PRESETS = presets();

    private static Map<String, ModelSpec> presets() {
        Map<String, ModelSpec> p = new LinkedHashMap<>();
        p.put("llama-2-7b", dense("llama-2-7b", 32, 32, 32, 128, 4096, KvDtype.FP16));
        p.put("llama-2-70b", dense("llama-2-70b", 80, 64, 8, 128, 8192, KvDtype.FP16));
        p.put("llama-3-8b", dense("llama-3-8b", 32, 32, 8, 128, 4096, KvDtype.BF16));
        p.put("llama-3-70b", dense("llama-3-70b", 80, 64, 8, 128, 8192, KvDtype.BF16));
        p.put("mixtral-8x7b", new ModelSpec("mixtral-8x7b", 32, 32, 8, 128, 4096, KvDtype.BF16, 8, 2, 14336));
        p.put("qwen3-30b-a3b", new ModelSpec("qwen3-30b-a3b", 48, 32, 4, 128, 2048, KvDtype.BF16, 128, 8, 768));
        p.put("qwen3-32b", dense("qwen3-32b", 64, 64, 8, 128, 5120, KvDtype.BF16));
        return Map.copyOf(p);
    }

    /** The names of the presets, in a stable order. */
    public static java.util.List<String> presetNames() {
        return java.util.List.of("llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mixtral-8x7b",
                "qwen3-30b-a3b", "qwen3-32b");
    }

    /**
     * The preset of that name (case-insensitive).
     *
     * @throws IllegalArgumentException naming the name and listing the choices
     */
    public static ModelSpec preset(String name) {
        ModelSpec spec = name == null ? null : PRESETS.get(name.trim().toLowerCase(Locale.ROOT));
        if (spec == null) {
            throw new IllegalArgumentException("unknown model preset '" + name + "' (choose " + String.join(", ", presetNames())
                    + ")");
        }
        return spec;
    }

    // ---------------------------------------------------------------------------------------------
    // config.json

    /**
     * Reads a Hugging Face {@code config.json}: {@code num_hidden_layers},
     * {@code num_attention_heads}, {@code hidden_size}, {@code num_key_value_heads} (default
     * {@code num_attention_heads}), {@code head_dim} (default {@code hidden_size /
     * num_attention_heads}), {@code torch_dtype} (or {@code dtype}); for mixture-of-experts
     * models {@code num_local_experts} or {@code num_experts}, {@code num_experts_per_tok} and
     * {@code moe_intermediate_size} (default {@code intermediate_size}). Fields of a multimodal
     * model's {@code text_config} are used when the top level lacks them.
     *
     * @param fallbackDtype the dtype to use when the file names none; null to require one
     * @throws IllegalArgumentException naming the file and the missing or invalid field, or why
     *                                  the file cannot be read
     */
    public static ModelSpec fromConfigJson(Path file, KvDtype fallbackDtype) {
        JsonNode root;
        try {
            root = JSON.readTree(Files.readString(file));
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("model config " + file + " does not exist");
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("model config " + file + " is not valid JSON: " + e.getOriginalMessage()
                    + (e.getLocation() == null ? "" : " (line " + e.getLocation().getLineNr() + ")"));
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read model config " + file + ": " + e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("model config " + file + " is not a JSON object");
        }
        ConfigFields f = new ConfigFields(file, root);
        int layers = f.requiredInt("num_hidden_layers");
        int heads = f.requiredInt("num_attention_heads");
        int hidden = f.requiredInt("hidden_size");
        int kvHeads = f.optionalInt("num_key_value_heads", heads);
        int headDim;
        if (f.has("head_dim")) {
            headDim = f.requiredInt("head_dim");
        } else {
            if (hidden % heads != 0) {
                throw new IllegalArgumentException("model config " + file + ": field 'head_dim' is missing and hidden_size "
                        + hidden + " is not a multiple of num_attention_heads " + heads);
            }
            headDim = hidden / heads;
        }
        if (heads % kvHeads != 0) {
            throw new IllegalArgumentException("model config " + file + ": field 'num_key_value_heads' = " + kvHeads
                    + " does not divide num_attention_heads = " + heads);
        }
        KvDtype dtype;
        String dtypeField = f.has("torch_dtype") ? "torch_dtype" : f.has("dtype") ? "dtype" : null;
        if (dtypeField == null) {
            if (fallbackDtype == null) {
                throw new IllegalArgumentException("model config " + file
                        + ": field 'torch_dtype' is missing (give the KV dtype explicitly)");
            }
            dtype = fallbackDtype;
        } else {
            String text = f.text(dtypeField);
            try {
                dtype = KvDtype.parse(text);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("model config " + file + ": field '" + dtypeField + "' = '" + text
                        + "' is not a known dtype (float32, float16, bfloat16, fp8, int8)");
            }
        }
        String expertsField = f.has("num_local_experts") ? "num_local_experts" : f.has("num_experts") ? "num_experts" : null;
        int experts = expertsField == null ? 0 : f.nonNegativeInt(expertsField);
        int perToken = 0;
        int intermediate = 0;
        if (experts > 0) {
            perToken = f.requiredInt("num_experts_per_tok");
            intermediate = f.has("moe_intermediate_size") ? f.requiredInt("moe_intermediate_size")
                    : f.requiredInt("intermediate_size");
            if (perToken > experts) {
                throw new IllegalArgumentException("model config " + file + ": field 'num_experts_per_tok' = " + perToken
                        + " exceeds " + expertsField + " = " + experts);
            }
        }
        Path dir = file.toAbsolutePath().getParent();
        String name = dir != null && dir.getFileName() != null ? dir.getFileName().toString() : file.toString();
        return new ModelSpec(name, layers, heads, kvHeads, headDim, hidden, dtype, experts, perToken, intermediate);
    }

    /** Field access on a config.json, falling back to {@code text_config}, with errors naming file and field. */
    private static final class ConfigFields {
        private final Path file;
        private final JsonNode root;
        private final JsonNode text; // text_config of a multimodal model, or null

        ConfigFields(Path file, JsonNode root) {
            this.file = file;
            this.root = root;
            JsonNode t = root.get("text_config");
            this.text = t != null && t.isObject() ? t : null;
        }

        boolean has(String field) {
            return node(field) != null;
        }

        private JsonNode node(String field) {
            JsonNode n = root.get(field);
            if ((n == null || n.isNull()) && text != null) {
                n = text.get(field);
            }
            return n == null || n.isNull() ? null : n;
        }

        int requiredInt(String field) {
            int v = nonNegativeInt(field);
            if (v == 0) {
                throw invalid(field, node(field), "a positive integer");
            }
            return v;
        }

        int nonNegativeInt(String field) {
            JsonNode n = node(field);
            if (n == null) {
                throw new IllegalArgumentException("model config " + file + ": field '" + field + "' is missing");
            }
            if (!n.canConvertToInt() || !n.isIntegralNumber() || n.intValue() < 0) {
                throw invalid(field, n, "a non-negative integer");
            }
            return n.intValue();
        }

        int optionalInt(String field, int fallback) {
            return has(field) ? requiredInt(field) : fallback;
        }

        String text(String field) {
            JsonNode n = node(field);
            if (!n.isTextual()) {
                throw invalid(field, n, "a string");
            }
            return n.textValue();
        }

        private IllegalArgumentException invalid(String field, JsonNode n, String expected) {
            return new IllegalArgumentException("model config " + file + ": field '" + field + "' = " + n + " is not "
                    + expected);
        }
    }

    private static void positive(String model, String what, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException("model '" + model + "': " + what + " must be positive, got " + value);
        }
    }
}
