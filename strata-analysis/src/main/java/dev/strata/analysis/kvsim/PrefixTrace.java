package dev.strata.analysis.kvsim;

import dev.strata.analysis.kvtrace.MooncakeTraceReader;
import dev.strata.analysis.kvtrace.TraceRequest;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A trace with its blocks interned into a prefix tree, ready for replay: each distinct block is a
 * dense index {@code 0..blockCount()-1} with its parent and depth, and each request is the array
 * of its blocks' indices.
 *
 * <p>A block's identity is its id <em>together with</em> its parent's identity (a trie): two
 * requests share block {@code i} only if they share blocks {@code 0..i}. Mooncake's ids are
 * already chained prefix hashes, so there the trie changes nothing; a user trace whose ids are
 * per-block content hashes is made prefix-correct by it.
 *
 * <p>Immutable after construction; any thread.
 */
public final class PrefixTrace {
    private final int[][] requests; // [request][position] -> block index
    private final long[] timestamps; // [request] ms
    private final int[] inputLengths; // [request] prompt tokens
    private final int[] outputLengths; // [request] generated tokens
    private final int[] parent; // [block] -> parent block, -1 for a first block
    private final int[] depth; // [block] -> position in its sequence, 0 for a first block
    private final long accesses; // total block references over all requests

    private PrefixTrace(int[][] requests, long[] timestamps, int[] inputLengths, int[] outputLengths, int[] parent, int[] depth) {
        this.requests = requests;
        this.timestamps = timestamps;
        this.inputLengths = inputLengths;
        this.outputLengths = outputLengths;
        this.parent = parent;
        this.depth = depth;
        long a = 0;
        for (int[] r : requests) {
            a += r.length;
        }
        this.accesses = a;
    }

    /** Reads and interns a Mooncake-format trace file (see {@link MooncakeTraceReader}). */
    public static PrefixTrace read(Path file, int blockTokens) {
        Builder b = new Builder();
        MooncakeTraceReader.forEach(file, blockTokens, b::add);
        return b.build();
    }

    /** Interns {@code requests}, in order. */
    public static PrefixTrace of(List<TraceRequest> requests) {
        Builder b = new Builder();
        requests.forEach(b::add);
        return b.build();
    }

    /** Accumulates requests one at a time (for streaming); confined to one thread. */
    public static final class Builder {
        private record Edge(int parent, long id) {
        }

        private final Map<Edge, Integer> index = new HashMap<>();
        private final List<int[]> requests = new ArrayList<>();
        private long[] timestamps = new long[1024];
        private int[] inputLengths = new int[1024];
        private int[] outputLengths = new int[1024];
        private int[] parent = new int[1024];
        private int[] depth = new int[1024];
        private int blocks;

        /** Appends one request. */
        public Builder add(TraceRequest r) {
            int[] seq = new int[r.blockCount()];
            int p = -1;
            for (int i = 0; i < seq.length; i++) {
                Edge e = new Edge(p, r.hashId(i));
                Integer b = index.get(e);
                if (b == null) {
                    b = blocks++;
                    if (b == parent.length) {
                        parent = Arrays.copyOf(parent, b * 2);
                        depth = Arrays.copyOf(depth, b * 2);
                    }
                    parent[b] = p;
                    depth[b] = i;
                    index.put(e, b);
                }
                seq[i] = b;
                p = b;
            }
            if (requests.size() == timestamps.length) {
                timestamps = Arrays.copyOf(timestamps, timestamps.length * 2);
                inputLengths = Arrays.copyOf(inputLengths, timestamps.length);
                outputLengths = Arrays.copyOf(outputLengths, timestamps.length);
            }
            timestamps[requests.size()] = r.timestampMs();
            inputLengths[requests.size()] = r.inputLength();
            outputLengths[requests.size()] = r.outputLength();
            requests.add(seq);
            return this;
        }

        public PrefixTrace build() {
            int n = requests.size();
            return new PrefixTrace(requests.toArray(new int[0][]), Arrays.copyOf(timestamps, n),
                    Arrays.copyOf(inputLengths, n), Arrays.copyOf(outputLengths, n),
                    Arrays.copyOf(parent, blocks), Arrays.copyOf(depth, blocks));
        }
    }

    /** Requests in the trace. */
    public int requestCount() {
        return requests.length;
    }

    /** Distinct blocks (nodes of the prefix tree). */
    public int blockCount() {
        return parent.length;
    }

    /** Block references summed over all requests. */
    public long accessCount() {
        return accesses;
    }

    /** Blocks of request {@code r}, in prompt order (the array is shared: do not modify). */
    int[] blocksOf(int r) {
        return requests[r];
    }

    /** A copy of the blocks of request {@code r}, in prompt order. */
    public int[] blocks(int r) {
        return requests[r].clone();
    }

    /** Arrival of request {@code r}, ms. */
    public long timestamp(int r) {
        return timestamps[r];
    }

    /** Prompt tokens of request {@code r}. */
    public int inputLength(int r) {
        return inputLengths[r];
    }

    /** Generated tokens of request {@code r}. */
    public int outputLength(int r) {
        return outputLengths[r];
    }

    /** The parent of {@code block}, -1 for the first block of a sequence. */
    public int parent(int block) {
        return parent[block];
    }

    /** Position of {@code block} in its sequence, 0 for a first block. */
    public int depth(int block) {
        return depth[block];
    }
}
