package dev.strata.cache.kv;

import dev.strata.cache.PriorityClass;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The manager's running counters, one atomic cell each, so a metrics scrape on any thread reads
 * them without stopping the scheduler.
 *
 * <p>Threads: any thread may add and read.
 */
final class KvCounters {
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
    static final int SIZE = OFFLOAD_REFUSED + 1;

    private final AtomicLongArray cells = new AtomicLongArray(SIZE);

    void add(int cell, long delta) {
        cells.getAndAdd(cell, delta);
    }

    void inc(int cell) {
        cells.getAndIncrement(cell);
    }

    void hit(BlockLocation where) {
        cells.getAndIncrement(HITS + where.ordinal());
    }

    void link(KvLink link, long bytes) {
        cells.getAndIncrement(LINK_BLOCKS + link.ordinal());
        cells.getAndAdd(LINK_BYTES + link.ordinal(), bytes);
    }

    void eviction(PriorityClass c) {
        cells.getAndIncrement(EVICTIONS + c.ordinal());
    }

    long[] snapshot() {
        long[] out = new long[SIZE];
        for (int i = 0; i < SIZE; i++) {
            out[i] = cells.get(i);
        }
        return out;
    }
}
