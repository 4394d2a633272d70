package dev.strata.cache.expert;

import java.util.Arrays;

/**
 * A split of one batch's tokens for one MoE layer into groups whose routed expert unions each fit
 * the layer's slot capacity, made by {@link TokenGrouper}. The engine runs the layer once per
 * group ({@link ExpertPager#page(int, int[][], int[])}) and writes each token's output at the
 * token's own index, so results stay in token order.
 *
 * <p>Invariants: every token index of the batch appears in exactly one group; each group lists
 * its tokens in ascending order; groups are ordered by their first token; the union of the experts
 * routed by a group's tokens has at most {@link #capacity()} experts.
 *
 * <p>Immutable (the arrays are not handed out for writing; do not modify them); any thread.
 *
 * @param groups     token indices of each group
 * @param union      distinct experts routed by the whole batch
 * @param capacity   slots the layer can hold at once
 * @param lowerBound no split can use fewer groups than this ({@code max(1, ceil(union / capacity))})
 */
public record TokenGroups(int[][] groups, int union, int capacity, int lowerBound) {

    /** Number of groups. */
    public int count() {
        return groups.length;
    }

    /** Tokens of group {@code g}, ascending. */
    public int[] group(int g) {
        return groups[g];
    }

    /** True when the split meets the lower bound, so no split has fewer groups. */
    public boolean provablyFewest() {
        return groups.length == lowerBound;
    }

    @Override
    public String toString() {
        return "TokenGroups[" + groups.length + " groups (lower bound " + lowerBound + "), union " + union + ", capacity "
                + capacity + ", " + Arrays.deepToString(groups.length > 4 ? Arrays.copyOf(groups, 4) : groups)
                + (groups.length > 4 ? "..." : "") + "]";
    }
}
