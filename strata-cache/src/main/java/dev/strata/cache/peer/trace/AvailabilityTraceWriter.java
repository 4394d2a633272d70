package dev.strata.cache.peer.trace;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Writes a peer availability trace in the JSON-lines form {@link AvailabilityTraceReader} reads:
 * {@code {"t": 1.5, "peer": "gpu0", "free": 68719476736}} per line. Times are written so that they
 * read back to the same {@code double}.
 *
 * <p>Samples must come sorted by {@code t} (equal times allowed); an earlier one is refused with an
 * {@link IllegalArgumentException} naming both times, before anything of it is written.
 *
 * <p>Threads: one thread at a time.
 */
public final class AvailabilityTraceWriter implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Writer out;
    private final String target; // names the destination in errors
    private final Map<String, String> quoted = new HashMap<>(); // peer name -> its JSON string literal
    private double lastT = Double.NEGATIVE_INFINITY; // seconds
    private long samples;

    private AvailabilityTraceWriter(Writer out, String target) {
        this.out = out;
        this.target = target;
    }

    /** Creates (or truncates) {@code file}. */
    public static AvailabilityTraceWriter create(Path file) {
        try {
            return new AvailabilityTraceWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8), file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create availability trace " + file + ": " + e.getMessage(), e);
        }
    }

    /** Writes to {@code out}, which the writer closes on {@link #close}; {@code target} names it in errors. */
    public static AvailabilityTraceWriter of(Writer out, String target) {
        return new AvailabilityTraceWriter(out instanceof BufferedWriter ? out : new BufferedWriter(out, 1 << 16), target);
    }

    /**
     * Appends one sample.
     *
     * @throws IllegalArgumentException when {@code sample.t()} is earlier than the previous sample's
     */
    public void write(AvailabilitySample sample) {
        if (sample.t() < lastT) {
            throw new IllegalArgumentException("availability trace " + target + ": sample at t " + sample.t()
                    + " for peer '" + sample.peer() + "' is earlier than the previous sample's t " + lastT
                    + " (samples must be written sorted by t)");
        }
        String peer = quoted.computeIfAbsent(sample.peer(), AvailabilityTraceWriter::quote);
        try {
            out.write("{\"t\": ");
            out.write(Double.toString(sample.t()));
            out.write(", \"peer\": ");
            out.write(peer);
            out.write(", \"free\": ");
            out.write(Long.toString(sample.free()));
            out.write("}\n");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write availability trace " + target + ": " + e.getMessage(), e);
        }
        lastT = sample.t();
        samples++;
    }

    /** Samples written so far. */
    public long samples() {
        return samples;
    }

    private static String quote(String name) {
        try {
            return JSON.writeValueAsString(name);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("peer name cannot be written as JSON: " + name, e);
        }
    }

    /** Flushes and closes the destination. */
    @Override
    public void close() {
        try {
            out.close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot close availability trace " + target + ": " + e.getMessage(), e);
        }
    }
}
