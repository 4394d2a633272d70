package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code decoder} of a SentencePiece-style {@code tokenizer.json}: a chain of steps, each
 * turning the list of token strings into a new list, whose final list is concatenated. Steps, as
 * the Hugging Face decoders define them:
 * <ul>
 * <li>{@code Replace}: a literal or regex pattern replaced in every token ("▁" by " ");</li>
 * <li>{@code ByteFallback}: each run of consecutive {@code <0xNN>} tokens becomes its bytes decoded
 *     as UTF-8 when the run is well-formed, else one U+FFFD per byte of the run;</li>
 * <li>{@code Fuse}: all tokens joined into one;</li>
 * <li>{@code Strip}: up to {@code start} leading and {@code stop} trailing {@code content}
 *     characters cut from every token;</li>
 * <li>{@code Metaspace}: in every token the replacement character becomes a space, except that in
 *     the first token it is dropped unless the prepend scheme is {@code never}.</li>
 * </ul>
 * Without a decoder the tokens are joined with single spaces. Immutable; any thread.
 */
final class TokenDecoder {
    private final List<UnaryOperator<List<String>>> steps; // empty with joinWithSpaces: no decoder
    private final boolean joinWithSpaces;

    private TokenDecoder(List<UnaryOperator<List<String>>> steps, boolean joinWithSpaces) {
        this.steps = List.copyOf(steps);
        this.joinWithSpaces = joinWithSpaces;
    }

    /** The decoder a JSON node describes (null or missing: tokens joined with spaces); fails naming an unsupported step. */
    static TokenDecoder parse(JsonNode node) {
        if (node == null || node.isMissingNode() || node.isNull()) {
            return new TokenDecoder(List.of(), true);
        }
        List<UnaryOperator<List<String>>> steps = new ArrayList<>();
        add(node, steps);
        return new TokenDecoder(steps, false);
    }

    private static void add(JsonNode n, List<UnaryOperator<List<String>>> steps) {
        switch (n.path("type").asText()) {
            case "Sequence" -> n.path("decoders").forEach(s -> add(s, steps));
            case "Replace" -> {
                Pattern p = TextNormalizer.pattern(n.path("pattern"), "decoder Replace");
                String content = Matcher.quoteReplacement(TextNormalizer.text(n, "content"));
                steps.add(tokens -> tokens.stream().map(t -> p.matcher(t).replaceAll(content)).toList());
            }
            case "ByteFallback" -> steps.add(TokenDecoder::byteFallback);
            case "Fuse" -> steps.add(tokens -> List.of(String.join("", tokens)));
            case "Strip" -> {
                String content = TextNormalizer.text(n, "content");
                if (content.length() != 1) {
                    throw new IllegalArgumentException("decoder Strip content " + n.get("content") + " is not one character");
                }
                int start = n.path("start").asInt(0);
                int stop = n.path("stop").asInt(0);
                steps.add(tokens -> tokens.stream().map(t -> strip(t, content.charAt(0), start, stop)).toList());
            }
            case "Metaspace" -> {
                Metaspace m = Metaspace.parse(n);
                steps.add(tokens -> {
                    List<String> out = new ArrayList<>(tokens.size());
                    for (int i = 0; i < tokens.size(); i++) {
                        out.add(m.decode(tokens.get(i), i));
                    }
                    return out;
                });
            }
            default -> throw new IllegalArgumentException("decoder " + n + " is not supported "
                    + "(Sequence of Replace, ByteFallback, Fuse, Strip, Metaspace)");
        }
    }

    /** The text of the token strings. */
    String decode(List<String> tokens) {
        if (joinWithSpaces) {
            return String.join(" ", tokens);
        }
        List<String> t = tokens;
        for (UnaryOperator<List<String>> step : steps) {
            t = step.apply(t);
        }
        return String.join("", t);
    }

    /** The byte a {@code <0xNN>} token stands for, or -1. */
    static int byteOf(String token) {
        if (token.length() != 6 || !token.startsWith("<0x") || token.charAt(5) != '>') {
            return -1;
        }
        int hi = Character.digit(token.charAt(3), 16);
        int lo = Character.digit(token.charAt(4), 16);
        return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
    }

    private static List<String> byteFallback(List<String> tokens) {
        List<String> out = new ArrayList<>(tokens.size());
        ByteArrayOutputStream run = new ByteArrayOutputStream();
        for (String t : tokens) {
            int b = byteOf(t);
            if (b >= 0) {
                run.write(b);
                continue;
            }
            flush(run, out);
            out.add(t);
        }
        flush(run, out);
        return out;
    }

    private static void flush(ByteArrayOutputStream run, List<String> out) {
        if (run.size() == 0) {
            return;
        }
        byte[] bytes = run.toByteArray();
        run.reset();
        try {
            out.add(StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString());
        } catch (CharacterCodingException e) {
            for (int i = 0; i < bytes.length; i++) {
                out.add("\uFFFD");
            }
        }
    }

    private static String strip(String t, char c, int start, int stop) {
        int from = 0;
        while (from < start && from < t.length() && t.charAt(from) == c) {
            from++;
        }
        int to = t.length();
        while (t.length() - to < stop && to > from && t.charAt(to - 1) == c) {
            to--;
        }
        return t.substring(from, to);
    }
}
