package dev.strata.cache.kv;

import java.util.Arrays;

/**
 * A subset of the token positions of one block, for sparse KV transfers (for example the tokens a
 * sparse-attention engine keeps). Positions are {@code 0 ≤ t < blockTokens}.
 *
 * <p>Immutable after construction; any thread.
 */
public final class TokenSelection {
    private final int blockTokens; // positions in a block
    private final long[] words; // bit t set when position t is selected
    private final int count; // selected positions

    private TokenSelection(int blockTokens, long[] words) {
        this.blockTokens = blockTokens;
        this.words = words;
        int c = 0;
        for (long w : words) {
            c += Long.bitCount(w);
        }
        this.count = c;
    }

    /** Every position of a block of {@code blockTokens} tokens. */
    public static TokenSelection all(int blockTokens) {
        return range(blockTokens, 0, blockTokens);
    }

    /**
     * No position: an empty block, which a layout describes with no segments and zero bytes.
     */
    public static TokenSelection none(int blockTokens) {
        return range(blockTokens, 0, 0);
    }

    /**
     * Positions {@code [from, to)}.
     *
     * @throws IllegalArgumentException if the range is not within the block
     */
    public static TokenSelection range(int blockTokens, int from, int to) {
        checkBlockTokens(blockTokens);
        if (from < 0 || to > blockTokens || from > to) {
            throw new IllegalArgumentException("token range [" + from + ", " + to + ") is outside a block of "
                    + blockTokens + " tokens");
        }
        long[] w = new long[(blockTokens + 63) >>> 6];
        for (int t = from; t < to; t++) {
            w[t >>> 6] |= 1L << t;
        }
        return new TokenSelection(blockTokens, w);
    }

    /**
     * The given positions (in any order; duplicates count once).
     *
     * @throws IllegalArgumentException naming a position outside the block
     */
    public static TokenSelection of(int blockTokens, int... positions) {
        checkBlockTokens(blockTokens);
        long[] w = new long[(blockTokens + 63) >>> 6];
        for (int t : positions) {
            if (t < 0 || t >= blockTokens) {
                throw new IllegalArgumentException("token position " + t + " is outside a block of " + blockTokens + " tokens");
            }
            w[t >>> 6] |= 1L << t;
        }
        return new TokenSelection(blockTokens, w);
    }

    /** Tokens per block this selection is for. */
    public int blockTokens() {
        return blockTokens;
    }

    /** Number of selected positions. */
    public int count() {
        return count;
    }

    /** True when every position is selected. */
    public boolean isAll() {
        return count == blockTokens;
    }

    /** True when position {@code t} is selected. */
    public boolean contains(int t) {
        return t >= 0 && t < blockTokens && (words[t >>> 6] & (1L << t)) != 0;
    }

    /** The first selected position at or after {@code from}, or -1. */
    public int nextSelected(int from) {
        for (int t = Math.max(0, from); t < blockTokens; t++) {
            long w = words[t >>> 6] >>> (t & 63);
            if (w == 0) {
                t = (t | 63); // skip to the end of this word
                continue;
            }
            return t + Long.numberOfTrailingZeros(w);
        }
        return -1;
    }

    /** The first position at or after {@code from} that is not selected, or {@code blockTokens}. */
    public int nextUnselected(int from) {
        int t = Math.max(0, from);
        while (t < blockTokens && contains(t)) {
            t++;
        }
        return t;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TokenSelection s && s.blockTokens == blockTokens && Arrays.equals(s.words, words);
    }

    @Override
    public int hashCode() {
        return 31 * blockTokens + Arrays.hashCode(words);
    }

    @Override
    public String toString() {
        return "TokenSelection[" + count + " of " + blockTokens + "]";
    }

    private static void checkBlockTokens(int blockTokens) {
        if (blockTokens <= 0) {
            throw new IllegalArgumentException("block tokens must be positive, got " + blockTokens);
        }
    }
}
