package dev.strata.analysis.routing;

import dev.strata.analysis.kvtrace.MooncakeTraceReader;
import java.nio.file.Path;
import java.util.function.LongConsumer;

/**
 * The KV-block references of a Mooncake request trace (JSON lines with {@code timestamp},
 * {@code input_length}, {@code output_length} and {@code hash_ids}: one remapped prefix-block hash
 * per 512-token block of the input). Each request reads its input blocks in order, so equal ids
 * across requests are reused prefixes. Output tokens are not part of the trace and are not
 * referenced. Requests are taken in file order (the trace is sorted by arrival).
 *
 * <p>The file is read again on every {@link #forEach}, through {@link MooncakeTraceReader}: a bad
 * line stops with an error naming the file, the line and the problem. Any thread.
 *
 * @param file the trace
 */
public record MooncakeKvBlockStream(Path file) implements KvBlockStream {
    @Override
    public void forEach(LongConsumer blocks) {
        MooncakeTraceReader.forEach(file, MooncakeTraceReader.MOONCAKE_BLOCK_TOKENS, request -> {
            for (long id : request.hashIds()) {
                blocks.accept(id);
            }
        });
    }

    @Override
    public String describe() {
        return "Mooncake trace " + file + " (hash_ids, 512-token blocks)";
    }
}
