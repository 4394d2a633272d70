package dev.strata.bench.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.function.LongConsumer;

/**
 * The KV-block references of a Mooncake request trace (JSON lines with {@code timestamp},
 * {@code input_length}, {@code output_length} and {@code hash_ids}: one remapped prefix-block hash
 * per 512-token block of the input). Each request reads its input blocks in order, so equal ids
 * across requests are reused prefixes. Output tokens are not part of the trace and are not
 * referenced. Requests are taken in file order (the trace is sorted by arrival).
 *
 * <p>The file is read again on every {@link #forEach}; a bad line stops with an
 * {@link IllegalArgumentException} naming the file, the line and the value. Any thread.
 *
 * @param file the trace
 */
public record MooncakeKvBlockStream(Path file) implements KvBlockStream {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public void forEach(LongConsumer blocks) {
        try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            long lineNo = 0;
            while ((line = in.readLine()) != null) {
                lineNo++;
                if (line.isBlank()) {
                    continue;
                }
                JsonNode node;
                try {
                    node = JSON.readTree(line);
                } catch (IOException e) {
                    throw new IllegalArgumentException("Mooncake trace " + file + ", line " + lineNo + ": not JSON: "
                            + e.getMessage().lines().findFirst().orElse(""));
                }
                JsonNode ids = node.get("hash_ids");
                if (ids == null || !ids.isArray()) {
                    throw new IllegalArgumentException("Mooncake trace " + file + ", line " + lineNo
                            + ": expected an array 'hash_ids', got " + (ids == null ? "none" : ids.toString()));
                }
                for (JsonNode id : ids) {
                    if (!id.canConvertToLong()) {
                        throw new IllegalArgumentException("Mooncake trace " + file + ", line " + lineNo
                                + ": hash id is not an integer: " + id);
                    }
                    blocks.accept(id.asLong());
                }
            }
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("Mooncake trace " + file + ": no such file");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read Mooncake trace " + file + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String describe() {
        return "Mooncake trace " + file + " (hash_ids, 512-token blocks)";
    }
}
