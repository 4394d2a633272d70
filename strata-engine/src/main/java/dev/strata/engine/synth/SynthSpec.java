package dev.strata.engine.synth;

import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;

/**
 * What a synthetic model looks like: family, sizes, dtype, seed, shards and router structure.
 * Validated on construction; immutable.
 *
 * @param family             architecture family
 * @param layers             decoder layers
 * @param experts            experts per MoE layer (ignored for dense families)
 * @param topK               experts per token (ignored for dense families)
 * @param hidden             model width H
 * @param intermediate       dense MLP width (and expert width for Mixtral/OLMoE)
 * @param expertIntermediate expert width for Qwen3-MoE
 * @param heads              query heads
 * @param kvHeads            key/value heads, dividing heads
 * @param headDim            width of a head (even)
 * @param vocab              {@code vocab_size}: the tokenizer is trained up to this size (special tokens
 *                           included, ≥ 256 + specials); rows beyond what the sample yields are padding
 * @param dtype              element type of every tensor
 * @param seed               seed of every random choice
 * @param shards             safetensors files (1: a single model.safetensors)
 * @param topicClusters      0: unstructured router; C > 0: tokens fall in C topic clusters and each
 *                           cluster prefers a consistent subset of experts per layer
 * @param tieEmbeddings      lm_head shares the embedding
 */
public record SynthSpec(ModelFamily family, int layers, int experts, int topK, int hidden, int intermediate,
                        int expertIntermediate, int heads, int kvHeads, int headDim, int vocab, DType dtype, long seed,
                        int shards, int topicClusters, boolean tieEmbeddings) {

    public SynthSpec {
        positive("layers", layers);
        positive("hidden", hidden);
        positive("intermediate", intermediate);
        positive("heads", heads);
        positive("kv-heads", kvHeads);
        positive("head-dim", headDim);
        positive("shards", shards);
        if (heads % kvHeads != 0) {
            throw new IllegalArgumentException("--kv-heads " + kvHeads + " must divide --heads " + heads);
        }
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException("--head-dim must be even (RoPE rotates pairs), got " + headDim);
        }
        if (family.moe()) {
            positive("experts", experts);
            positive("top-k", topK);
            positive("moe-intermediate", expertIntermediate);
            if (topK > experts) {
                throw new IllegalArgumentException("--top-k " + topK + " exceeds --experts " + experts);
            }
        }
        if (vocab < 256 + FamilyTokens.of(family).specials().size()) {
            throw new IllegalArgumentException("--vocab " + vocab + " is below 256 byte tokens + "
                    + FamilyTokens.of(family).specials().size() + " special tokens");
        }
        if (topicClusters < 0) {
            throw new IllegalArgumentException("--topic-clusters must be >= 0, got " + topicClusters);
        }
    }

    private static void positive(String name, int v) {
        if (v <= 0) {
            throw new IllegalArgumentException("--" + name + " must be positive, got " + v);
        }
    }

    /** A small model of {@code family}: 2 layers, H 64, 4 heads of 16 (2 KV heads), 8 experts top-2, BF16. */
    public static SynthSpec small(ModelFamily family, long seed) {
        return new SynthSpec(family, 2, 8, 2, 64, 96, 32, 4, 2, 16, 512, DType.BF16, seed, 1, 0, false);
    }

    /** Whether a layer of this model is MoE. */
    public boolean moe() {
        return family.moe();
    }

    /** Width of one expert's MLP. */
    public int expertWidth() {
        return family == ModelFamily.QWEN3_MOE ? expertIntermediate : intermediate;
    }
}
