package dev.strata.engine.model;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The weights of a model arranged by role, each tensor's shape checked against the config: the
 * embedding, per layer the attention projections (and q/k norms, biases), the two norms, and
 * either a dense MLP or a router with its experts; the final norm and lm_head (the embedding
 * itself when tied). Tensors are views of {@link WeightFiles}; this class copies nothing.
 *
 * <p>Shapes (PyTorch [out, in] convention): q_proj [heads·head_dim, H], k_proj and v_proj
 * [kv_heads·head_dim, H], o_proj [H, heads·head_dim], router [experts, H], gate/up
 * [I, H], down [H, I], norms [H], embedding and lm_head [vocab, H].
 *
 * <p>Threads: immutable; any thread, while the {@link WeightFiles} is open.
 */
public final class ModelWeights {

    /** Attention of one layer; biases and norms are null where the family or config has none. */
    public record Attention(Tensor q, Tensor k, Tensor v, Tensor o, Tensor qBias, Tensor kBias, Tensor vBias,
                            Tensor oBias, Tensor qNorm, Tensor kNorm) {
    }

    /** A SwiGLU MLP: down(silu(gate(x)) · up(x)). */
    public record Mlp(Tensor gate, Tensor up, Tensor down) {
    }

    /**
     * One expert of one layer as a unit the pager can move: its MLP tensors and where their bytes
     * lie on disk.
     *
     * @param layer  layer index
     * @param expert expert index within the layer
     * @param mlp    gate, up, down
     * @param ranges the byte ranges of gate, up, down in their files, in that order
     */
    public record Expert(int layer, int expert, Mlp mlp, List<ByteRange> ranges) {
        public Expert {
            ranges = List.copyOf(ranges);
        }

        /** Bytes of the expert's three tensors. */
        public long bytes() {
            long sum = 0;
            for (ByteRange r : ranges) {
                sum += r.length();
            }
            return sum;
        }

        /** The tensors in the order of {@link #ranges()}. */
        public List<Tensor> tensors() {
            return List.of(mlp.gate(), mlp.up(), mlp.down());
        }
    }

    /** One decoder layer; exactly one of {@code mlp} and {@code router}/{@code experts} is set. */
    public record Layer(int index, Tensor inputNorm, Tensor postAttentionNorm, Attention attention, Mlp mlp,
                        Tensor router, List<Expert> experts) {
        public Layer {
            experts = experts == null ? List.of() : List.copyOf(experts);
        }

        public boolean moe() {
            return router != null;
        }
    }

    private final ModelConfig config;
    private final Tensor embedding;
    private final List<Layer> layers;
    private final Tensor finalNorm;
    private final Tensor lmHead;
    private final List<String> unused;

    private ModelWeights(ModelConfig config, Tensor embedding, List<Layer> layers, Tensor finalNorm, Tensor lmHead,
                         List<String> unused) {
        this.config = config;
        this.embedding = embedding;
        this.layers = List.copyOf(layers);
        this.finalNorm = finalNorm;
        this.lmHead = lmHead;
        this.unused = List.copyOf(unused);
    }

    /**
     * Whether {@code name} is a tensor of one expert of a MoE layer (gate, up or down of
     * {@code ...experts.<e>.}, in every supported family's naming).
     */
    public static boolean isExpertTensor(String name) {
        return name.contains(".experts.");
    }

    /** Builds the view, checking that every tensor the config implies is present with its shape. */
    public static ModelWeights bind(ModelConfig config, WeightFiles files) {
        return new Binder(config, files).bind();
    }

    public ModelConfig config() {
        return config;
    }

    /** [vocab, H] */
    public Tensor embedding() {
        return embedding;
    }

    public List<Layer> layers() {
        return layers;
    }

    public Layer layer(int i) {
        return layers.get(i);
    }

    /** [H] */
    public Tensor finalNorm() {
        return finalNorm;
    }

    /** [vocab, H]; the embedding itself when {@code tie_word_embeddings}. */
    public Tensor lmHead() {
        return lmHead;
    }

    /** Tensors in the files that no role uses (e.g. rotary caches some exports keep). */
    public List<String> unusedTensors() {
        return unused;
    }

    /** Expert {@code e} of layer {@code l}; fails when the layer is dense. */
    public Expert expert(int l, int e) {
        Layer layer = layers.get(l);
        if (!layer.moe()) {
            throw new IllegalArgumentException("layer " + l + " is dense; it has no expert " + e);
        }
        return layer.experts().get(e);
    }

    /** Names the tensors of each role for a family and checks their shapes. */
    private static final class Binder {
        private final ModelConfig c;
        private final WeightFiles files;
        private final Set<String> used = new HashSet<>();

        Binder(ModelConfig c, WeightFiles files) {
            this.c = c;
            this.files = files;
        }

        Tensor need(String name, String why, long... shape) {
            if (!files.contains(name)) {
                throw new ModelFormatException(files.dir() + ": tensor '" + name + "' is missing; expected shape "
                        + Arrays.toString(shape) + " from " + why);
            }
            Tensor t = files.tensor(name);
            if (!Arrays.equals(t.shape(), shape)) {
                throw new ModelFormatException(files.location(name).file() + ": " + name + " has shape "
                        + Arrays.toString(t.shape()) + ", expected " + Arrays.toString(shape) + " from " + why);
            }
            used.add(name);
            return t;
        }

        Tensor optional(boolean present, String name, String why, long... shape) {
            return present ? need(name, why, shape) : null;
        }

        ModelWeights bind() {
            long h = c.hiddenSize();
            long v = c.vocabSize();
            String hw = "hidden_size " + h;
            Tensor embed = need("model.embed_tokens.weight", "vocab_size " + v + " and " + hw, v, h);
            List<Layer> layers = new ArrayList<>();
            for (int l = 0; l < c.numHiddenLayers(); l++) {
                layers.add(layer(l));
            }
            Tensor norm = need("model.norm.weight", hw, h);
            Tensor head = c.tieWordEmbeddings() ? embed : need("lm_head.weight", "vocab_size " + v + " and " + hw, v, h);
            List<String> unused = new ArrayList<>();
            for (String n : files.names()) {
                if (!used.contains(n)) {
                    unused.add(n);
                }
            }
            return new ModelWeights(c, embed, layers, norm, head, unused);
        }

        Layer layer(int l) {
            String p = "model.layers." + l + ".";
            long h = c.hiddenSize();
            String hw = "hidden_size " + h;
            long q = c.qDim();
            long kv = c.kvDim();
            String qw = "num_attention_heads " + c.numAttentionHeads() + " × head_dim " + c.headDim();
            String kvw = "num_key_value_heads " + c.numKeyValueHeads() + " × head_dim " + c.headDim();
            String a = p + "self_attn.";
            boolean bias = c.attentionBias();
            Attention att = new Attention(
                    need(a + "q_proj.weight", qw + " and " + hw, q, h),
                    need(a + "k_proj.weight", kvw + " and " + hw, kv, h),
                    need(a + "v_proj.weight", kvw + " and " + hw, kv, h),
                    need(a + "o_proj.weight", hw + " and " + qw, h, q),
                    optional(bias, a + "q_proj.bias", qw, q),
                    optional(bias, a + "k_proj.bias", kvw, kv),
                    optional(bias, a + "v_proj.bias", kvw, kv),
                    optional(bias, a + "o_proj.bias", hw, h),
                    switch (c.qkNorm()) {
                        case NONE -> null;
                        case PER_HEAD -> need(a + "q_norm.weight", "head_dim " + c.headDim(), c.headDim());
                        case FULL_WIDTH -> need(a + "q_norm.weight", qw, q);
                    },
                    switch (c.qkNorm()) {
                        case NONE -> null;
                        case PER_HEAD -> need(a + "k_norm.weight", "head_dim " + c.headDim(), c.headDim());
                        case FULL_WIDTH -> need(a + "k_norm.weight", kvw, kv);
                    });
            Tensor in = need(p + "input_layernorm.weight", hw, h);
            Tensor post = need(p + "post_attention_layernorm.weight", hw, h);
            if (!c.isMoeLayer(l)) {
                long i = c.intermediateSize();
                String iw = "intermediate_size " + i + " and " + hw;
                Mlp mlp = new Mlp(need(p + "mlp.gate_proj.weight", iw, i, h), need(p + "mlp.up_proj.weight", iw, i, h),
                        need(p + "mlp.down_proj.weight", hw + " and intermediate_size " + i, h, i));
                return new Layer(l, in, post, att, mlp, null, null);
            }
            long e = c.numExperts();
            long i = c.expertIntermediateSize();
            String iField = c.family() == ModelFamily.QWEN3_MOE ? "moe_intermediate_size " : "intermediate_size ";
            String expertsField = c.family() == ModelFamily.MIXTRAL ? "num_local_experts " : "num_experts ";
            String m = c.family().mixtralNames() ? p + "block_sparse_moe." : p + "mlp.";
            Tensor router = need(m + "gate.weight", expertsField + e + " and " + hw, e, h);
            List<Expert> experts = new ArrayList<>();
            String iw = iField + i + " and " + hw;
            String dw = hw + " and " + iField + i;
            for (int x = 0; x < e; x++) {
                String ep = m + "experts." + x + ".";
                String g = ep + (c.family().mixtralNames() ? "w1.weight" : "gate_proj.weight");
                String u = ep + (c.family().mixtralNames() ? "w3.weight" : "up_proj.weight");
                String d = ep + (c.family().mixtralNames() ? "w2.weight" : "down_proj.weight");
                Mlp mlp = new Mlp(need(g, iw, i, h), need(u, iw, i, h), need(d, dw, h, i));
                experts.add(new Expert(l, x, mlp, List.of(files.location(g), files.location(u), files.location(d))));
            }
            return new Layer(l, in, post, att, null, router, experts);
        }
    }
}
