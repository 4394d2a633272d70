package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Splits a model's generated text into the text it says and the tool calls it makes, as it
 * arrives: {@link #feed} takes each new piece of text and returns what is final so far,
 * {@link #finish} returns the rest once the text has ended. {@link #parse} does the same over a
 * whole text, so a stream and a whole answer are split alike.
 *
 * <p>Design note. Two forms of call are recognised:
 * <ul>
 *   <li>Hermes (Qwen, Hermes, many others): {@code <tool_call>} a JSON object
 *       {@code {"name": ..., "arguments": {...}}} {@code </tool_call>}, possibly several, possibly
 *       after some text;</li>
 *   <li>Mistral: {@code [TOOL_CALLS]} followed by a JSON array of such objects, or, in the newer
 *       form, by the function's name, {@code [ARGS]} and the arguments object (one call per
 *       marker).</li>
 * </ul>
 * A call's JSON must be complete and valid, with a string {@code name} and {@code arguments} an
 * object (or a string, kept as it is; absent means {@code {}}); anything else, and a call whose
 * closing tag or array never comes, stays text, exactly as the model wrote it. Text that may be
 * the beginning of a call marker, and whitespace that may come just before one, is held back
 * until what follows decides it; whitespace right before and right after a call is dropped (the
 * template puts newlines around calls; they are not part of what the model says).
 *
 * <p>Threads: one instance per generation, used by one thread at a time.
 */
public final class ToolCallParser {
    /** The Hermes form's opening tag. */
    public static final String HERMES_OPEN = "<tool_call>";
    /** The Hermes form's closing tag. */
    public static final String HERMES_CLOSE = "</tool_call>";
    /** The Mistral form's marker, followed by a JSON array of calls. */
    public static final String MISTRAL_MARKER = "[TOOL_CALLS]";
    /** In the newer Mistral form, what separates a call's function name from its arguments object. */
    public static final String MISTRAL_ARGS = "[ARGS]";
    private static final String[] MARKERS = {HERMES_OPEN, MISTRAL_MARKER};
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One final piece of the output: text the model said, or one call it made. */
    public sealed interface Piece permits Text, Call {
    }

    /** Text outside any call; never empty. */
    public record Text(String text) implements Piece {
    }

    /** One call; its {@link ToolCall#id()} is null (the server names calls). */
    public record Call(ToolCall call) implements Piece {
    }

    /** The whole of a text split: the text outside calls (null when there is none but whitespace) and the calls in order. */
    public record Result(String content, List<ToolCall> calls) {
    }

    private enum State { TEXT, HERMES, MISTRAL }

    private final StringBuilder buffer = new StringBuilder(); // text not yet final, from the start of the current state
    private State state = State.TEXT;
    private String held = ""; // whitespace dropped before the open marker: given back if the call proves not to be one
    private boolean afterCall; // drop the whitespace that follows a call

    /** Splits a whole generated text. */
    public static Result parse(String text) {
        ToolCallParser p = new ToolCallParser();
        List<Piece> pieces = new ArrayList<>(p.feed(text));
        pieces.addAll(p.finish());
        StringBuilder content = new StringBuilder();
        List<ToolCall> calls = new ArrayList<>();
        for (Piece piece : pieces) {
            switch (piece) {
                case Text t -> content.append(t.text());
                case Call c -> calls.add(c.call());
            }
        }
        String c = content.toString();
        return new Result(c.isBlank() ? null : c, List.copyOf(calls));
    }

    /** Takes the next piece of generated text; returns the pieces that became final, in order. */
    public List<Piece> feed(String delta) {
        buffer.append(delta);
        List<Piece> out = new ArrayList<>();
        while (step(out)) {
            // each step consumes a decided part of the buffer
        }
        return out;
    }

    /** The text has ended: returns everything still held (an unfinished call as the text it was). */
    public List<Piece> finish() {
        List<Piece> out = new ArrayList<>();
        String rest = state == State.TEXT ? buffer.toString() : held + buffer;
        if (state == State.TEXT && afterCall) {
            rest = rest.stripLeading();
        }
        if (!rest.isEmpty()) {
            out.add(new Text(rest));
        }
        buffer.setLength(0);
        held = "";
        state = State.TEXT;
        return out;
    }

    /** Decides what it can of the buffer; true when it consumed something and may go on. */
    private boolean step(List<Piece> out) {
        return switch (state) {
            case TEXT -> stepText(out);
            case HERMES -> stepHermes(out);
            case MISTRAL -> stepMistral(out);
        };
    }

    private boolean stepText(List<Piece> out) {
        if (afterCall) {
            int i = 0;
            while (i < buffer.length() && Character.isWhitespace(buffer.charAt(i))) {
                i++;
            }
            buffer.delete(0, i);
            if (buffer.isEmpty()) {
                return false; // whitespace only so far: still after the call
            }
            afterCall = false;
        }
        int at = -1;
        String marker = null;
        for (String m : MARKERS) {
            int i = buffer.indexOf(m);
            if (i >= 0 && (at < 0 || i < at)) {
                at = i;
                marker = m;
            }
        }
        if (at >= 0) {
            String before = buffer.substring(0, at);
            String text = before.stripTrailing();
            if (!text.isEmpty()) {
                out.add(new Text(text));
            }
            held = before.substring(text.length());
            buffer.delete(0, at);
            state = marker.equals(HERMES_OPEN) ? State.HERMES : State.MISTRAL;
            return true;
        }
        // no marker yet: keep back a possible marker's beginning and the whitespace before it
        int keep = buffer.length() - markerPrefixLength(buffer);
        while (keep > 0 && Character.isWhitespace(buffer.charAt(keep - 1))) {
            keep--;
        }
        if (keep > 0) {
            out.add(new Text(buffer.substring(0, keep)));
            buffer.delete(0, keep);
        }
        return false;
    }

    /** The length of the longest end of {@code s} that is a proper beginning of a marker. */
    private static int markerPrefixLength(CharSequence s) {
        int best = 0;
        for (String m : MARKERS) {
            for (int n = Math.min(m.length() - 1, s.length()); n > best; n--) {
                if (s.subSequence(s.length() - n, s.length()).toString().equals(m.substring(0, n))) {
                    best = n;
                    break;
                }
            }
        }
        return best;
    }

    private boolean stepHermes(List<Piece> out) {
        int close = buffer.indexOf(HERMES_CLOSE, HERMES_OPEN.length());
        if (close < 0) {
            return false;
        }
        int end = close + HERMES_CLOSE.length();
        ToolCall call = call(buffer.substring(HERMES_OPEN.length(), close));
        if (call != null) {
            out.add(new Call(call));
        } else {
            out.add(new Text(held + buffer.substring(0, end)));
        }
        buffer.delete(0, end);
        held = "";
        state = State.TEXT;
        afterCall = call != null;
        return true;
    }

    private boolean stepMistral(List<Piece> out) {
        int i = MISTRAL_MARKER.length();
        while (i < buffer.length() && Character.isWhitespace(buffer.charAt(i))) {
            i++;
        }
        if (i == buffer.length()) {
            return false;
        }
        if (buffer.charAt(i) != '[') {
            return stepMistralNamed(out, i);
        }
        int end = arrayEnd(buffer, i);
        if (end < 0) {
            return false;
        }
        List<ToolCall> calls = calls(buffer.substring(i, end));
        if (calls == null) {
            return notACall(out, end);
        }
        calls.forEach(c -> out.add(new Call(c)));
        buffer.delete(0, end);
        held = "";
        state = State.TEXT;
        afterCall = true;
        return true;
    }

    /** The newer Mistral form: {@code [TOOL_CALLS]name[ARGS]{...}}, the name starting at {@code i}. */
    private boolean stepMistralNamed(List<Piece> out, int i) {
        int n = i;
        while (n < buffer.length() && isNameChar(buffer.charAt(n))) {
            n++;
        }
        if (n == buffer.length()) {
            return false; // the name may go on
        }
        if (n == i) {
            return notACall(out, i); // neither an array nor a name
        }
        String rest = buffer.substring(n, Math.min(buffer.length(), n + MISTRAL_ARGS.length()));
        if (!rest.equals(MISTRAL_ARGS)) {
            return MISTRAL_ARGS.startsWith(rest) ? false : notACall(out, n); // [ARGS] may still be arriving
        }
        int a = n + MISTRAL_ARGS.length();
        while (a < buffer.length() && Character.isWhitespace(buffer.charAt(a))) {
            a++;
        }
        if (a == buffer.length()) {
            return false;
        }
        if (buffer.charAt(a) != '{') {
            return notACall(out, a);
        }
        int end = arrayEnd(buffer, a); // balances braces as it does brackets
        if (end < 0) {
            return false;
        }
        JsonNode args = readJson(buffer.substring(a, end));
        if (args == null || !args.isObject()) {
            return notACall(out, end);
        }
        out.add(new Call(new ToolCall(null, buffer.substring(i, n), args)));
        buffer.delete(0, end);
        held = "";
        state = State.TEXT;
        afterCall = true;
        return true;
    }

    private static boolean isNameChar(char c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.';
    }

    /** The buffer up to {@code end} is text after all: gives it out with the whitespace held before it. */
    private boolean notACall(List<Piece> out, int end) {
        out.add(new Text(held + buffer.substring(0, end)));
        buffer.delete(0, end);
        held = "";
        state = State.TEXT;
        return true;
    }

    /** The index just past the JSON array that opens at {@code start}, or -1 while it is not closed. */
    private static int arrayEnd(CharSequence s, int start) {
        int depth = 0;
        boolean inString = false;
        for (int i = start; i < s.length(); i++) {
            char c = s.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '[' || c == '{') {
                depth++;
            } else if (c == ']' || c == '}') {
                depth--;
                if (depth == 0) {
                    return i + 1;
                }
            }
        }
        return -1;
    }

    /** The calls of a Mistral array, or null when it is not a JSON array of valid calls. */
    private static List<ToolCall> calls(String json) {
        JsonNode array = readJson(json);
        if (array == null || !array.isArray() || array.isEmpty()) {
            return null;
        }
        List<ToolCall> calls = new ArrayList<>();
        for (JsonNode o : array) {
            ToolCall c = call(o);
            if (c == null) {
                return null;
            }
            calls.add(c);
        }
        return calls;
    }

    /** The call a Hermes body names, or null when it is not a valid call object. */
    private static ToolCall call(String json) {
        return call(readJson(json));
    }

    private static ToolCall call(JsonNode o) {
        if (o == null || !o.isObject() || !o.path("name").isTextual() || o.get("name").asText().isEmpty()) {
            return null;
        }
        JsonNode args = o.get("arguments");
        if (args == null || args.isNull()) {
            args = JSON.createObjectNode();
        } else if (!args.isObject() && !args.isTextual()) {
            return null;
        }
        return new ToolCall(null, o.get("name").asText(), args);
    }

    /** The one JSON value {@code text} holds, or null when it holds anything else. */
    private static JsonNode readJson(String text) {
        try (var parser = JSON.createParser(text)) {
            JsonNode node = JSON.readTree(parser);
            if (node == null || node.isMissingNode() || parser.nextToken() != null) {
                return null; // empty, or something after the value
            }
            return node;
        } catch (IOException e) { // not JSON, or not one whole value
            return null;
        }
    }
}
