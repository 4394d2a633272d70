package dev.strata.cache.peer.trace;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Reads a peer availability trace one sample at a time, without holding the file in memory.
 *
 * <p>Format: JSON lines, one sample per line, sorted by {@code t} (equal times allowed):
 * <pre>
 * {"t": 0.0, "peer": "gpu0", "free": 68719476736}
 * {"t": 0.0, "peer": "gpu1", "free": 41943040000}
 * {"t": 1.0, "peer": "gpu0", "free": 68652367872}
 * </pre>
 * {@code t} is seconds from the start of the trace (a JSON number, {@code >= 0}); {@code peer} a
 * non-blank string; {@code free} the peer's lendable bytes from {@code t} on (a JSON integer,
 * {@code >= 0}). Blank lines and lines starting with {@code #} are skipped; other fields are ignored,
 * so later versions may add some. Every problem is an {@link AvailabilityTraceException} naming the
 * source, the line, the field and the value; the samples before it were delivered and stay valid.
 *
 * <p>Threads: one thread at a time (a reader keeps its position and the previous line's time).
 */
public final class AvailabilityTraceReader implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final BufferedReader in;
    private final String source; // names the trace in errors
    private long line; // 1-based number of the last line read
    private double lastT = Double.NEGATIVE_INFINITY; // t of the last sample delivered, seconds
    private long lastLine = -1; // the line that sample came from
    private long samples; // samples delivered so far

    private AvailabilityTraceReader(Reader in, String source) {
        this.in = in instanceof BufferedReader b ? b : new BufferedReader(in, 1 << 16);
        this.source = source;
    }

    /**
     * Opens {@code file} for reading.
     *
     * @throws AvailabilityTraceException when the file does not exist
     * @throws UncheckedIOException       when it cannot be opened
     */
    public static AvailabilityTraceReader open(Path file) {
        try {
            return new AvailabilityTraceReader(Files.newBufferedReader(file, StandardCharsets.UTF_8), file.toString());
        } catch (NoSuchFileException e) {
            throw new AvailabilityTraceException(file.toString(), -1, null, null, "no such file");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open availability trace " + file + ": " + e.getMessage(), e);
        }
    }

    /** Reads a trace from {@code in}; {@code source} names it in errors (e.g. {@code (stream)}). */
    public static AvailabilityTraceReader of(Reader in, String source) {
        return new AvailabilityTraceReader(in, source);
    }

    /**
     * The next sample, or null at the end of the trace.
     *
     * @throws AvailabilityTraceException naming line, field and value of a bad line
     * @throws UncheckedIOException       when the source cannot be read
     */
    public AvailabilitySample next() {
        while (true) {
            String text;
            try {
                text = in.readLine();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read availability trace " + source + " after line " + line + ": "
                        + e.getMessage(), e);
            }
            if (text == null) {
                return null;
            }
            line++;
            String s = text.strip();
            if (s.isEmpty() || s.startsWith("#")) {
                continue;
            }
            AvailabilitySample sample = parse(s);
            lastT = sample.t();
            lastLine = line;
            samples++;
            return sample;
        }
    }

    /** 1-based number of the last line read (0 before the first). */
    public long line() {
        return line;
    }

    /** Samples delivered so far. */
    public long samples() {
        return samples;
    }

    /** The name this reader gives its source in errors. */
    public String source() {
        return source;
    }

    private AvailabilitySample parse(String s) {
        JsonNode node;
        try {
            node = JSON.readTree(s);
        } catch (JsonProcessingException e) {
            throw new AvailabilityTraceException(source, line, null, null, "not JSON (" + e.getOriginalMessage() + "): "
                    + abbreviate(s));
        }
        if (!(node instanceof ObjectNode o)) {
            throw new AvailabilityTraceException(source, line, null, null, "expected a JSON object like "
                    + "{\"t\": 0.0, \"peer\": \"gpu0\", \"free\": 1024}, got " + abbreviate(s));
        }
        JsonNode t = o.get("t");
        if (t == null || t.isNull()) {
            throw new AvailabilityTraceException(source, line, "t", null, "every sample needs a time in seconds");
        }
        if (!t.isNumber()) {
            throw new AvailabilityTraceException(source, line, "t", t.toString(), "must be a number of seconds");
        }
        double time = t.asDouble();
        if (!Double.isFinite(time) || time < 0) {
            throw new AvailabilityTraceException(source, line, "t", t.toString(), "must be finite and >= 0 seconds");
        }
        if (time < lastT) {
            throw new AvailabilityTraceException(source, line, "t", t.toString(), "earlier than " + lastT + " on line " + lastLine
                    + " (samples must be sorted by t)");
        }
        JsonNode p = o.get("peer");
        if (p == null || p.isNull()) {
            throw new AvailabilityTraceException(source, line, "peer", null, "every sample names its peer");
        }
        if (!p.isTextual() || p.asText().isBlank()) {
            throw new AvailabilityTraceException(source, line, "peer", p.toString(), "must be a non-blank string");
        }
        JsonNode f = o.get("free");
        if (f == null || f.isNull()) {
            throw new AvailabilityTraceException(source, line, "free", null, "every sample gives the peer's free bytes");
        }
        if (!f.isIntegralNumber()) {
            throw new AvailabilityTraceException(source, line, "free", f.toString(), "must be a whole number of bytes");
        }
        if (!f.canConvertToLong()) {
            throw new AvailabilityTraceException(source, line, "free", f.toString(), "does not fit in a long");
        }
        long free = f.asLong();
        if (free < 0) {
            throw new AvailabilityTraceException(source, line, "free", f.toString(), "must be >= 0 bytes");
        }
        return new AvailabilitySample(time, p.asText(), free);
    }

    private static String abbreviate(String s) {
        return s.length() <= 120 ? s : s.substring(0, 117) + "...";
    }

    @Override
    public void close() {
        try {
            in.close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot close availability trace " + source + ": " + e.getMessage(), e);
        }
    }
}
