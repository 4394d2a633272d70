package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code Metaspace} pre-tokenizer of SentencePiece-style files (Mistral v0.3, Mixtral 8x22B):
 * every space becomes the replacement character (U+2581 "▁"); the replacement is put in front of
 * a stretch that does not start with it for {@code prepend_scheme} {@code always}, only for the
 * stretch at the very start of the text for {@code first}, never for {@code never}; with
 * {@code split} the stretch is cut before each replacement character (the character begins the
 * next piece), without it the stretch is one piece. Matches the Hugging Face pre-tokenizer.
 * Immutable; any thread.
 *
 * @param replacement   the character standing for a space
 * @param prependScheme when to prefix the replacement
 * @param split         whether to cut before each replacement character
 */
record Metaspace(char replacement, PrependScheme prependScheme, boolean split) {

    /** When the replacement character is put in front of a stretch of text. */
    enum PrependScheme {
        ALWAYS, FIRST, NEVER;

        static PrependScheme of(JsonNode n) {
            if (n.has("prepend_scheme")) {
                return switch (n.get("prepend_scheme").asText()) {
                    case "always" -> ALWAYS;
                    case "first" -> FIRST;
                    case "never" -> NEVER;
                    default -> throw new IllegalArgumentException("Metaspace prepend_scheme " + n.get("prepend_scheme")
                            + " is not always, first or never");
                };
            }
            return n.path("add_prefix_space").asBoolean(true) ? ALWAYS : NEVER; // the older spelling
        }
    }

    /** The Metaspace a pre-tokenizer or decoder node describes. */
    static Metaspace parse(JsonNode n) {
        String r = n.path("replacement").asText("▁");
        if (r.length() != 1) {
            throw new IllegalArgumentException("Metaspace replacement " + n.get("replacement") + " is not one character");
        }
        return new Metaspace(r.charAt(0), PrependScheme.of(n), n.path("split").asBoolean(true));
    }

    /** The pieces of one stretch of text; {@code atTextStart} when the stretch begins the whole text. */
    List<String> split(String stretch, boolean atTextStart) {
        String s = stretch.replace(' ', replacement);
        boolean prepend = switch (prependScheme) {
            case ALWAYS -> true;
            case FIRST -> atTextStart;
            case NEVER -> false;
        };
        if (prepend && !s.isEmpty() && s.charAt(0) != replacement) {
            s = replacement + s;
        }
        List<String> out = new ArrayList<>();
        if (s.isEmpty()) {
            return out;
        }
        if (!split) {
            out.add(s);
            return out;
        }
        int start = 0;
        for (int i = 1; i < s.length(); i++) {
            if (s.charAt(i) == replacement) {
                out.add(s.substring(start, i));
                start = i;
            }
        }
        out.add(s.substring(start));
        return out;
    }

    /** Decoder form: in token {@code index} each replacement becomes a space, or nothing in the first token unless {@code never}. */
    String decode(String token, int index) {
        StringBuilder b = new StringBuilder(token.length());
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c == replacement) {
                if (!(index == 0 && prependScheme != PrependScheme.NEVER)) {
                    b.append(' ');
                }
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}
