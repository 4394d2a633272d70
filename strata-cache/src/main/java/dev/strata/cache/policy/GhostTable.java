package dev.strata.cache.policy;

import java.util.Arrays;

/**
 * The keys recently evicted from the two segments of {@link PrefixAwarePolicy}, as bare key hashes:
 * for each segment a FIFO ring of at most {@code limit} hashes, and one open-addressing table
 * (linear probing, backward-shift deletion) from hash to the segment and ring position that hold
 * it, so that "was this key evicted lately, and from which segment?" is O(1).
 *
 * <p>Forgetting is lazy: when a ring drops its oldest ghost, the table entry is left in place and
 * is <em>stale</em> from then on (its ring position is behind the ring's tail), so a record costs
 * one probe of the table, not a second one for the ghost it pushes out, whose slot is a cache miss
 * by then. A take or record that meets the stale entry of its own hash deletes it; when the table
 * would pass half full, stale entries are dropped in one pass (at the same size while live ghosts
 * fill a quarter of it or less, else doubling), which costs a few sequential reads per record.
 *
 * <p>A ghost is its hash in a ring and a table slot of 16 bytes (hash, and position and segment
 * packed in one word, side by side, so a probe reads one cache line, not one per array); with
 * stale entries the table holds 2 to 8 slots per ghost remembered. There is no per-entry object.
 * Arrays grow (doubling) only while {@code limit} grows, i.e. while
 * the tier fills up; after that nothing is allocated. A hash collision can at worst make a key
 * look like a ghost it is not, which only nudges the adaptation once.
 *
 * <p>Invariants: every table entry that is not stale names a ring position holding the same hash,
 * and every hash a ring holds has such an entry; each ring holds at most {@code limit} entries; a
 * hash is in the table at most once (the newest eviction, or a stale entry).
 *
 * <p>Threads: not thread-safe; guarded by the owning policy's lock.
 */
final class GhostTable {
    static final int NONE = -1;

    private final long[][] ring = {new long[16], new long[16]}; // [segment][seq & mask] key hash (0: gone)
    private final long[] head = new long[2]; // [segment] sequence number of the next entry
    private final long[] tail = new long[2]; // [segment] sequence number of the oldest entry
    private final int[] live = new int[2]; // [segment] ghosts recorded and neither taken nor forgotten
    private long[] table = new long[2 * 64]; // [2 * slot] key hash (0 = empty slot), [2 * slot + 1] ring sequence << 1 | segment
    private int used; // occupied slots, stale entries included

    /** Ghosts of {@code segment} that are still recorded. */
    int count(int segment) {
        return live[segment];
    }

    /**
     * Records that {@code hash} was evicted from {@code segment}, keeping at most {@code limit}
     * ghosts per segment (the oldest are forgotten first).
     */
    void record(long hash, int segment, int limit) {
        long h = nonZero(hash);
        remove(h); // an older ghost of the same key is superseded
        while (head[segment] - tail[segment] >= Math.max(1, limit)) {
            forgetOldest(segment);
        }
        long[] r = ring[segment];
        if (head[segment] - tail[segment] == r.length) {
            grow(segment);
            r = ring[segment];
        }
        long seq = head[segment]++;
        r[(int) (seq & (r.length - 1))] = h;
        if (2 * (used + 1) > slots()) {
            // drop the stale entries; double unless live ghosts fill a quarter of the table or less
            rehash(4 * (live[0] + live[1] + 1) <= slots() ? slots() : slots() * 2);
        }
        int mask = slots() - 1;
        int i = slot(h, mask);
        while (table[2 * i] != 0) {
            i = (i + 1) & mask;
        }
        table[2 * i] = h;
        table[2 * i + 1] = seq << 1 | segment;
        used++;
        live[segment]++;
    }

    /** If {@code hash} is a ghost, forgets it and returns its segment; else {@link #NONE}. */
    int take(long hash) {
        long h = nonZero(hash);
        int mask = slots() - 1;
        for (int i = slot(h, mask); table[2 * i] != 0; i = (i + 1) & mask) {
            if (table[2 * i] == h) {
                if (stale(table[2 * i + 1])) { // forgotten already
                    delete(i);
                    return NONE;
                }
                int seg = (int) (table[2 * i + 1] & 1);
                long seq = table[2 * i + 1] >>> 1;
                long[] r = ring[seg];
                r[(int) (seq & (r.length - 1))] = 0;
                delete(i);
                live[seg]--;
                return seg;
            }
        }
        return NONE;
    }

    private void remove(long h) {
        take(h);
    }

    /** Drops the oldest ghost of {@code segment} from its ring; its table entry, if any, is stale from now on. */
    private void forgetOldest(int segment) {
        long[] r = ring[segment];
        long seq = tail[segment]++;
        int at = (int) (seq & (r.length - 1));
        if (r[at] != 0) {
            r[at] = 0;
            live[segment]--;
        } // else taken already: its entry was deleted then
    }

    /** Backward-shift deletion of slot {@code i}: keeps every probe run unbroken, no tombstones. */
    private void delete(int i) {
        int mask = slots() - 1;
        int hole = i;
        int j = i;
        while (true) {
            j = (j + 1) & mask;
            if (table[2 * j] == 0) {
                break;
            }
            int home = slot(table[2 * j], mask);
            // move j into the hole unless its home lies cyclically in (hole, j]
            boolean stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                table[2 * hole] = table[2 * j];
                table[2 * hole + 1] = table[2 * j + 1];
                hole = j;
            }
        }
        table[2 * hole] = 0;
        used--;
    }

    private void grow(int segment) {
        long[] old = ring[segment];
        long[] r = new long[old.length * 2];
        for (long s = tail[segment]; s < head[segment]; s++) {
            r[(int) (s & (r.length - 1))] = old[(int) (s & (old.length - 1))];
        }
        ring[segment] = r;
    }

    private void rehash(int capacity) {
        long[] old = table;
        table = new long[2 * capacity];
        int mask = capacity - 1;
        used = 0;
        for (int s = 0; s < old.length; s += 2) {
            if (old[s] != 0 && !stale(old[s + 1])) {
                int i = slot(old[s], mask);
                while (table[2 * i] != 0) {
                    i = (i + 1) & mask;
                }
                table[2 * i] = old[s];
                table[2 * i + 1] = old[s + 1];
                used++;
            }
        }
    }

    /** Whether a table entry's packed position is behind its ring's tail (forgotten). */
    private boolean stale(long position) {
        return position >>> 1 < tail[(int) (position & 1)];
    }

    /** Slots in the table (a power of two); package-private for tests. */
    int slots() {
        return table.length >>> 1;
    }

    private static int slot(long h, int mask) {
        return (int) (h ^ (h >>> 32)) & mask;
    }

    private static long nonZero(long hash) {
        return hash == 0 ? 1 : hash;
    }

    /** For tests: every invariant listed above, or an exception naming the broken one. */
    void check() {
        int[] counted = new int[2];
        int occupied = 0;
        java.util.Set<Long> hashes = new java.util.HashSet<>();
        for (int s = 0; s < slots(); s++) {
            long key = table[2 * s];
            if (key == 0) {
                continue;
            }
            occupied++;
            if (!hashes.add(key)) {
                throw new IllegalStateException("ghost " + key + " is in the table twice");
            }
            if (stale(table[2 * s + 1])) {
                continue;
            }
            int seg = (int) (table[2 * s + 1] & 1);
            long seq = table[2 * s + 1] >>> 1;
            counted[seg]++;
            long[] r = ring[seg];
            if (seq >= head[seg] || r[(int) (seq & (r.length - 1))] != key) {
                throw new IllegalStateException("ghost " + key + " names ring position " + seq + " of segment " + seg
                        + ", which does not hold it");
            }
        }
        int[] inRings = new int[2];
        for (int seg = 0; seg < 2; seg++) {
            long[] r = ring[seg];
            for (long q = tail[seg]; q < head[seg]; q++) {
                if (r[(int) (q & (r.length - 1))] != 0) {
                    inRings[seg]++;
                }
            }
        }
        if (occupied != used || !Arrays.equals(counted, live) || !Arrays.equals(inRings, live)) {
            throw new IllegalStateException("ghost counts drifted: table " + occupied + "/" + used + ", segments "
                    + Arrays.toString(counted) + " in the table and " + Arrays.toString(inRings) + " in the rings vs "
                    + Arrays.toString(live));
        }
    }
}
