package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.model.ModelFormatException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What {@code tokenizer_config.json} says about special tokens and chat: the bos, eos and pad
 * token strings (given as a string or as {@code {"content": ...}}), whether to prepend bos, and the
 * Jinja chat template (kept as text only; Strata renders the family's {@link ChatFormat}).
 * A missing file gives all nulls. Immutable.
 */
public record TokenizerConfig(String bosToken, String eosToken, String padToken, boolean addBosToken, String chatTemplate) {
    public static final String FILE_NAME = "tokenizer_config.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Reads {@code dir/tokenizer_config.json}; all nulls when the file is absent. */
    public static TokenizerConfig read(Path dir) {
        Path file = dir.resolve(FILE_NAME);
        if (!Files.exists(file)) {
            return new TokenizerConfig(null, null, null, false, null);
        }
        JsonNode root;
        try {
            root = JSON.readTree(Files.readString(file));
        } catch (JsonProcessingException e) {
            throw new ModelFormatException(file + ": not valid JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new ModelFormatException(file + ": expected a JSON object");
        }
        JsonNode tpl = root.get("chat_template");
        return new TokenizerConfig(token(file, root, "bos_token"), token(file, root, "eos_token"), token(file, root, "pad_token"),
                root.path("add_bos_token").asBoolean(false), tpl != null && tpl.isTextual() ? tpl.asText() : null);
    }

    private static String token(Path file, JsonNode root, String field) {
        JsonNode n = root.get(field);
        if (n == null || n.isNull()) {
            return null;
        }
        if (n.isTextual()) {
            return n.asText();
        }
        if (n.isObject() && n.path("content").isTextual()) {
            return n.get("content").asText();
        }
        throw new ModelFormatException(file + ": field '" + field + "' must be a token string or {\"content\": ...}, got " + n);
    }
}
