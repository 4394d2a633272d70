package dev.strata.engine.synth;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.model.WeightFiles;
import dev.strata.engine.tokenizer.AddedToken;
import dev.strata.engine.tokenizer.BpeTokenizer;
import dev.strata.engine.tokenizer.PreTokenizer;
import dev.strata.engine.tokenizer.TokenizerConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a synthetic model as a Hugging Face directory that the real loaders read:
 * {@code config.json}, {@code model.safetensors} (or shards with {@code model.safetensors.index.json}),
 * {@code tokenizer.json} and {@code tokenizer_config.json}.
 *
 * <p>Design: the tokenizer is of the family's real kind ({@link FamilyTokens}), trained by
 * {@link BpeTrainer} on {@link TextSample}: byte-level BPE with the family's split regex and
 * special tokens, or (Mixtral) SentencePiece-style BPE in the Llama 2 layout, so that synthetic
 * models exercise the same tokenizer paths as real checkpoints. Every tensor draws from its own random
 * stream, seeded by the model seed and the tensor's name, so values do not depend on sharding.
 * Projections are N(0, 1/fan_in) (standard deviation 1/√fan_in) so activations keep their scale,
 * except the layers' output projections (attention o_proj, MLP and expert down projections), which
 * are {@link #LAYER_OUTPUT_SCALE} times that; norm weights are 1 + N(0, 0.1²); embeddings N(0, 1);
 * biases N(0, 0.02²).
 *
 * <p>Language model (untied embeddings): the LM head carries {@link SampleBigrams}, the successor
 * of each token in the built-in sample. The layers add little to the residual stream, so at each
 * position it stays close to the current token's embedding, and the head maps that embedding to
 * its successor's logit (see {@link #lmHead}): greedy decoding echoes the sample as readable
 * text instead of random bytes. With tied embeddings the head is the embedding and random.
 *
 * <p>Router structure ({@code topicClusters} C > 0): each token gets a topic — the sample topic
 * whose text uses it most, modulo C (tokens the sample never uses: id mod C). Each cluster c has
 * a random unit direction u_c in the hidden space; a token's embedding is
 * 0.6·noise + 0.8·√H·u_c. In every MoE layer each cluster is given a subset of
 * max(top-k, E / C) experts (a seeded per-layer shuffle, so subsets differ across layers), and
 * expert e's router row is N(0, 1/H) noise plus 4·Σ u_c over the clusters whose subset holds e.
 * Tokens of one topic therefore route mostly to their cluster's subset: skew and locality.
 *
 * <p>Threads: one call at a time per output directory; the class keeps no state.
 */
public final class ModelSynthesizer {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final String EMBED = "model.embed_tokens.weight";
    /**
     * Scale of the layers' output projections (attention o_proj, MLP and expert down projections)
     * relative to N(0, 1/fan_in): small, so the residual stream stays close to the current token's
     * embedding and the LM head's bigrams decide the next token.
     */
    static final double LAYER_OUTPUT_SCALE = 0.1;

    /** Progress of writing tensors: called after each tensor. */
    @FunctionalInterface
    public interface Progress {
        void tensorWritten(int done, int total, long bytesDone, long bytesTotal);
    }

    /**
     * What was written.
     *
     * @param vocab     {@code vocab_size} of the config: rows of the embedding and lm_head
     * @param tokenizer tokens the tokenizer has; fewer than {@code vocab} when the built-in sample
     *                  runs out of repeated pairs (the rows above are padding, as in real models)
     */
    public record Summary(Path dir, List<Path> weightFiles, long tensorBytes, int tensors, int vocab, int tokenizer) {
    }

    private ModelSynthesizer() {
    }

    /** Writes the model of {@code spec} into {@code dir} (created if absent; existing model files replaced). */
    public static Summary write(SynthSpec spec, Path dir, Progress progress) throws IOException {
        Files.createDirectories(dir);
        FamilyTokens ft = FamilyTokens.of(spec.family());
        BpeTokenizer tok = tokenizer(spec, ft);
        Files.writeString(dir.resolve(BpeTokenizer.FILE_NAME), JSON.writeValueAsString(tok.toJson()), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve(TokenizerConfig.FILE_NAME), JSON.writeValueAsString(tokenizerConfig(spec, ft)),
                StandardCharsets.UTF_8);
        int vocab = Math.max(spec.vocab(), tok.size());
        Files.writeString(dir.resolve("config.json"), JSON.writeValueAsString(config(spec, ft, tok, vocab)), StandardCharsets.UTF_8);

        int[] cluster = spec.topicClusters() > 0 ? tokenClusters(tok, spec.topicClusters(), vocab) : null;
        float[][] centroids = cluster == null ? null : centroids(spec);
        SampleBigrams bigrams = spec.tieEmbeddings() ? null : SampleBigrams.of(tok);
        List<SafetensorsWriter.Spec> tensors = tensors(spec, vocab, cluster, centroids, bigrams);
        long total = 0;
        for (SafetensorsWriter.Spec t : tensors) {
            total += t.bytes();
        }
        Files.deleteIfExists(dir.resolve(WeightFiles.SINGLE_FILE));
        Files.deleteIfExists(dir.resolve(WeightFiles.INDEX_FILE));
        int shards = Math.min(spec.shards(), tensors.size());
        List<List<SafetensorsWriter.Spec>> groups = partition(tensors, shards, total);
        List<Path> files = new ArrayList<>();
        Map<String, String> meta = Map.of("format", "pt", "generator", "strata model synth", "seed", Long.toString(spec.seed()));
        int done = 0;
        long bytesDone = 0;
        ObjectNode weightMap = JSON.createObjectNode();
        for (int s = 0; s < groups.size(); s++) {
            String name = groups.size() == 1 ? WeightFiles.SINGLE_FILE
                    : String.format("model-%05d-of-%05d.safetensors", s + 1, groups.size());
            Path file = dir.resolve(name);
            List<SafetensorsWriter.Spec> group = groups.get(s);
            SafetensorsWriter.write(file, group, meta);
            files.add(file);
            for (SafetensorsWriter.Spec t : group) {
                weightMap.put(t.name(), name);
                bytesDone += t.bytes();
                progress.tensorWritten(++done, tensors.size(), bytesDone, total);
            }
        }
        if (groups.size() > 1) {
            ObjectNode index = JSON.createObjectNode();
            index.putObject("metadata").put("total_size", total);
            index.set("weight_map", weightMap);
            Files.writeString(dir.resolve(WeightFiles.INDEX_FILE), JSON.writeValueAsString(index), StandardCharsets.UTF_8);
        }
        return new Summary(dir, files, total, tensors.size(), vocab, tok.size());
    }

    /** The family's tokenizer trained on the built-in sample, with its special tokens. */
    static BpeTokenizer tokenizer(SynthSpec spec, FamilyTokens ft) {
        if (ft.sentencePiece()) {
            BpeTrainer.Result r = BpeTrainer.trainSentencePiece(TextSample.all(), ft.specials(), spec.vocab());
            List<AddedToken> added = new ArrayList<>();
            for (String s : ft.specials()) {
                added.add(new AddedToken(r.vocab().get(s), s, FamilyTokens.skippable(s)));
            }
            return BpeTokenizer.sentencePiece(r.vocab(), r.merges(), added, ft.specials().getFirst(), ft.bos());
        }
        PreTokenizer pre = PreTokenizer.of(ft.regex());
        BpeTrainer.Result r = BpeTrainer.train(TextSample.all(), pre, spec.vocab() - ft.specials().size());
        List<AddedToken> added = new ArrayList<>();
        int id = r.vocab().size();
        for (String s : ft.specials()) {
            added.add(new AddedToken(id++, s, FamilyTokens.skippable(s)));
        }
        return new BpeTokenizer(r.vocab(), r.merges(), added, pre, false, false);
    }

    private static ObjectNode tokenizerConfig(SynthSpec spec, FamilyTokens ft) {
        ObjectNode o = JSON.createObjectNode();
        if (ft.bos() == null) {
            o.putNull("bos_token");
        } else {
            o.put("bos_token", ft.bos());
        }
        o.put("eos_token", ft.eos());
        o.put("pad_token", ft.specials().getFirst());
        o.put("add_bos_token", ft.bos() != null);
        o.put("model_max_length", 4096);
        o.put("tokenizer_class", "PreTrainedTokenizerFast");
        o.put("chat_template", ChatTemplates.jinja(spec.family()));
        return o;
    }

    private static ObjectNode config(SynthSpec spec, FamilyTokens ft, BpeTokenizer tok, int vocab) {
        ModelFamily f = spec.family();
        ObjectNode o = JSON.createObjectNode();
        o.putArray("architectures").add(f.architecture());
        o.put("model_type", f.modelType());
        o.put("hidden_size", spec.hidden());
        o.put("intermediate_size", spec.intermediate());
        o.put("num_hidden_layers", spec.layers());
        o.put("num_attention_heads", spec.heads());
        o.put("num_key_value_heads", spec.kvHeads());
        o.put("head_dim", spec.headDim());
        o.put("hidden_act", "silu");
        o.put("rms_norm_eps", 1e-6);
        o.put("rope_theta", f == ModelFamily.LLAMA ? 500000.0 : 1000000.0);
        o.putNull("rope_scaling");
        o.put("vocab_size", vocab);
        o.put("max_position_embeddings", 4096);
        o.put("tie_word_embeddings", spec.tieEmbeddings());
        o.put("attention_bias", false);
        o.put("attention_dropout", 0.0);
        o.put("torch_dtype", spec.dtype().torchName());
        if (ft.bos() == null) {
            o.putNull("bos_token_id");
        } else {
            o.put("bos_token_id", tok.id(ft.bos()));
        }
        if (ft.extraEos().isEmpty()) {
            o.put("eos_token_id", tok.id(ft.eos()));
        } else {
            var eos = o.putArray("eos_token_id");
            eos.add(tok.id(ft.eos()));
            ft.extraEos().forEach(t -> eos.add(tok.id(t)));
        }
        switch (f) {
            case QWEN3_MOE -> {
                o.put("num_experts", spec.experts());
                o.put("num_experts_per_tok", spec.topK());
                o.put("moe_intermediate_size", spec.expertIntermediate());
                o.put("norm_topk_prob", true);
                o.put("decoder_sparse_step", 1);
                o.putArray("mlp_only_layers");
                o.put("output_router_logits", false);
                o.put("router_aux_loss_coef", 0.001);
            }
            case MIXTRAL -> {
                o.put("num_local_experts", spec.experts());
                o.put("num_experts_per_tok", spec.topK());
                o.put("router_aux_loss_coef", 0.02);
            }
            case OLMOE -> {
                o.put("num_experts", spec.experts());
                o.put("num_experts_per_tok", spec.topK());
                o.put("norm_topk_prob", false);
                o.putNull("clip_qkv");
            }
            default -> {
            }
        }
        return o;
    }

    /** The cluster of each id below {@code vocab}: its main sample topic mod C, or id mod C when the sample never uses it. */
    static int[] tokenClusters(BpeTokenizer tok, int clusters, int vocab) {
        List<TextSample.Topic> topics = TextSample.topics();
        int[][] uses = new int[topics.size()][vocab];
        for (int t = 0; t < topics.size(); t++) {
            for (int id : tok.encodeOrdinary(topics.get(t).text())) {
                uses[t][id]++;
            }
        }
        int[] cluster = new int[vocab];
        for (int id = 0; id < cluster.length; id++) {
            int best = -1;
            int bestUses = 0;
            for (int t = 0; t < topics.size(); t++) {
                if (uses[t][id] > bestUses) {
                    best = t;
                    bestUses = uses[t][id];
                }
            }
            cluster[id] = (best < 0 ? id : best) % clusters;
        }
        return cluster;
    }

    private static float[][] centroids(SynthSpec spec) {
        float[][] c = new float[spec.topicClusters()][spec.hidden()];
        for (int k = 0; k < c.length; k++) {
            SplittableRandom r = stream(spec.seed(), "topic-centroid-" + k);
            double norm = 0;
            for (int j = 0; j < spec.hidden(); j++) {
                c[k][j] = (float) r.nextGaussian();
                norm += c[k][j] * (double) c[k][j];
            }
            float inv = (float) (1 / Math.sqrt(norm));
            for (int j = 0; j < spec.hidden(); j++) {
                c[k][j] *= inv;
            }
        }
        return c;
    }

    /** The random stream of one tensor: the model seed mixed with a 64-bit hash of the name. */
    static SplittableRandom stream(long seed, String name) {
        long h = 0xcbf29ce484222325L;
        for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xFF)) * 0x100000001b3L;
        }
        return new SplittableRandom(seed * 0x9E3779B97F4A7C15L ^ h);
    }

    private static SafetensorsWriter.Values gaussian(long seed, String name, double std) {
        SplittableRandom r = stream(seed, name);
        return () -> (float) (r.nextGaussian() * std);
    }

    private static SafetensorsWriter.Values nearOne(long seed, String name) {
        SplittableRandom r = stream(seed, name);
        return () -> (float) (1 + 0.1 * r.nextGaussian());
    }

    private static List<SafetensorsWriter.Spec> tensors(SynthSpec s, int vocab, int[] cluster, float[][] centroids,
                                                        SampleBigrams bigrams) {
        List<SafetensorsWriter.Spec> out = new ArrayList<>();
        DType dt = s.dtype();
        long h = s.hidden();
        long q = (long) s.heads() * s.headDim();
        long kv = (long) s.kvHeads() * s.headDim();
        long seed = s.seed();
        out.add(new SafetensorsWriter.Spec(EMBED, dt, new long[] {vocab, h}, embedding(s, cluster, centroids)));
        for (int l = 0; l < s.layers(); l++) {
            String p = "model.layers." + l + ".";
            String a = p + "self_attn.";
            out.add(proj(seed, a + "q_proj.weight", dt, q, h));
            out.add(proj(seed, a + "k_proj.weight", dt, kv, h));
            out.add(proj(seed, a + "v_proj.weight", dt, kv, h));
            out.add(proj(seed, a + "o_proj.weight", dt, h, q, LAYER_OUTPUT_SCALE));
            switch (s.family().qkNorm()) {
                case PER_HEAD -> {
                    out.add(new SafetensorsWriter.Spec(a + "q_norm.weight", dt, new long[] {s.headDim()}, nearOne(seed, a + "q_norm.weight")));
                    out.add(new SafetensorsWriter.Spec(a + "k_norm.weight", dt, new long[] {s.headDim()}, nearOne(seed, a + "k_norm.weight")));
                }
                case FULL_WIDTH -> {
                    out.add(new SafetensorsWriter.Spec(a + "q_norm.weight", dt, new long[] {q}, nearOne(seed, a + "q_norm.weight")));
                    out.add(new SafetensorsWriter.Spec(a + "k_norm.weight", dt, new long[] {kv}, nearOne(seed, a + "k_norm.weight")));
                }
                case NONE -> {
                }
            }
            out.add(new SafetensorsWriter.Spec(p + "input_layernorm.weight", dt, new long[] {h}, nearOne(seed, p + "input_layernorm.weight")));
            out.add(new SafetensorsWriter.Spec(p + "post_attention_layernorm.weight", dt, new long[] {h},
                    nearOne(seed, p + "post_attention_layernorm.weight")));
            if (!s.moe()) {
                long i = s.intermediate();
                out.add(proj(seed, p + "mlp.gate_proj.weight", dt, i, h));
                out.add(proj(seed, p + "mlp.up_proj.weight", dt, i, h));
                out.add(proj(seed, p + "mlp.down_proj.weight", dt, h, i, LAYER_OUTPUT_SCALE));
                continue;
            }
            boolean mixtral = s.family().mixtralNames();
            String m = p + (mixtral ? "block_sparse_moe." : "mlp.");
            out.add(router(s, l, m + "gate.weight", centroids));
            long i = s.expertWidth();
            for (int e = 0; e < s.experts(); e++) {
                String ep = m + "experts." + e + ".";
                out.add(proj(seed, ep + (mixtral ? "w1.weight" : "gate_proj.weight"), dt, i, h));
                out.add(proj(seed, ep + (mixtral ? "w2.weight" : "down_proj.weight"), dt, h, i, LAYER_OUTPUT_SCALE));
                out.add(proj(seed, ep + (mixtral ? "w3.weight" : "up_proj.weight"), dt, i, h));
            }
        }
        out.add(new SafetensorsWriter.Spec("model.norm.weight", s.dtype(), new long[] {h}, nearOne(seed, "model.norm.weight")));
        if (!s.tieEmbeddings()) {
            out.add(new SafetensorsWriter.Spec("lm_head.weight", dt, new long[] {vocab, h}, lmHead(s, cluster, centroids, bigrams)));
        }
        return out;
    }

    /**
     * The embedding's values in row-major order, from a fresh stream (so the rows can be read again):
     * N(0, 1), or 0.6·noise + 0.8·√H·u_c with topic clusters.
     */
    private static SafetensorsWriter.Values embedding(SynthSpec s, int[] cluster, float[][] centroids) {
        if (cluster == null) {
            return gaussian(s.seed(), EMBED, 1.0);
        }
        int h = s.hidden();
        SplittableRandom r = stream(s.seed(), EMBED);
        long[] i = {0};
        return () -> {
            int row = (int) (i[0] / h);
            int col = (int) (i[0] % h);
            i[0]++;
            return (float) (0.6 * r.nextGaussian() + 0.8 * Math.sqrt(h) * centroids[cluster[row]][col]);
        };
    }

    /**
     * The LM head carrying the sample's bigrams: row v = Σ over the tokens u whose successor is v
     * of {@link SampleBigrams#SCORE}·k_u / (k_u·e_u), where e_u is u's embedding and the key k_u is
     * e_u without its part in the span of the topic centroids (shared by a whole cluster; e_u itself
     * without clusters). Keys of distinct tokens are nearly orthogonal (random in H dimensions), so
     * with the residual stream close to e_w the logit of w's successor is SCORE and every other
     * logit 0, up to noise of about SCORE/√H per predecessor a row carries. Rows of tokens that are
     * no token's successor (padding and special tokens among them) are zero.
     */
    private static SafetensorsWriter.Values lmHead(SynthSpec s, int[] cluster, float[][] centroids, SampleBigrams bigrams) {
        int h = s.hidden();
        int n = bigrams.size();
        float[][] keys = new float[n][h]; // [u][j]: key of token u
        float[] inverseKeyDotEmbedding = new float[n]; // [u]: 1 / (k_u · e_u)
        SafetensorsWriter.Values emb = embedding(s, cluster, centroids);
        float[][] basis = centroids == null ? new float[0][] : orthonormal(centroids);
        for (int u = 0; u < n; u++) {
            float[] e = new float[h];
            for (int j = 0; j < h; j++) {
                e[j] = emb.next();
            }
            float[] k = e.clone();
            for (float[] b : basis) {
                double dot = 0;
                for (int j = 0; j < h; j++) {
                    dot += b[j] * (double) k[j];
                }
                for (int j = 0; j < h; j++) {
                    k[j] -= (float) (dot * b[j]);
                }
            }
            double ke = 0;
            for (int j = 0; j < h; j++) {
                ke += k[j] * (double) e[j];
            }
            keys[u] = k;
            inverseKeyDotEmbedding[u] = (float) (1 / ke);
        }
        float[] row = new float[h];
        long[] i = {0};
        return () -> {
            int v = (int) (i[0] / h);
            int col = (int) (i[0] % h);
            i[0]++;
            if (col == 0) {
                Arrays.fill(row, 0);
                if (v < n) {
                    for (int u : bigrams.predecessors(v)) {
                        float w = SampleBigrams.SCORE * inverseKeyDotEmbedding[u];
                        float[] key = keys[u];
                        for (int j = 0; j < h; j++) {
                            row[j] += w * key[j];
                        }
                    }
                }
            }
            return row[col];
        };
    }

    /** An orthonormal basis of the span of {@code vectors} (Gram-Schmidt; vectors already in the span are dropped). */
    private static float[][] orthonormal(float[][] vectors) {
        List<float[]> basis = new ArrayList<>();
        for (float[] v : vectors) {
            double[] w = new double[v.length];
            for (int j = 0; j < v.length; j++) {
                w[j] = v[j];
            }
            for (float[] b : basis) {
                double dot = 0;
                for (int j = 0; j < w.length; j++) {
                    dot += b[j] * w[j];
                }
                for (int j = 0; j < w.length; j++) {
                    w[j] -= dot * b[j];
                }
            }
            double norm = 0;
            for (double x : w) {
                norm += x * x;
            }
            if (norm < 1e-12) {
                continue;
            }
            float[] unit = new float[w.length];
            for (int j = 0; j < w.length; j++) {
                unit[j] = (float) (w[j] / Math.sqrt(norm));
            }
            basis.add(unit);
        }
        return basis.toArray(float[][]::new);
    }

    private static SafetensorsWriter.Spec proj(long seed, String name, DType dt, long out, long in) {
        return proj(seed, name, dt, out, in, 1);
    }

    /** A projection N(0, (scale/√in)²). */
    private static SafetensorsWriter.Spec proj(long seed, String name, DType dt, long out, long in, double scale) {
        return new SafetensorsWriter.Spec(name, dt, new long[] {out, in}, gaussian(seed, name, scale / Math.sqrt(in)));
    }

    private static SafetensorsWriter.Spec router(SynthSpec s, int layer, String name, float[][] centroids) {
        int e = s.experts();
        int h = s.hidden();
        if (centroids == null) {
            return proj(s.seed(), name, s.dtype(), e, h);
        }
        int clusters = centroids.length;
        int subset = Math.min(e, Math.max(s.topK(), e / clusters));
        int[] perm = new int[e];
        for (int x = 0; x < e; x++) {
            perm[x] = x;
        }
        SplittableRandom shuffle = stream(s.seed(), "route-subsets-" + layer);
        for (int x = e - 1; x > 0; x--) {
            int y = shuffle.nextInt(x + 1);
            int t = perm[x];
            perm[x] = perm[y];
            perm[y] = t;
        }
        float[][] rows = new float[e][h];
        for (int c = 0; c < clusters; c++) {
            for (int j = 0; j < subset; j++) {
                int expert = perm[(c * subset + j) % e];
                for (int d = 0; d < h; d++) {
                    rows[expert][d] += 4 * centroids[c][d];
                }
            }
        }
        SplittableRandom noise = stream(s.seed(), name);
        double std = 1 / Math.sqrt(h);
        long[] i = {0};
        return new SafetensorsWriter.Spec(name, s.dtype(), new long[] {e, h}, () -> {
            int row = (int) (i[0] / h);
            int col = (int) (i[0] % h);
            i[0]++;
            return (float) (rows[row][col] + std * noise.nextGaussian());
        });
    }

    private static List<List<SafetensorsWriter.Spec>> partition(List<SafetensorsWriter.Spec> tensors, int shards, long total) {
        List<List<SafetensorsWriter.Spec>> groups = new ArrayList<>();
        List<SafetensorsWriter.Spec> cur = new ArrayList<>();
        long acc = 0;
        int left = tensors.size();
        for (SafetensorsWriter.Spec t : tensors) {
            int groupsLeft = shards - groups.size();
            boolean full = acc >= (double) total * (groups.size() + 1) / shards;
            if (!cur.isEmpty() && groupsLeft > 1 && (full || left < groupsLeft)) {
                groups.add(cur);
                cur = new ArrayList<>();
            }
            cur.add(t);
            acc += t.bytes();
            left--;
        }
        groups.add(cur);
        return groups;
    }
}
