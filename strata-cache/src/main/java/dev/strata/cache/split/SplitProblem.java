package dev.strata.cache.split;

import dev.strata.cache.curve.MissCurve;

/**
 * One instance of the expert/KV split: a pageable budget shared by the expert slots and the KV
 * block pool, the two streams' miss functions, what a miss costs on each side, and the limits.
 *
 * <p>A split is a per-layer expert cap {@code k}; the KV pool gets every remaining whole block,
 * {@code kvBlocks(k) = (budget − k·expertSlotBytes) / kvBlockBytes}. Its predicted latency (the
 * seconds spent on misses over the stream the curves were measured on) is
 * {@code experts.misses(k)·expertMiss + kv.misses(kvBlocks(k))·kvMiss} (Eq. 4 of the design).
 *
 * <p>Immutable; any thread.
 *
 * @param budgetBytes     pageable bytes shared by both pools
 * @param expertSlotBytes bytes of one expert slot in every layer (one unit of the expert pool)
 * @param kvBlockBytes    bytes of one KV block over all layers (one unit of the KV pool)
 * @param experts         expert misses by per-layer cap
 * @param kv              KV block misses by pool capacity in blocks
 * @param costs           seconds per miss on each side
 * @param floorBlocks     admission floor: the fewest KV blocks the split may leave (Eq. 6)
 * @param minExpertCap    the fewest slots per layer (top-k, or the grouping minimum)
 * @param maxExpertCap    the most slots per layer worth having (the experts per layer)
 */
public record SplitProblem(
        long budgetBytes,
        long expertSlotBytes,
        long kvBlockBytes,
        ExpertDemand experts,
        MissCurve kv,
        MissCosts costs,
        long floorBlocks,
        int minExpertCap,
        int maxExpertCap) {

    public SplitProblem {
        if (budgetBytes <= 0 || expertSlotBytes <= 0 || kvBlockBytes <= 0) {
            throw new IllegalArgumentException("budget, expert slot bytes and KV block bytes must be positive, got "
                    + budgetBytes + ", " + expertSlotBytes + ", " + kvBlockBytes);
        }
        if (experts == null || kv == null || costs == null) {
            throw new IllegalArgumentException("a split problem needs both streams' curves and the miss costs");
        }
        if (floorBlocks < 0) {
            throw new IllegalArgumentException("KV floor must not be negative, got " + floorBlocks);
        }
        if (minExpertCap < 1 || maxExpertCap < minExpertCap) {
            throw new IllegalArgumentException("expert cap bounds must satisfy 1 <= min <= max, got min " + minExpertCap
                    + ", max " + maxExpertCap);
        }
    }

    /** The admission floor in blocks: {@code concurrency} sequences of {@code contextTokens} each (Eq. 6). */
    public static long floorBlocks(int concurrency, long contextTokens, int blockTokens) {
        if (concurrency < 0 || contextTokens < 0 || blockTokens < 1) {
            throw new IllegalArgumentException("floor needs concurrency >= 0, context tokens >= 0, block tokens >= 1, got "
                    + concurrency + ", " + contextTokens + ", " + blockTokens);
        }
        return concurrency * ((contextTokens + blockTokens - 1) / blockTokens);
    }

    /** KV blocks left when the expert cap is {@code k}: every whole block of the remainder. */
    public long kvBlocks(int k) {
        return Math.max(0, (budgetBytes - k * expertSlotBytes) / kvBlockBytes);
    }

    /** The largest feasible cap: within the expert bounds and leaving the floor; below {@link #lowestCap()} when none is. */
    public int highestCap() {
        long room = budgetBytes - floorBlocks * kvBlockBytes;
        long byBudget = room < 0 ? -1 : room / expertSlotBytes;
        return (int) Math.min(maxExpertCap, byBudget);
    }

    /** The smallest feasible cap. */
    public int lowestCap() {
        return minExpertCap;
    }

    /** True when some cap satisfies the bounds and the floor together. */
    public boolean feasible() {
        return highestCap() >= lowestCap();
    }

    /** Predicted seconds spent on misses at cap {@code k} (first sights included). */
    public double predictedSeconds(int k) {
        return experts.misses(k) * costs.expertMissSeconds() + kv.misses(clampCapacity(kvBlocks(k))) * costs.kvMissSeconds();
    }

    /**
     * Predicted seconds spent on reuse misses at cap {@code k}: first sights left out, since they
     * cost the same at every split.
     */
    public double predictedWarmSeconds(int k) {
        return experts.warmMisses(k) * costs.expertMissSeconds()
                + kv.warmMisses(clampCapacity(kvBlocks(k))) * costs.kvMissSeconds();
    }

    /** The split at cap {@code k} with its predicted latency. */
    public Split splitAt(int k) {
        long kvBlocks = kvBlocks(k);
        return new Split(k, kvBlocks, predictedSeconds(k), kvBlocks >= floorBlocks);
    }

    /** Explains why no cap is feasible, with the numbers. */
    String infeasibility() {
        return "budget of " + budgetBytes + " bytes cannot hold the KV floor of " + floorBlocks + " blocks ("
                + floorBlocks * kvBlockBytes + " bytes) plus the minimum expert cap of " + minExpertCap + " slots ("
                + minExpertCap * expertSlotBytes + " bytes)";
    }

    static int clampCapacity(long blocks) {
        return (int) Math.min(Integer.MAX_VALUE, blocks);
    }
}
