package dev.strata.cache;

/**
 * The store's running counts for one tier of its chain.
 *
 * <p>Threads: written and read under the store's lock (plain fields; the snapshot is taken under
 * the lock).
 */
final class StoreTierCounters {
    long hits; // gets served from this tier
    long misses; // gets that looked here first and found no copy (served lower, or not at all)
    long puts; // objects stored here by put
    long refusedPuts; // puts aimed at this tier that were refused
    long evictions; // copies that left this tier under pressure
    long demotions; // evicted copies copied down into a lower tier
    long promotions; // copies made here by promotion on a hit below
    long drops; // LOSSY objects dropped when their last copy left this tier (and lost ones)
    long corruptCopies; // copies found corrupt here and discarded
    long bytesIn; // payload bytes copied into this tier from another
    long bytesOut; // payload bytes copied out of this tier into another
    long residentObjects; // copies here now
    long residentBytes; // payload bytes of the copies here now
    long reservedBytes; // allocation bytes of the copies here now (rounding included)
}
