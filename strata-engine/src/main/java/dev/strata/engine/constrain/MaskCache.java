package dev.strata.engine.constrain;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The masks one grammar computed over one vocabulary, by grammar state, least recently used
 * evicted beyond {@value #ENTRIES} entries. A state's mask does not depend on the request, so the
 * requests of one schema share them; most steps of a long output (inside a string, between
 * properties) revisit a few states. Thread-safe (synchronized; decoders of several generators may
 * share a grammar).
 */
final class MaskCache {
    static final int ENTRIES = 128;

    /**
     * The tokens a state allows, before the token budget is applied.
     *
     * @param allowed  [ceil(size / 64)] bit per token id
     * @param maxAfter the most bytes any allowed token leaves to complete the output
     *                 ({@link GrammarFrame#minRemaining} after it); the mask holds as it is while
     *                 the budget covers this
     * @param minAfter the fewest bytes any token (allowed by the grammar) leaves to complete the output
     */
    record Mask(long[] allowed, int maxAfter, int minAfter) {
        boolean allows(int id) {
            return (allowed[id >>> 6] & 1L << (id & 63)) != 0;
        }
    }

    private final LinkedHashMap<GrammarFrame, Mask> map = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<GrammarFrame, Mask> eldest) {
            return size() > ENTRIES;
        }
    };
    private long hits;
    private long misses;

    synchronized Mask get(GrammarFrame state) {
        Mask m = map.get(state);
        if (m == null) {
            misses++;
        } else {
            hits++;
        }
        return m;
    }

    synchronized void put(GrammarFrame state, Mask mask) {
        map.put(state, mask);
    }

    synchronized long hits() {
        return hits;
    }

    synchronized long misses() {
        return misses;
    }
}
