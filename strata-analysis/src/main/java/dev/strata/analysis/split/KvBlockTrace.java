package dev.strata.analysis.split;

import dev.strata.analysis.kvtrace.MooncakeTraceReader;
import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.curve.ReuseDistanceTracker;
import java.nio.file.Path;

/**
 * The KV block reference stream of a request trace in the Mooncake JSON-lines format, and its exact
 * LRU miss curve: every request reads the blocks of its input prefix, {@code hash_ids} in order
 * (equal ids are the same block, shared by every request whose prefix contains it).
 *
 * <pre>
 * {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}
 * </pre>
 * The trace is read by {@link MooncakeTraceReader}: a malformed line stops the read with an
 * error naming the file, the line and the problem.
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
     * @throws IllegalArgumentException for a missing file, a bad line (naming it) or an empty trace
     * @throws java.io.UncheckedIOException for an I/O failure while reading
     */
    public static KvBlockTrace readMooncake(Path file, int maxCapacity) {
        ReuseDistanceTracker tracker = new ReuseDistanceTracker(1 << 12);
        long[] requests = new long[1]; // requests read
        long[] maxInput = new long[1]; // tokens, the longest input
        long[] maxBlocks = new long[1]; // blocks, the most one request reads
        MooncakeTraceReader.forEach(file, MooncakeTraceReader.MOONCAKE_BLOCK_TOKENS, request -> {
            for (long id : request.hashIds()) {
                tracker.access(id);
            }
            maxInput[0] = Math.max(maxInput[0], request.inputLength());
            maxBlocks[0] = Math.max(maxBlocks[0], request.hashIds().length);
            requests[0]++;
        });
        if (requests[0] == 0) {
            throw new IllegalArgumentException("KV trace " + file + " holds no requests");
        }
        return new KvBlockTrace(tracker.missCurve(maxCapacity), requests[0], tracker.references(), tracker.distinct(),
                maxInput[0], maxBlocks[0]);
    }
}
