package dev.strata.cli;

import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.engine.model.WeightLoad;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.model.ModelWeights;
import dev.strata.engine.model.SafetensorsFile;
import dev.strata.engine.model.Tensor;
import dev.strata.engine.serve.ServeEngine;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.memory.log.Log;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code strata model ...}: writes synthetic models and inspects model directories. */
@Command(name = "model", mixinStandardHelpOptions = true,
        description = "Writes synthetic Hugging Face model directories and inspects model directories.",
        subcommands = {ModelCommand.Synth.class, ModelCommand.Inspect.class})
final class ModelCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    /** {@code strata model synth --arch A --out DIR [sizes]}. */
    @Command(name = "synth", mixinStandardHelpOptions = true, sortOptions = false,
            description = {"Writes a synthetic model as a Hugging Face directory (config.json, safetensors, tokenizer.json,",
                    "tokenizer_config.json) with seeded random weights and a small byte-level BPE tokenizer."})
    static final class Synth implements Callable<Integer> {
        @Option(names = "--arch", description = "qwen3-moe, mixtral, olmoe, llama or qwen3 (default: ${DEFAULT-VALUE})")
        String arch = "qwen3-moe";
        @Option(names = "--out", required = true, paramLabel = "DIR", description = "the directory to write")
        Path out;
        @Option(names = "--layers", description = "(default: ${DEFAULT-VALUE})")
        int layers = 4;
        @Option(names = "--experts", description = "experts per MoE layer (default: ${DEFAULT-VALUE})")
        int experts = 8;
        @Option(names = "--top-k", description = "experts per token (default: ${DEFAULT-VALUE})")
        int topK = 2;
        @Option(names = "--hidden", description = "model width (default: ${DEFAULT-VALUE})")
        int hidden = 128;
        @Option(names = "--intermediate", description = "dense MLP width; expert width for mixtral/olmoe (default: ${DEFAULT-VALUE})")
        int intermediate = 256;
        @Option(names = "--moe-intermediate", description = "expert width for qwen3-moe (default: ${DEFAULT-VALUE})")
        int moeIntermediate = 64;
        @Option(names = "--heads", description = "query heads (default: ${DEFAULT-VALUE})")
        int heads = 4;
        @Option(names = "--kv-heads", description = "key/value heads (default: ${DEFAULT-VALUE})")
        int kvHeads = 2;
        @Option(names = "--head-dim", description = "width of a head (default: hidden / heads)")
        Integer headDim;
        @Option(names = "--vocab", description = "vocab_size; the tokenizer is trained up to it on a built-in sample, rows beyond are padding (default: ${DEFAULT-VALUE})")
        int vocab = 1024;
        @Option(names = "--dtype", description = "bf16, f16 or f32 (default: ${DEFAULT-VALUE})")
        String dtype = "bf16";
        @Option(names = "--shards", description = "safetensors files; more than 1 writes an index (default: ${DEFAULT-VALUE})")
        int shards = 1;
        @Option(names = "--topic-clusters", description = "0: plain router; C: tokens of one topic prefer a consistent expert subset (default: ${DEFAULT-VALUE})")
        int topicClusters = 0;
        @Option(names = "--tie-embeddings", description = "lm_head shares the embedding")
        boolean tie;
        @Option(names = "--seed", description = "(default: ${DEFAULT-VALUE})")
        long seed = 1;

        @Override
        public Integer call() {
            ModelFamily family = ModelFamily.parse(arch);
            int hd = headDim != null ? headDim : hidden / heads;
            SynthSpec spec = new SynthSpec(family, layers, experts, topK, hidden, intermediate, moeIntermediate, heads, kvHeads,
                    hd, vocab, DType.parse(dtype), seed, shards, topicClusters, tie);
            int[] lastTenth = {-1};
            ModelSynthesizer.Summary s;
            try {
                s = ModelSynthesizer.write(spec, out, (done, total, bytes, totalBytes) -> {
                    int tenth = (int) (bytes * 10 / Math.max(1, totalBytes));
                    if (tenth != lastTenth[0]) {
                        lastTenth[0] = tenth;
                        Log.info("model", String.format(Locale.ROOT, "writing weights: %3d%% (%d/%d tensors, %s)", tenth * 10, done, total,
                                bytes(bytes)));
                    }
                });
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + out + ": " + e.getMessage(), e);
            }
            System.out.printf(Locale.ROOT, "wrote %s model to %s: %d tensors, %s in %d file(s), vocabulary %d (tokenizer %d), seed %d%n",
                    family.cliName(), out, s.tensors(), bytes(s.tensorBytes()), s.weightFiles().size(), s.vocab(), s.tokenizer(), seed);
            return 0;
        }
    }

    /** {@code strata model inspect DIR}. */
    @Command(name = "inspect", mixinStandardHelpOptions = true,
            description = {"Loads a model directory (every shape checked) and prints its config, files, tensors and expert size,",
                    "and its model fingerprint for a KV block size (what strata node --model-fingerprint takes)."})
    static final class Inspect implements Callable<Integer> {
        @Parameters(paramLabel = "DIR", description = "a Hugging Face model directory")
        Path dir;
        @Option(names = "--tensors", description = "list every tensor (default: the first layer's and the global ones)")
        boolean allTensors;
        @Option(names = "--block-tokens", paramLabel = "N", description = "KV block size the fingerprint is for (default: ${DEFAULT-VALUE}) [kv.block-tokens]")
        int blockTokens = 16;

        @Override
        public Integer call() {
            if (blockTokens <= 0) {
                throw new IllegalArgumentException("--block-tokens " + blockTokens + " must be positive");
            }
            try (ModelDirectory m = ModelDirectory.open(dir, WeightLoad.MAP)) { // shapes and sizes only: no need to read the data
                ModelConfig c = m.config();
                System.out.printf(Locale.ROOT, "%s (%s) in %s%n", c.family().architecture(), c.family().cliName(), dir);
                System.out.printf(Locale.ROOT, "  model fingerprint %s for %d-token blocks (node.model-fingerprint)%n",
                        ServeEngine.fingerprint(dir, blockTokens), blockTokens);
                System.out.printf(Locale.ROOT, "  layers %d, hidden %d, heads %d (kv %d, head_dim %d), vocab %d, max positions %d%n",
                        c.numHiddenLayers(), c.hiddenSize(), c.numAttentionHeads(), c.numKeyValueHeads(), c.headDim(),
                        c.vocabSize(), c.maxPositionEmbeddings());
                int moeLayers = 0;
                for (int l = 0; l < c.numHiddenLayers(); l++) {
                    moeLayers += c.isMoeLayer(l) ? 1 : 0;
                }
                if (c.moe()) {
                    System.out.printf(Locale.ROOT, "  MoE: %d of %d layers, %d experts, top-%d, expert width %d, norm_topk_prob %s%n",
                            moeLayers, c.numHiddenLayers(), c.numExperts(), c.numExpertsPerTok(), c.expertIntermediateSize(),
                            c.normTopkProb());
                } else {
                    System.out.printf(Locale.ROOT, "  dense MLP width %d%n", c.intermediateSize());
                }
                System.out.printf(Locale.ROOT, "  rope_theta %s, rope_scaling %s, rms_norm_eps %s, qk-norm %s, tied embeddings %s, dtype %s%n",
                        c.ropeTheta(), c.ropeScaling() == null ? "none" : c.ropeScaling().type(), c.rmsNormEps(), c.qkNorm(),
                        c.tieWordEmbeddings(), c.torchDtype().torchName());
                System.out.printf(Locale.ROOT, "  tokenizer: %d tokens, %d merges, %d added (%s); chat %s%n",
                        m.tokenizer().size(), m.tokenizer().merges().size(), m.tokenizer().addedTokens().size(),
                        String.join(" ", m.tokenizer().addedTokens().stream().map(t -> t.content()).toList()),
                        m.chat().usesTemplate() ? "template " + String.join(", ", m.tokenizerConfig().chatTemplates().keySet())
                                : "format " + m.chatFormat() + " (no chat_template)");
                long total = m.files().tensorBytes();
                System.out.printf(Locale.ROOT, "  weights: %d tensors, %s in %d file(s)%n", m.files().names().size(), bytes(total),
                        m.files().files().size());
                for (SafetensorsFile f : m.files().files()) {
                    System.out.printf(Locale.ROOT, "    %s  %s, %d tensors%n", f.path().getFileName(), bytes(f.fileSize()), f.names().size());
                }
                if (c.moe()) {
                    ModelWeights w = m.weights();
                    int firstMoe = 0;
                    while (!w.layer(firstMoe).moe()) {
                        firstMoe++;
                    }
                    long expert = w.expert(firstMoe, 0).bytes();
                    long allExperts = expert * c.numExperts() * moeLayers;
                    System.out.printf(Locale.ROOT, "  one expert: %s (3 tensors); all experts %s = %.1f%% of the weights; "
                                    + "active per token %s%n", bytes(expert), bytes(allExperts), 100.0 * allExperts / total,
                            bytes(total - allExperts + expert * c.numExpertsPerTok() * moeLayers));
                }
                if (!m.weights().unusedTensors().isEmpty()) {
                    System.out.printf(Locale.ROOT, "  unused tensors: %s%n", m.weights().unusedTensors());
                }
                System.out.println("  tensors:");
                for (String name : m.files().names()) {
                    if (!allTensors && name.startsWith("model.layers.") && !name.startsWith("model.layers.0.")) {
                        continue;
                    }
                    if (!allTensors && name.contains(".experts.") && !name.contains(".experts.0.")) {
                        continue;
                    }
                    Tensor t = m.files().tensor(name);
                    System.out.printf(Locale.ROOT, "    %-60s %-4s %-14s %s%n", name, t.dtype(), Arrays.toString(t.shape()),
                            bytes(t.byteSize()));
                }
                if (!allTensors) {
                    System.out.println("    (layer 0 and expert 0 shown; --tensors lists all)");
                }
            }
            return 0;
        }
    }

    static String bytes(long b) {
        if (b < 1024) {
            return b + " B";
        }
        if (b < 1024 * 1024) {
            return String.format(Locale.ROOT, "%.1f KiB", b / 1024.0);
        }
        if (b < 1024L * 1024 * 1024) {
            return String.format(Locale.ROOT, "%.1f MiB", b / (1024.0 * 1024));
        }
        return String.format(Locale.ROOT, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    }
}
