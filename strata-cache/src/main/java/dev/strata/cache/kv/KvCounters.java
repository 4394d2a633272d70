package dev.strata.cache.kv;

import dev.strata.cache.PriorityClass;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The manager's running counters. One writer (the manager's scheduler thread: every counted event
 * is applied there) updates them with opaque stores, so a metrics scrape on any other thread reads
 * each counter whole and eventually current, and the writer pays no fence on its hot path.
 *
 * <p>Threads: {@code add}/{@code inc}/{@code hit}/{@code link}/{@code eviction}/{@code recomputedInstead} by the scheduler
 * thread only; {@link #snapshot()} by any thread.
 */
final class KvCounters {
    private static final VarHandle CELL = MethodHandles.arrayElementVarHandle(long[].class);
    private static final int LOCATIONS = BlockLocation.values().length;
    private static final int LINKS = KvLink.values().length;
    private static final int CLASSES = PriorityClass.values().length;

    static final int HITS = 0; // [LOCATIONS] matched blocks by location
    static final int LINK_BLOCKS = HITS + LOCATIONS; // [LINKS]
    static final int LINK_BYTES = LINK_BLOCKS + LINKS; // [LINKS]
    static final int EVICTIONS = LINK_BYTES + LINKS; // [CLASSES] by the class at eviction
    static final int MISSES = EVICTIONS + CLASSES; // full blocks asked for past the matched prefix
    static final int LOOKUPS = MISSES + 1; // match calls
    static final int COMMITS = LOOKUPS + 1; // blocks committed under a new key
    static final int DEDUPS = COMMITS + 1; // commits that found their key resident and shared it
    static final int PREFETCH_HITS = DEDUPS + 1; // required blocks a prefetch had already loaded
    static final int PREFETCH_LATE = PREFETCH_HITS + 1; // required blocks still in flight
    static final int FAILED_LOADS = PREFETCH_LATE + 1; // block loads that failed
    static final int DROPS = FAILED_LOADS + 1; // store drops of blocks the manager had offloaded
    static final int UNEXPECTED_DROPS = DROPS + 1; // drops of keys the manager did not know (should stay 0)
    static final int OFFLOAD_REFUSED = UNEXPECTED_DROPS + 1; // offloads the store refused (no space)
    static final int SLOT_MOVES = OFFLOAD_REFUSED + 1; // cached blocks moved to another slot by a shrink of the slots
    static final int FAILED_STAGINGS = SLOT_MOVES + 1; // staging reads for a resume that failed (the resume loads those blocks)
    static final int RECOMPUTED_INSTEAD = FAILED_STAGINGS + 1; // [LOCATIONS] matched blocks left to recompute, faster than their load
    static final int SIZE = RECOMPUTED_INSTEAD + LOCATIONS;

    private final long[] cells = new long[SIZE];

    void add(int cell, long delta) {
        if (delta != 0) {
            CELL.setOpaque(cells, cell, (long) CELL.getOpaque(cells, cell) + delta);
        }
    }

    void inc(int cell) {
        CELL.setOpaque(cells, cell, (long) CELL.getOpaque(cells, cell) + 1);
    }

    void hit(BlockLocation where) {
        inc(HITS + where.ordinal());
    }

    void link(KvLink link, long bytes) {
        inc(LINK_BLOCKS + link.ordinal());
        add(LINK_BYTES + link.ordinal(), bytes);
    }

    void recomputedInstead(BlockLocation where) {
        inc(RECOMPUTED_INSTEAD + where.ordinal());
    }

    void eviction(PriorityClass c) {
        inc(EVICTIONS + c.ordinal());
    }

    long get(int cell) {
        return (long) CELL.getOpaque(cells, cell);
    }

    long[] snapshot() {
        long[] out = new long[SIZE];
        for (int i = 0; i < SIZE; i++) {
            out[i] = (long) CELL.getOpaque(cells, i);
        }
        return out;
    }
}
