package dev.strata.engine.model;

import dev.strata.engine.tokenizer.BpeTokenizer;
import dev.strata.engine.tokenizer.ChatFormat;
import dev.strata.engine.tokenizer.ChatRenderer;
import dev.strata.engine.tokenizer.ChatTemplateException;
import dev.strata.engine.tokenizer.TokenizerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Predicate;

/**
 * A Hugging Face model directory opened for use: the validated config, the weights (copied into
 * private memory, or memory-mapped: {@link WeightLoad}) arranged by role with every shape checked,
 * the tokenizer and its config, and the chat renderer (the checkpoint's own chat template, or the
 * family's chat format when it has none). Closing it frees or unmaps the weights.
 *
 * <p>Threads: immutable after {@link #open}; any thread may read; {@link #close()} once, when no
 * thread reads any more.
 */
public final class ModelDirectory implements AutoCloseable {
    private final Path dir;
    private final ModelConfig config;
    private final WeightFiles files;
    private final ModelWeights weights;
    private final BpeTokenizer tokenizer;
    private final TokenizerConfig tokenizerConfig;
    private final ChatRenderer chat;

    private ModelDirectory(Path dir, ModelConfig config, WeightFiles files, ModelWeights weights, BpeTokenizer tokenizer,
                           TokenizerConfig tokenizerConfig, ChatRenderer chat) {
        this.dir = dir;
        this.config = config;
        this.files = files;
        this.weights = weights;
        this.tokenizer = tokenizer;
        this.tokenizerConfig = tokenizerConfig;
        this.chat = chat;
    }

    /**
     * Opens {@code dir}: config, weights (shapes checked) copied into private memory
     * ({@link WeightLoad#COPY}), tokenizer, tokenizer config.
     */
    public static ModelDirectory open(Path dir) {
        return open(dir, WeightLoad.COPY);
    }

    /** Opens {@code dir} as {@link #open(Path)} does, with the weights copied or mapped as {@code load} says. */
    public static ModelDirectory open(Path dir, WeightLoad load) {
        return open(dir, load, name -> false);
    }

    /**
     * Opens {@code dir} with the weights copied or mapped as {@code load} says; a copy leaves the
     * tensors {@code readOnce} accepts mapped, for a caller that reads them once, at start, into
     * memory of its own (e.g. {@link ModelWeights#isExpertTensor} for a server whose pager holds
     * the experts in its masters), so that they are not held twice.
     */
    public static ModelDirectory open(Path dir, WeightLoad load, Predicate<String> readOnce) {
        if (!Files.isDirectory(dir)) {
            throw new ModelFormatException(dir + ": not a directory (a model directory holds config.json, weights and tokenizer.json)");
        }
        ModelConfig config = ModelConfig.read(dir);
        BpeTokenizer tokenizer = BpeTokenizer.read(dir);
        if (tokenizer.size() > config.vocabSize()) {
            throw new ModelFormatException(dir.resolve(BpeTokenizer.FILE_NAME) + ": " + tokenizer.size()
                    + " token ids exceed vocab_size " + config.vocabSize() + " of config.json");
        }
        TokenizerConfig tc = TokenizerConfig.read(dir);
        ChatRenderer chat;
        try {
            chat = ChatRenderer.of(tc, config.family().chatFormat());
        } catch (ChatTemplateException e) {
            throw new ModelFormatException(dir.resolve(TokenizerConfig.FILE_NAME) + ": " + e.getMessage());
        }
        WeightFiles files = WeightFiles.open(dir, load, readOnce);
        try {
            return new ModelDirectory(dir, config, files, ModelWeights.bind(config, files), tokenizer, tc, chat);
        } catch (RuntimeException e) {
            files.close();
            throw e;
        }
    }

    public Path dir() {
        return dir;
    }

    public ModelConfig config() {
        return config;
    }

    public WeightFiles files() {
        return files;
    }

    public ModelWeights weights() {
        return weights;
    }

    public BpeTokenizer tokenizer() {
        return tokenizer;
    }

    public TokenizerConfig tokenizerConfig() {
        return tokenizerConfig;
    }

    /**
     * How chats become prompt text for this model: its own chat template, or the family's
     * {@link #chatFormat()} when {@code tokenizer_config.json} has none.
     */
    public ChatRenderer chat() {
        return chat;
    }

    /** The chat format of the model's family (the fallback of {@link #chat()}). */
    public ChatFormat chatFormat() {
        return config.family().chatFormat();
    }

    @Override
    public void close() {
        files.close();
    }
}
