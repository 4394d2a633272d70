package dev.strata.bench.engine;

import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelWeights;
import dev.strata.engine.model.Tensor;

/**
 * What one token costs a model, counted from its bound weights: the weight bytes a decode step
 * reads and the floating-point operations of a forward pass.
 *
 * <p>Active bytes of one decode token, in the model's dtype: the token's embedding row; per layer
 * its two norms, the attention weights (q, k, v, o and any biases and q/k norms), and either the
 * dense MLP or the router plus the top-k experts the token is routed to (every expert of a layer
 * has the same size); the final norm and the LM head. This is what must stream from memory per
 * token when the weights do not fit in the caches, so {@code copy bandwidth / active bytes} is the
 * decode roofline.
 *
 * <p>Operations: {@code 2 · elements} per matrix-vector product (multiply and add), and for the
 * attention of a token at position {@code p} (0-based, over {@code p + 1} keys) {@code 4 · qDim ·
 * (p + 1)} per layer (the q·k dot products and the weighted sum of the values); norms, RoPE and
 * activations are not counted.
 *
 * <p>Immutable; any thread.
 *
 * @param activeBytes        weight bytes one decode token reads (bytes)
 * @param matrixFlopsPerToken {@code 2 ×} the matrix elements one token multiplies, LM head excluded
 * @param lmHeadFlops        {@code 2 × vocab × hidden}: one position's logits
 * @param attentionFlopsPerKey {@code 4 × qDim × layers}: attention operations per attended key
 */
public record ModelCost(long activeBytes, long matrixFlopsPerToken, long lmHeadFlops, long attentionFlopsPerKey) {

    /** The costs of {@code weights}. */
    public static ModelCost of(ModelWeights weights) {
        ModelConfig c = weights.config();
        long bytes = (long) c.hiddenSize() * weights.embedding().dtype().bytes(); // the token's embedding row
        long matrix = 0;
        for (ModelWeights.Layer layer : weights.layers()) {
            bytes += size(layer.inputNorm()) + size(layer.postAttentionNorm());
            ModelWeights.Attention a = layer.attention();
            for (Tensor t : new Tensor[] {a.q(), a.k(), a.v(), a.o()}) {
                bytes += size(t);
                matrix += t.elements();
            }
            for (Tensor t : new Tensor[] {a.qBias(), a.kBias(), a.vBias(), a.oBias(), a.qNorm(), a.kNorm()}) {
                bytes += size(t);
            }
            if (layer.moe()) {
                bytes += size(layer.router());
                matrix += layer.router().elements();
                ModelWeights.Mlp expert = layer.experts().getFirst().mlp();
                long expertElements = expert.gate().elements() + expert.up().elements() + expert.down().elements();
                bytes += (long) c.numExpertsPerTok() * layer.experts().getFirst().bytes();
                matrix += (long) c.numExpertsPerTok() * expertElements;
            } else {
                ModelWeights.Mlp m = layer.mlp();
                bytes += size(m.gate()) + size(m.up()) + size(m.down());
                matrix += m.gate().elements() + m.up().elements() + m.down().elements();
            }
        }
        bytes += size(weights.finalNorm()) + size(weights.lmHead());
        long lmHead = 2 * weights.lmHead().elements();
        return new ModelCost(bytes, 2 * matrix, lmHead, 4L * c.qDim() * c.numHiddenLayers());
    }

    /**
     * Operations of a prefill of {@code tokens} tokens from position 0 that computes the logits of
     * the last position only (what {@code ModelRunner.prefill(prompt, false)} does).
     */
    public double prefillFlops(int tokens) {
        double keys = (double) tokens * (tokens + 1) / 2; // Σ (p + 1) over positions 0 .. tokens - 1
        return (double) tokens * matrixFlopsPerToken + keys * attentionFlopsPerKey + lmHeadFlops;
    }

    private static long size(Tensor t) {
        return t == null ? 0 : t.byteSize();
    }
}
