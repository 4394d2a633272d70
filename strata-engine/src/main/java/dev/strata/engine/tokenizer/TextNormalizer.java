package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The {@code normalizer} of a SentencePiece-style {@code tokenizer.json}, applied to each stretch
 * of text between added tokens before pre-tokenization: a {@code Sequence} of {@code Prepend}
 * (prefix a non-empty text), {@code Replace} (a literal string or a regex, every occurrence) and
 * the Unicode forms {@code NFC}, {@code NFD}, {@code NFKC}, {@code NFKD}, in file order, as the
 * Hugging Face normalizers do. Llama 2, Mistral v0.1 and Mixtral 8x7B ship
 * {@code Sequence[Prepend("▁"), Replace(" ", "▁")]}. Immutable; any thread.
 */
final class TextNormalizer {
    private final List<UnaryOperator<String>> steps;

    private TextNormalizer(List<UnaryOperator<String>> steps) {
        this.steps = List.copyOf(steps);
    }

    /** The normalizer a JSON node describes (null or missing: none); fails naming an unsupported step. */
    static TextNormalizer parse(JsonNode node) {
        List<UnaryOperator<String>> steps = new ArrayList<>();
        add(node, steps);
        return new TextNormalizer(steps);
    }

    private static void add(JsonNode n, List<UnaryOperator<String>> steps) {
        if (n == null || n.isMissingNode() || n.isNull()) {
            return;
        }
        String type = n.path("type").asText();
        switch (type) {
            case "Sequence" -> n.path("normalizers").forEach(s -> add(s, steps));
            case "Prepend" -> {
                String prefix = text(n, "prepend");
                steps.add(s -> s.isEmpty() ? s : prefix + s);
            }
            case "Replace" -> {
                Pattern p = pattern(n.path("pattern"), "normalizer Replace");
                String content = text(n, "content");
                steps.add(s -> p.matcher(s).replaceAll(Matcher.quoteReplacement(content)));
            }
            case "NFC" -> steps.add(s -> Normalizer.normalize(s, Normalizer.Form.NFC));
            case "NFD" -> steps.add(s -> Normalizer.normalize(s, Normalizer.Form.NFD));
            case "NFKC" -> steps.add(s -> Normalizer.normalize(s, Normalizer.Form.NFKC));
            case "NFKD" -> steps.add(s -> Normalizer.normalize(s, Normalizer.Form.NFKD));
            default -> throw new IllegalArgumentException("normalizer " + n + " is not supported "
                    + "(Sequence of Prepend, Replace, NFC, NFD, NFKC, NFKD)");
        }
    }

    /** A {@code {"String": s}} or {@code {"Regex": r}} pattern, compiled; {@code what} names the step in errors. */
    static Pattern pattern(JsonNode p, String what) {
        if (p.path("String").isTextual()) {
            return Pattern.compile(Pattern.quote(p.get("String").asText()));
        }
        if (p.path("Regex").isTextual()) {
            try {
                return Pattern.compile(p.get("Regex").asText(), Pattern.UNICODE_CHARACTER_CLASS);
            } catch (PatternSyntaxException e) {
                throw new IllegalArgumentException(what + " regex " + p.get("Regex") + " does not compile: " + e.getDescription(), e);
            }
        }
        throw new IllegalArgumentException(what + " pattern " + p + " is neither {\"String\": ...} nor {\"Regex\": ...}");
    }

    /** The text field {@code name} of {@code n}; fails naming the node when it is missing. */
    static String text(JsonNode n, String name) {
        if (!n.path(name).isTextual()) {
            throw new IllegalArgumentException(n.path("type").asText() + " " + n + " needs a text '" + name + "'");
        }
        return n.get(name).asText();
    }

    /** Whether no step is configured. */
    boolean isIdentity() {
        return steps.isEmpty();
    }

    /** Applies every step in order. */
    String apply(String text) {
        String s = text;
        for (UnaryOperator<String> step : steps) {
            s = step.apply(s);
        }
        return s;
    }
}
