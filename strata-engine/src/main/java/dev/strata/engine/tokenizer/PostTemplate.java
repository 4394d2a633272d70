package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * What the {@code post_processor} of a {@code tokenizer.json} adds around one encoded text: the
 * special tokens its {@code TemplateProcessing} {@code single} template puts before and after
 * {@code $A} (Llama 2 and Mistral: {@code <s>} before; Llama 3: {@code <|begin_of_text|>} before).
 * A {@code Sequence} is searched for its {@code TemplateProcessing}; other processors
 * ({@code ByteLevel}, null) add nothing. Immutable; any thread.
 *
 * @param prefix ids added before the text
 * @param suffix ids added after the text
 */
record PostTemplate(int[] prefix, int[] suffix) {
    static final PostTemplate NONE = new PostTemplate(new int[0], new int[0]);

    /** The template a {@code post_processor} node describes, resolving special tokens by its own table. */
    static PostTemplate parse(JsonNode node) {
        if (node == null || node.isMissingNode() || node.isNull()) {
            return NONE;
        }
        switch (node.path("type").asText()) {
            case "Sequence" -> {
                for (JsonNode p : node.path("processors")) {
                    PostTemplate t = parse(p);
                    if (t != NONE) {
                        return t;
                    }
                }
                return NONE;
            }
            case "TemplateProcessing" -> {
                List<Integer> before = new ArrayList<>();
                List<Integer> after = new ArrayList<>();
                boolean seenA = false;
                for (JsonNode piece : node.path("single")) {
                    if (piece.has("Sequence")) {
                        seenA = true;
                    } else if (piece.has("SpecialToken")) {
                        String name = piece.get("SpecialToken").path("id").asText();
                        JsonNode ids = node.path("special_tokens").path(name).path("ids");
                        if (!ids.isArray() || ids.isEmpty()) {
                            throw new IllegalArgumentException("post_processor template names special token '" + name
                                    + "', which its special_tokens table does not give ids");
                        }
                        List<Integer> target = seenA ? after : before;
                        ids.forEach(id -> target.add(id.intValue()));
                    } else {
                        throw new IllegalArgumentException("post_processor template piece " + piece + " is neither Sequence nor SpecialToken");
                    }
                }
                return new PostTemplate(before.stream().mapToInt(Integer::intValue).toArray(),
                        after.stream().mapToInt(Integer::intValue).toArray());
            }
            default -> {
                return NONE;
            }
        }
    }
}
