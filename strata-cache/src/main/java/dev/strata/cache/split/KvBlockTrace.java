package dev.strata.cache.split;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.curve.ReuseDistanceTracker;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The KV block reference stream of a request trace in the Mooncake JSON-lines format, and its exact
 * LRU miss curve: every request reads the blocks of its input prefix, {@code hash_ids} in order
 * (equal ids are the same block, shared by every request whose prefix contains it).
 *
 * <pre>
 * {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}
 * </pre>
 * Blank lines are skipped. A line that is not a JSON object, lacks {@code hash_ids}, or holds an id
 * that is not a non-negative integer stops the read with an {@link IllegalArgumentException}
 * naming the file, the line and the value.
 *
 * <p>Immutable once read; any thread.
 *
 * @param curve          the exact miss curve by pool capacity in blocks, first sights apart
 * @param requests       requests read
 * @param references     block references (ids summed over requests)
 * @param distinct       distinct blocks
 * @param maxInputTokens the longest request's {@code input_length} (0 when absent)
 * @param maxBlocks      the most blocks one request reads
 */
public record KvBlockTrace(MissCurve curve, long requests, long references, long distinct, long maxInputTokens,
                           long maxBlocks) {

    /**
     * Reads {@code file}; the curve resolves capacities up to {@code maxCapacity} blocks.
     *
     * @throws IllegalArgumentException for a missing file or a bad line, naming it
     * @throws UncheckedIOException     for an I/O failure while reading
     */
    public static KvBlockTrace readMooncake(Path file, int maxCapacity) {
        ObjectMapper json = new ObjectMapper();
        ReuseDistanceTracker tracker = new ReuseDistanceTracker(1 << 12);
        long requests = 0;
        long maxInput = 0;
        long maxBlocks = 0;
        try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            long lineNo = 0;
            while ((line = in.readLine()) != null) {
                lineNo++;
                if (line.isBlank()) {
                    continue;
                }
                JsonNode o;
                try {
                    o = json.readTree(line);
                } catch (IOException e) {
                    throw bad(file, lineNo, "not JSON: " + shorten(line));
                }
                if (o == null || !o.isObject()) {
                    throw bad(file, lineNo, "expected a JSON object, got " + shorten(line));
                }
                JsonNode ids = o.get("hash_ids");
                if (ids == null || !ids.isArray()) {
                    throw bad(file, lineNo, "'hash_ids' must be an array of block ids, got " + (ids == null ? "nothing" : shorten(ids.toString())));
                }
                for (JsonNode id : ids) {
                    if (!id.canConvertToLong() || !id.isIntegralNumber() || id.asLong() < 0) {
                        throw bad(file, lineNo, "block id must be a non-negative integer, got " + shorten(id.toString()));
                    }
                    tracker.access(id.asLong());
                }
                JsonNode input = o.get("input_length");
                if (input != null && input.isIntegralNumber()) {
                    maxInput = Math.max(maxInput, input.asLong());
                }
                maxBlocks = Math.max(maxBlocks, ids.size());
                requests++;
            }
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("KV trace file not found: " + file);
        } catch (IOException e) {
            throw new UncheckedIOException("reading KV trace " + file + ": " + e.getMessage(), e);
        }
        if (requests == 0) {
            throw new IllegalArgumentException("KV trace " + file + " holds no requests");
        }
        return new KvBlockTrace(tracker.missCurve(maxCapacity), requests, tracker.references(), tracker.distinct(), maxInput,
                maxBlocks);
    }

    private static IllegalArgumentException bad(Path file, long line, String what) {
        return new IllegalArgumentException(file + ":" + line + ": " + what);
    }

    private static String shorten(String s) {
        return s.length() <= 80 ? s : s.substring(0, 77) + "...";
    }
}
