package dev.strata.analysis.kvsim;

import java.util.TreeSet;

/**
 * Bélády's optimum for a prefix trace: the most block hits any cache of {@code capacity} blocks
 * could have had, knowing the future.
 *
 * <p>What is computed, precisely. One cache of {@code capacity} blocks, replayed a request at a
 * time: a request hits the longest run of its leading blocks that is resident; then every block of
 * the request is resident, and while more than {@code capacity} blocks are, the one whose next use
 * (the index of the next request that contains it) is furthest away leaves, the deeper block
 * first on equal next use. Blocks of the request just served may leave at once (bypass). Next uses
 * come from one backward pass over the trace.
 *
 * <p>Why this bounds every policy of the tiered replay ({@link KvReplaySimulator}). The tiers are
 * exclusive (a block is in at most one tier), so after each request the tiers hold at most the sum
 * of their capacities: compare Bélády at that sum. Ignoring the prefix rule (counting every
 * resident block of a request as a hit) can only add hits, and for that relaxed problem keeping the
 * blocks of nearest next use after each request is optimal (the classic exchange argument, with
 * requests as sets of blocks). Bélády's cache is prefix-closed: a block's next use is never before
 * its parent's (a request containing a block contains its parent), the tie goes against the deeper
 * block, and a block enters only with its parent. So for it the prefix rule costs nothing, and its
 * hit count bounds the prefix-rule hits of every policy at the same total capacity.
 *
 * <p>Cost: O(A log C) for A block references. Stateless; any thread.
 */
public final class BeladyBound {
    private static final int NEVER = Integer.MAX_VALUE; // next use of a block that is never used again

    private BeladyBound() {
    }

    /** Block hits of the optimal cache of {@code capacity} blocks over {@code trace}. */
    public static long hits(PrefixTrace trace, long capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException("capacity must not be negative, got " + capacity + " blocks");
        }
        int n = trace.requestCount();
        int[][] nextUse = new int[n][]; // [request][position] -> next request using that block, or NEVER
        int[] seen = new int[trace.blockCount()];
        java.util.Arrays.fill(seen, NEVER);
        for (int r = n - 1; r >= 0; r--) {
            int[] blocks = trace.blocksOf(r);
            int[] next = new int[blocks.length];
            for (int i = 0; i < blocks.length; i++) {
                next[i] = seen[blocks[i]];
            }
            for (int b : blocks) {
                seen[b] = r;
            }
            nextUse[r] = next;
        }
        int[] key = new int[trace.blockCount()]; // next use of each resident block
        boolean[] resident = new boolean[trace.blockCount()];
        TreeSet<Integer> cache = new TreeSet<>((a, b) -> {
            int c = Integer.compare(key[a], key[b]);
            if (c != 0) {
                return c;
            }
            c = Integer.compare(trace.depth(a), trace.depth(b));
            return c != 0 ? c : Integer.compare(a, b);
        });
        long hits = 0;
        for (int r = 0; r < n; r++) {
            int[] blocks = trace.blocksOf(r);
            int p = 0;
            while (p < blocks.length && resident[blocks[p]]) {
                p++;
            }
            hits += p;
            for (int i = 0; i < blocks.length; i++) {
                int b = blocks[i];
                if (resident[b]) {
                    cache.remove(b);
                }
                key[b] = nextUse[r][i];
                resident[b] = true;
                cache.add(b);
            }
            while (cache.size() > capacity) {
                int victim = cache.pollLast();
                resident[victim] = false;
            }
        }
        return hits;
    }

    /** Hits over block references: the optimal hit ratio at {@code capacity} blocks. */
    public static double hitRatio(PrefixTrace trace, long capacity) {
        return trace.accessCount() == 0 ? 0 : (double) hits(trace, capacity) / trace.accessCount();
    }
}
