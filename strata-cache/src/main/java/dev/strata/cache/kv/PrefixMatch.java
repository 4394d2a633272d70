package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import java.util.Arrays;

/**
 * The cached prefix of a token sequence, as {@link KvBlockManager#match} found it: the chained
 * keys of every full block of the tokens, how many leading blocks are cached somewhere, and where
 * each of those is. A block counts only if every block before it counts too (longest prefix
 * across all tiers).
 *
 * <p>A snapshot: blocks may move or leave after it was taken; {@link KvBlockManager#load}
 * re-checks each block and reports the ones it could not find as failures.
 *
 * <p>Immutable; any thread.
 */
public final class PrefixMatch {
    private final ObjectKey[] keys; // [full blocks of the tokens] chained keys
    private final BlockLocation[] locations; // [matched blocks] where each is
    private final int tokensLength; // tokens the match was asked for

    PrefixMatch(ObjectKey[] keys, BlockLocation[] locations, int tokensLength) {
        this.keys = keys;
        this.locations = locations;
        this.tokensLength = tokensLength;
    }

    /** Number of leading full blocks whose KV is cached. */
    public int blocks() {
        return locations.length;
    }

    /** Number of full blocks among the tokens asked for (matched or not). */
    public int fullBlocks() {
        return keys.length;
    }

    /** Tokens the match was asked for. */
    public int tokensLength() {
        return tokensLength;
    }

    /** Where matched block {@code i} is. */
    public BlockLocation location(int i) {
        return locations[i];
    }

    /** The key of full block {@code i} (matched or not). */
    public ObjectKey key(int i) {
        return keys[i];
    }

    /** The same match cut to its first {@code blocks} matched blocks (the keys of every full block kept). */
    PrefixMatch prefix(int blocks) {
        if (blocks < 0 || blocks > locations.length) {
            throw new IllegalArgumentException("a prefix of " + blocks + " blocks of a match of " + locations.length);
        }
        return blocks == locations.length ? this : new PrefixMatch(keys, Arrays.copyOf(locations, blocks), tokensLength);
    }

    /** Number of matched blocks found at {@code where}. */
    public int count(BlockLocation where) {
        int n = 0;
        for (BlockLocation l : locations) {
            if (l == where) {
                n++;
            }
        }
        return n;
    }

    @Override
    public String toString() {
        return "PrefixMatch[" + blocks() + " of " + keys.length + " blocks: " + Arrays.toString(locations) + "]";
    }
}
