package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.model.ModelFormatException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What {@code tokenizer_config.json} says about special tokens and chat: the bos, eos and pad
 * token strings (given as a string or as {@code {"content": ...}}), whether to prepend bos, and the
 * Jinja chat templates, which {@link ChatRenderer} renders. {@code chat_template} is either one
 * template string or a list of named templates ({@code [{"name": "default", "template": ...},
 * {"name": "tool_use", "template": ...}]}); a single string is kept under the name
 * {@value #DEFAULT_TEMPLATE}. A missing file gives all nulls and no templates. Immutable.
 *
 * @param chatTemplates the chat templates by name, in file order; empty when the file has none
 */
public record TokenizerConfig(String bosToken, String eosToken, String padToken, boolean addBosToken,
                              Map<String, String> chatTemplates) {
    /** The name of the template used when no other fits. */
    public static final String DEFAULT_TEMPLATE = "default";
    /** The name of the template used when the request gives tools. */
    public static final String TOOL_USE_TEMPLATE = "tool_use";

    public static final String FILE_NAME = "tokenizer_config.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    public TokenizerConfig {
        chatTemplates = chatTemplates == null ? Map.of() : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(chatTemplates));
    }

    /** The default chat template's text, or null when there is none. */
    public String chatTemplate() {
        return chatTemplates.get(DEFAULT_TEMPLATE);
    }

    /** Reads {@code dir/tokenizer_config.json}; all nulls when the file is absent. */
    public static TokenizerConfig read(Path dir) {
        Path file = dir.resolve(FILE_NAME);
        if (!Files.exists(file)) {
            return new TokenizerConfig(null, null, null, false, Map.of());
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
        return new TokenizerConfig(token(file, root, "bos_token"), token(file, root, "eos_token"), token(file, root, "pad_token"),
                root.path("add_bos_token").asBoolean(false), templates(file, root.get("chat_template")));
    }

    private static Map<String, String> templates(Path file, JsonNode tpl) {
        Map<String, String> out = new LinkedHashMap<>();
        if (tpl == null || tpl.isNull()) {
            return out;
        }
        if (tpl.isTextual()) {
            out.put(DEFAULT_TEMPLATE, tpl.asText());
            return out;
        }
        if (!tpl.isArray()) {
            throw new ModelFormatException(file + ": field 'chat_template' must be a template string or a list of "
                    + "{\"name\": ..., \"template\": ...}, got " + abbreviate(tpl.toString()));
        }
        for (int i = 0; i < tpl.size(); i++) {
            JsonNode t = tpl.get(i);
            if (!t.path("name").isTextual() || !t.path("template").isTextual()) {
                throw new ModelFormatException(file + ": chat_template entry " + i + " needs a string 'name' and a string "
                        + "'template', got " + abbreviate(t.toString()));
            }
            out.put(t.get("name").asText(), t.get("template").asText());
        }
        return out;
    }

    private static String abbreviate(String s) {
        return s.length() <= 80 ? s : s.substring(0, 77) + "...";
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
