package dev.strata.engine.model;

import dev.strata.engine.tokenizer.ChatFormat;
import java.util.Locale;

/**
 * The transformer families Strata loads, with what tells them apart: the {@code architectures}
 * entry and {@code model_type} of {@code config.json}, whether layers are MoE, the q/k norm, the
 * tensor naming of experts, and the chat format. Immutable; any thread.
 *
 * <p>Expert tensor names: Qwen3-MoE and OLMoE use
 * {@code model.layers.{l}.mlp.experts.{e}.gate_proj/up_proj/down_proj.weight} with the router at
 * {@code mlp.gate.weight}; Mixtral uses {@code block_sparse_moe.experts.{e}.w1/w3/w2.weight} (gate,
 * up, down) with the router at {@code block_sparse_moe.gate.weight}.
 */
public enum ModelFamily {
    QWEN3_MOE("qwen3-moe", "Qwen3MoeForCausalLM", "qwen3_moe", true, QkNorm.PER_HEAD, ChatFormat.CHATML),
    MIXTRAL("mixtral", "MixtralForCausalLM", "mixtral", true, QkNorm.NONE, ChatFormat.MISTRAL_INST),
    OLMOE("olmoe", "OlmoeForCausalLM", "olmoe", true, QkNorm.FULL_WIDTH, ChatFormat.TULU),
    LLAMA("llama", "LlamaForCausalLM", "llama", false, QkNorm.NONE, ChatFormat.LLAMA3),
    QWEN3("qwen3", "Qwen3ForCausalLM", "qwen3", false, QkNorm.PER_HEAD, ChatFormat.CHATML);

    private final String cliName;
    private final String architecture;
    private final String modelType;
    private final boolean moe;
    private final QkNorm qkNorm;
    private final ChatFormat chatFormat;

    ModelFamily(String cliName, String architecture, String modelType, boolean moe, QkNorm qkNorm, ChatFormat chatFormat) {
        this.cliName = cliName;
        this.architecture = architecture;
        this.modelType = modelType;
        this.moe = moe;
        this.qkNorm = qkNorm;
        this.chatFormat = chatFormat;
    }

    /** The name used on the command line ({@code --arch}). */
    public String cliName() {
        return cliName;
    }

    /** The {@code architectures[0]} value of {@code config.json}. */
    public String architecture() {
        return architecture;
    }

    /** The {@code model_type} value of {@code config.json}. */
    public String modelType() {
        return modelType;
    }

    /** Whether the family's layers are mixtures of experts. */
    public boolean moe() {
        return moe;
    }

    public QkNorm qkNorm() {
        return qkNorm;
    }

    /** The chat format of the family (implemented in Java; the Jinja template is not run). */
    public ChatFormat chatFormat() {
        return chatFormat;
    }

    /** Whether expert tensors use Mixtral's {@code block_sparse_moe.experts.{e}.w1/w2/w3} names. */
    public boolean mixtralNames() {
        return this == MIXTRAL;
    }

    /** The family of an {@code architectures} entry, or null when Strata does not support it. */
    public static ModelFamily ofArchitecture(String architecture) {
        for (ModelFamily f : values()) {
            if (f.architecture.equals(architecture)) {
                return f;
            }
        }
        return null;
    }

    /** The family named on the command line: qwen3-moe, mixtral, olmoe, llama, qwen3. */
    public static ModelFamily parse(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        for (ModelFamily f : values()) {
            if (f.cliName.equals(n) || f.modelType.equals(n)) {
                return f;
            }
        }
        throw new IllegalArgumentException("architecture '" + name + "' is not supported (qwen3-moe, mixtral, olmoe, llama, qwen3)");
    }
}
