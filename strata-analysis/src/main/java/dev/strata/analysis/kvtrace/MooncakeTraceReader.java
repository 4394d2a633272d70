package dev.strata.analysis.kvtrace;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * Streams a request trace in the Mooncake format, one JSON object per line:
 * <pre>{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}</pre>
 * {@code timestamp} in milliseconds from the start, token counts, and one id per block of
 * {@code blockTokens} tokens of the prompt (the last block may be partial). Blank lines are
 * skipped; other fields are ignored. The file is read a line at a time, so traces of any length
 * can be replayed.
 *
 * <p>Every line is checked; the first bad one ends the read with a {@link TraceFormatException}
 * naming the file, the line and the problem: bad JSON, not an object, a missing or non-integer
 * field, a negative length, a number of ids that does not match {@code input_length} at the block
 * size, or a timestamp before the previous line's.
 *
 * <p>Threads: one reader per thread. Close it (or use {@link #forEach}) to release the file.
 */
public final class MooncakeTraceReader implements Closeable {
    /** Tokens per block of the Mooncake trace's {@code hash_ids}. */
    public static final int MOONCAKE_BLOCK_TOKENS = 512;
    /** The Mooncake trace shipped with Strata (see its README), relative to the repository root. */
    public static final Path SHIPPED_TRACE = Path.of("traces", "mooncake", "synthetic_trace.jsonl");
    /** The Mooncake conversation trace shipped with Strata (see its README), relative to the repository root. */
    public static final Path SHIPPED_CONVERSATION_TRACE = Path.of("traces", "mooncake", "conversation_trace.jsonl");

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path file;
    private final int blockTokens; // tokens per block, > 0
    private final BufferedReader in;
    private long lineNumber; // lines read so far
    private long previousTimestamp = Long.MIN_VALUE; // ms, of the last request returned

    /**
     * Opens {@code file}.
     *
     * @throws TraceFormatException if the file does not exist or is not a regular file
     * @throws UncheckedIOException on another I/O failure
     */
    public MooncakeTraceReader(Path file, int blockTokens) {
        if (blockTokens <= 0) {
            throw new IllegalArgumentException("block size must be positive, got " + blockTokens + " tokens");
        }
        this.file = file;
        this.blockTokens = blockTokens;
        try {
            if (Files.isDirectory(file)) {
                throw new TraceFormatException(file, 0, "is a directory, not a trace file");
            }
            this.in = Files.newBufferedReader(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new TraceFormatException(file, 0, "no such trace file");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open trace " + file + ": " + e.getMessage(), e);
        }
    }

    /** Reads every request of {@code file} in order, handing each to {@code sink}. */
    public static void forEach(Path file, int blockTokens, Consumer<TraceRequest> sink) {
        try (MooncakeTraceReader r = new MooncakeTraceReader(file, blockTokens)) {
            for (TraceRequest q = r.next(); q != null; q = r.next()) {
                sink.accept(q);
            }
        }
    }

    /** The line number of the last request returned (1-based), or 0 before the first. */
    public long lineNumber() {
        return lineNumber;
    }

    /**
     * The next request, or null at the end of the file.
     *
     * @throws TraceFormatException on a malformed line
     */
    public TraceRequest next() {
        String line;
        try {
            do {
                line = in.readLine();
                if (line == null) {
                    return null;
                }
                lineNumber++;
            } while (line.isBlank());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + file + " after line " + lineNumber + ": " + e.getMessage(), e);
        }
        return parse(line);
    }

    private TraceRequest parse(String line) {
        JsonNode o;
        try {
            o = JSON.readTree(line);
        } catch (JsonProcessingException e) {
            String m = e.getOriginalMessage();
            throw fail("bad JSON: " + (m == null ? e.getClass().getSimpleName() : m.lines().findFirst().orElse(m)));
        }
        if (o == null || !o.isObject()) {
            throw fail("expected a JSON object, found " + (o == null ? "nothing" : o.getNodeType().toString().toLowerCase()));
        }
        long timestamp = whole(o, "timestamp");
        long input = whole(o, "input_length");
        long output = whole(o, "output_length");
        if (timestamp < 0) {
            throw fail("timestamp " + timestamp + " is negative");
        }
        if (input < 0) {
            throw fail("input_length " + input + " is negative");
        }
        if (output < 0) {
            throw fail("output_length " + output + " is negative");
        }
        if (input > Integer.MAX_VALUE || output > Integer.MAX_VALUE) {
            throw fail("token count too large: input_length " + input + ", output_length " + output);
        }
        JsonNode ids = o.get("hash_ids");
        if (ids == null) {
            throw fail("missing field 'hash_ids'");
        }
        if (!ids.isArray()) {
            throw fail("hash_ids must be an array of integers, found " + ids.getNodeType().toString().toLowerCase());
        }
        int expected = TraceRequest.blocksFor((int) input, blockTokens);
        if (ids.size() != expected) {
            throw fail("hash_ids has " + ids.size() + " ids but input_length " + input + " spans " + expected
                    + " blocks of " + blockTokens + " tokens");
        }
        long[] hashIds = new long[ids.size()];
        for (int i = 0; i < hashIds.length; i++) {
            JsonNode id = ids.get(i);
            if (!id.isIntegralNumber() || !id.canConvertToLong()) {
                throw fail("hash_ids[" + i + "] is " + id + ", not an integer");
            }
            hashIds[i] = id.longValue();
        }
        if (timestamp < previousTimestamp) {
            throw fail("timestamp " + timestamp + " goes backwards (the previous request is at " + previousTimestamp + ")");
        }
        previousTimestamp = timestamp;
        return new TraceRequest(timestamp, (int) input, (int) output, hashIds);
    }

    private long whole(JsonNode o, String field) {
        JsonNode v = o.get(field);
        if (v == null) {
            throw fail("missing field '" + field + "'");
        }
        if (v.isIntegralNumber() && v.canConvertToLong()) {
            return v.longValue();
        }
        if (v.isNumber() && v.doubleValue() == Math.rint(v.doubleValue()) && Math.abs(v.doubleValue()) < 0x1p53) {
            return (long) v.doubleValue(); // 27482.0
        }
        throw fail(field + " must be a whole number, found " + v);
    }

    private TraceFormatException fail(String problem) {
        return new TraceFormatException(file, lineNumber, problem);
    }

    @Override
    public void close() {
        try {
            in.close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot close trace " + file + ": " + e.getMessage(), e);
        }
    }
}
