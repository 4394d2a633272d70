package dev.strata.analysis.kvtrace;

import java.util.Arrays;

/**
 * One request of a prefix trace in the Mooncake format: arrival time, token counts and the ids of
 * its prompt's blocks.
 *
 * <p>Immutable (the id array is copied in and out); any thread.
 *
 * @param timestampMs  arrival, milliseconds from the start of the trace, never negative
 * @param inputLength  prompt tokens, never negative
 * @param outputLength generated tokens, never negative
 * @param hashIds      one id per block of the prompt, in order; the last block may be partial.
 *                     Equal ids after equal predecessors denote the same KV content.
 */
public record TraceRequest(long timestampMs, int inputLength, int outputLength, long[] hashIds) {

    public TraceRequest {
        if (timestampMs < 0 || inputLength < 0 || outputLength < 0) {
            throw new IllegalArgumentException("negative field in request: timestamp " + timestampMs
                    + ", input_length " + inputLength + ", output_length " + outputLength);
        }
        hashIds = hashIds.clone();
    }

    @Override
    public long[] hashIds() {
        return hashIds.clone();
    }

    /** Blocks in the prompt. */
    public int blockCount() {
        return hashIds.length;
    }

    /** The id of block {@code i}. */
    public long hashId(int i) {
        return hashIds[i];
    }

    /** Blocks a prompt of {@code inputLength} tokens spans at {@code blockTokens} tokens per block. */
    public static int blocksFor(int inputLength, int blockTokens) {
        return (int) ((inputLength + (long) blockTokens - 1) / blockTokens);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TraceRequest r && r.timestampMs == timestampMs && r.inputLength == inputLength
                && r.outputLength == outputLength && Arrays.equals(r.hashIds, hashIds);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(timestampMs) * 31 + inputLength * 17 + outputLength + Arrays.hashCode(hashIds);
    }

    @Override
    public String toString() {
        return "TraceRequest[timestamp=" + timestampMs + ", input_length=" + inputLength + ", output_length="
                + outputLength + ", blocks=" + hashIds.length + "]";
    }
}
