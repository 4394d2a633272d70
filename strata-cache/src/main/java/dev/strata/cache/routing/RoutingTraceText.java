package dev.strata.cache.routing;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The JSON-lines text form of a routing trace, for small traces written by hand. One JSON object
 * per line; blank lines and lines starting with {@code #} are ignored.
 *
 * <pre>
 * {"layers": 2, "experts": 8, "top_k": 2, "model": "tiny-moe"}     the header, first
 * {"request": {"session": 1, "request": 1}}                        a request starts
 * {"burst": true}                                                  a burst starts
 * {"step": [[[0, 3], [5, 1]], [[2, 3], [5, 7]]], "phase": "decode"}
 * </pre>
 *
 * A step lists its tokens, each token its layers, each layer its top-k ids ({@code [token][layer][slot]},
 * the order one writes by hand; {@link RoutingStep} stores them layer-major). {@code phase} is
 * optional ({@code prefill}, {@code decode}, {@code unknown}). Errors name the file, the line and
 * the value. Stateless; any thread.
 */
public final class RoutingTraceText {
    private static final ObjectMapper JSON = new ObjectMapper();

    private RoutingTraceText() {
    }

    /** A header and the records after it. */
    public record Trace(RoutingTraceHeader header, List<RoutingRecord> records) {
        public Trace {
            records = List.copyOf(records);
        }
    }

    /**
     * Reads a whole text trace.
     *
     * @throws RoutingTraceException naming the file, line and value of the first bad line
     */
    public static Trace read(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new RoutingTraceException(file, -1, -1, "no such file");
        } catch (IOException e) {
            throw new RoutingTraceException(file, -1, -1, "cannot read: " + e.getMessage(), e);
        }
        return parse(file, lines);
    }

    /** Parses the lines of a text trace; {@code file} only names the source in errors (may be null). */
    public static Trace parse(Path file, List<String> lines) {
        RoutingTraceHeader header = null;
        List<RoutingRecord> records = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            long lineNo = i + 1;
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            JsonNode node;
            try {
                node = JSON.readTree(line);
            } catch (JsonProcessingException e) {
                throw new RoutingTraceException(file, lineNo, records.size(), "not JSON: " + e.getOriginalMessage());
            }
            if (!(node instanceof ObjectNode o)) {
                throw new RoutingTraceException(file, lineNo, records.size(), "expected a JSON object, got " + line);
            }
            if (header == null) {
                header = header(file, lineNo, o);
                continue;
            }
            long recordNo = records.size();
            if (o.has("step")) {
                records.add(step(file, lineNo, recordNo, header, o));
            } else if (o.has("request")) {
                JsonNode r = o.get("request");
                if (!r.path("session").canConvertToLong() || !r.path("request").canConvertToLong()) {
                    throw new RoutingTraceException(file, lineNo, recordNo,
                            "a request needs integer 'session' and 'request', got " + r);
                }
                records.add(new RequestStart(r.get("session").asLong(), r.get("request").asLong()));
            } else if (o.has("burst")) {
                records.add(BurstStart.INSTANCE);
            } else {
                throw new RoutingTraceException(file, lineNo, recordNo,
                        "expected one of 'step', 'request', 'burst', got keys " + fieldNames(o));
            }
        }
        if (header == null) {
            throw new RoutingTraceException(file, -1, -1, "no header line (e.g. {\"layers\": 2, \"experts\": 8, \"top_k\": 2})");
        }
        return new Trace(header, records);
    }

    /** Writes {@code trace} in the text form. */
    public static void write(Writer out, RoutingTraceHeader header, Iterable<? extends RoutingRecord> records) {
        try {
            ObjectNode h = JSON.createObjectNode();
            h.put("layers", header.layers()).put("experts", header.experts()).put("top_k", header.topK())
                    .put("model", header.model());
            out.write(JSON.writeValueAsString(h));
            out.write('\n');
            for (RoutingRecord r : records) {
                ObjectNode o = JSON.createObjectNode();
                switch (r) {
                    case RequestStart q -> o.putObject("request").put("session", q.session()).put("request", q.request());
                    case BurstStart b -> o.put("burst", true);
                    case RoutingStep s -> {
                        ArrayNode tokens = o.putArray("step");
                        for (int t = 0; t < s.tokens(); t++) {
                            ArrayNode layers = tokens.addArray();
                            for (int l = 0; l < s.layers(); l++) {
                                ArrayNode ids = layers.addArray();
                                for (int k = 0; k < s.topK(); k++) {
                                    ids.add(s.expert(l, t, k));
                                }
                            }
                        }
                        o.put("phase", s.phase().name().toLowerCase(Locale.ROOT));
                    }
                }
                out.write(JSON.writeValueAsString(o));
                out.write('\n');
            }
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write text routing trace: " + e.getMessage(), e);
        }
    }

    private static RoutingTraceHeader header(Path file, long line, ObjectNode o) {
        for (String key : List.of("layers", "experts", "top_k")) {
            if (!o.path(key).canConvertToInt()) {
                throw new RoutingTraceException(file, line, -1, "the header needs an integer '" + key + "', got "
                        + (o.has(key) ? o.get(key).toString() : "none") + " in " + o);
            }
        }
        try {
            return new RoutingTraceHeader(o.get("layers").asInt(), o.get("experts").asInt(), o.get("top_k").asInt(),
                    o.path("model").asText(""));
        } catch (IllegalArgumentException e) {
            throw new RoutingTraceException(file, line, -1, "bad header: " + e.getMessage());
        }
    }

    private static RoutingStep step(Path file, long line, long record, RoutingTraceHeader h, ObjectNode o) {
        JsonNode tokens = o.get("step");
        if (!tokens.isArray() || tokens.isEmpty()) {
            throw new RoutingTraceException(file, line, record, "'step' must be a non-empty array of tokens, got " + tokens);
        }
        int n = tokens.size();
        int k = h.topK();
        int[] ids = new int[h.layers() * n * k];
        for (int t = 0; t < n; t++) {
            JsonNode layers = tokens.get(t);
            if (!layers.isArray() || layers.size() != h.layers()) {
                throw new RoutingTraceException(file, line, record, "token " + t + " must list " + h.layers()
                        + " layers, got " + layers);
            }
            for (int l = 0; l < h.layers(); l++) {
                JsonNode top = layers.get(l);
                if (!top.isArray() || top.size() != k) {
                    throw new RoutingTraceException(file, line, record, "token " + t + ", layer " + l + " must list top-" + k
                            + " expert ids, got " + top + (top.isArray() ? " (" + top.size() + " ids)" : ""));
                }
                for (int s = 0; s < k; s++) {
                    JsonNode id = top.get(s);
                    if (!id.canConvertToInt()) {
                        throw new RoutingTraceException(file, line, record, "token " + t + ", layer " + l
                                + ": expert id must be an integer, got " + id);
                    }
                    ids[(l * n + t) * k + s] = id.asInt();
                }
            }
        }
        String bad = RoutingStep.check(h, n, ids);
        if (bad != null) {
            throw new RoutingTraceException(file, line, record, bad);
        }
        RoutingPhase phase;
        String p = o.path("phase").asText("unknown");
        try {
            phase = RoutingPhase.valueOf(p.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new RoutingTraceException(file, line, record, "unknown phase '" + p + "' (expected prefill, decode or unknown)");
        }
        return RoutingStep.adopt(h, phase, n, ids);
    }

    private static List<String> fieldNames(ObjectNode o) {
        List<String> names = new ArrayList<>();
        o.fieldNames().forEachRemaining(names::add);
        return names;
    }

    /** Reads a text trace from {@code in} (closing nothing). */
    public static Trace read(BufferedReader in) {
        try {
            return parse(null, in.lines().toList());
        } catch (UncheckedIOException e) {
            throw new RoutingTraceException(null, -1, -1, "cannot read: " + e.getMessage(), e);
        }
    }
}
