package dev.strata.cache.policy;

import java.util.Arrays;

/**
 * The keys recently evicted from the two segments of a policy ({@link PrefixAwarePolicy}'s
 * segments, {@link AdaptiveReachPolicy}'s sides and rules), as bare key hashes: for each segment
 * a FIFO ring of at most {@code limit} hashes, and one open-addressing table (linear probing,
 * backward-shift deletion) from a hash's fingerprint to the segment and ring position that hold
 * the hash, so that "was this key evicted lately, and from which segment?" is O(1).
 *
 * <p>Design note. A policy asks this table at every insert and tells it at every eviction, and on
 * a tier of tens of thousands of blocks each question is a probe at a random place of a table of
 * megabytes: a cache miss. So a table entry is one {@code long} of 8 bytes (fingerprint 32 bits,
 * ring position 31 bits, segment 1 bit; with 16 bytes a slot, the KV block manager's bookkeeping
 * of a block that misses ran at 1.9–2.3 M blocks/s, and at 3.5 M with no table at all) and the
 * table keeps 2 to 6 slots per ghost:
 * <ul>
 *   <li><b>Fingerprint.</b> The hash's upper 32 bits (0 read as 1, so no entry is 0, the empty
 *       slot); the home slot is derived from the fingerprint alone, so deletion and rehashing
 *       need nothing else. A fingerprint that matches is confirmed against the ring, which holds
 *       the whole hash: the table answers exactly for whole hashes, as a table of whole hashes
 *       would.</li>
 *   <li><b>Ring position.</b> Only its lower {@code seqBits} bits (31) are kept; the position is
 *       the newest one below the segment's head with those bits. That is exact while no entry is
 *       {@code 2^seqBits} records old: a ring holds at most {@code 2^(seqBits-2)} positions, and
 *       stale entries are swept at least every {@code 2^(seqBits-2)} records, so no entry is ever
 *       {@code 2^(seqBits-1)} records old.</li>
 *   <li><b>Lazy forgetting.</b> When a ring drops its oldest ghost, the table entry is left in
 *       place and is <em>stale</em> from then on (its ring position is behind the ring's tail), so
 *       a record costs one probe run of the table, not a second one for the ghost it pushes out,
 *       whose slot is a cache miss by then. A probe that meets a stale entry deletes it; when the
 *       table would pass half full (or the sweep period above ends), stale entries are dropped in
 *       one pass, at the same size while live ghosts fill a third of it or less, else doubling:
 *       a few sequential reads per record.</li>
 * </ul>
 *
 * <p>There is no per-entry object. Arrays grow (doubling) only while {@code limit} grows, i.e.
 * while the tier fills up; after that nothing is allocated. A hash collision (two keys with one
 * 64-bit hash) can at worst make a key look like a ghost it is not, which only nudges the
 * adaptation once.
 *
 * <p>Invariants: every table entry that is not stale names a ring position holding a hash with
 * its fingerprint, and every hash a ring holds has such an entry; each ring holds at most
 * {@code limit} entries; a hash is in the table at most once (the newest eviction, or a stale
 * entry); no entry is {@code 2^(seqBits-1)} records older than its segment's head.
 *
 * <p>Threads: not thread-safe; guarded by the owning policy's lock.
 */
final class GhostTable {
    static final int NONE = -1;
    private static final int SEQ_BITS = 31; // bits of a ring position kept in an entry

    private final long seqMask; // (1 << seqBits) - 1
    private final long sweepPeriod; // records between sweeps at the longest; also the most positions a ring holds: 2^(seqBits-2)
    private final long[][] ring = {new long[16], new long[16]}; // [segment][seq & mask] key hash (0: gone)
    private final long[] head = new long[2]; // [segment] sequence number of the next entry
    private final long[] tail = new long[2]; // [segment] sequence number of the oldest entry
    private final int[] live = new int[2]; // [segment] ghosts recorded and neither taken nor forgotten
    private long[] table = new long[64]; // [slot] fingerprint << 32 | (seq & seqMask) << 1 | segment; 0 = empty
    private int used; // occupied slots, stale entries included
    private long recordsSinceSweep; // records since stale entries were last dropped

    GhostTable() {
        this(SEQ_BITS);
    }

    /** A table keeping {@code seqBits} bits of each ring position (tests use few, to wrap them). */
    GhostTable(int seqBits) {
        if (seqBits < 4 || seqBits > SEQ_BITS) {
            throw new IllegalArgumentException("ring position bits must lie in [4, " + SEQ_BITS + "], got " + seqBits);
        }
        this.seqMask = (1L << seqBits) - 1;
        this.sweepPeriod = 1L << (seqBits - 2);
    }

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
        take(h); // an older ghost of the same key is superseded
        long keep = Math.min(Math.max(1, limit), sweepPeriod);
        while (head[segment] - tail[segment] >= keep) {
            forgetOldest(segment);
        }
        long[] r = ring[segment];
        if (head[segment] - tail[segment] == r.length) {
            grow(segment);
            r = ring[segment];
        }
        long seq = head[segment]++;
        r[(int) (seq & (r.length - 1))] = h;
        if (2 * (used + 1) > table.length || ++recordsSinceSweep >= sweepPeriod) {
            // drop the stale entries; double unless live ghosts fill a third of the table or less
            rehash(3L * (live[0] + live[1] + 1) <= table.length ? table.length : table.length * 2);
        }
        int mask = table.length - 1;
        int fp = fingerprint(h);
        int i = slot(fp, mask);
        while (table[i] != 0) {
            i = (i + 1) & mask;
        }
        table[i] = (long) fp << 32 | (seq & seqMask) << 1 | segment;
        used++;
        live[segment]++;
    }

    /** If {@code hash} is a ghost, forgets it and returns its segment; else {@link #NONE}. */
    int take(long hash) {
        long h = nonZero(hash);
        int fp = fingerprint(h);
        int mask = table.length - 1;
        int i = slot(fp, mask);
        long e;
        while ((e = table[i]) != 0) {
            if ((int) (e >>> 32) == fp) {
                int seg = (int) (e & 1);
                long seq = seqOf(e);
                if (seq < tail[seg]) { // a forgotten ghost, of this hash or of another with its fingerprint
                    delete(i);
                    continue; // the slot now holds the next entry of the run, or is empty
                }
                long[] r = ring[seg];
                int at = (int) (seq & (r.length - 1));
                if (r[at] == h) {
                    r[at] = 0;
                    delete(i);
                    live[seg]--;
                    return seg;
                }
            }
            i = (i + 1) & mask;
        }
        return NONE;
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
        int mask = table.length - 1;
        int hole = i;
        int j = i;
        while (true) {
            j = (j + 1) & mask;
            long e = table[j];
            if (e == 0) {
                break;
            }
            int home = slot((int) (e >>> 32), mask);
            // move j into the hole unless its home lies cyclically in (hole, j]
            boolean stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                table[hole] = e;
                hole = j;
            }
        }
        table[hole] = 0;
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
        table = new long[capacity];
        int mask = capacity - 1;
        used = 0;
        recordsSinceSweep = 0;
        for (long e : old) {
            if (e != 0 && seqOf(e) >= tail[(int) (e & 1)]) {
                int i = slot((int) (e >>> 32), mask);
                while (table[i] != 0) {
                    i = (i + 1) & mask;
                }
                table[i] = e;
                used++;
            }
        }
    }

    /** The ring position an entry names: the newest below its segment's head with the kept bits. */
    private long seqOf(long entry) {
        long h = head[(int) (entry & 1)];
        return h - ((h - (entry >>> 1)) & seqMask);
    }

    /** Slots in the table (a power of two); package-private for tests. */
    int slots() {
        return table.length;
    }

    private static int fingerprint(long h) {
        int fp = (int) (h >>> 32);
        return fp == 0 ? 1 : fp;
    }

    private static int slot(int fingerprint, int mask) {
        int x = fingerprint * 0x9E3779B9;
        return (x ^ (x >>> 16)) & mask;
    }

    private static long nonZero(long hash) {
        return hash == 0 ? 1 : hash;
    }

    /** For tests: every invariant listed above, or an exception naming the broken one. */
    void check() {
        int[] counted = new int[2];
        int occupied = 0;
        java.util.Set<Long> hashes = new java.util.HashSet<>();
        for (long e : table) {
            if (e == 0) {
                continue;
            }
            occupied++;
            int seg = (int) (e & 1);
            long seq = seqOf(e);
            if (seq < tail[seg]) {
                continue; // stale
            }
            counted[seg]++;
            long[] r = ring[seg];
            long key = r[(int) (seq & (r.length - 1))];
            if (seq >= head[seg] || key == 0 || fingerprint(key) != (int) (e >>> 32)) {
                throw new IllegalStateException("entry " + Long.toHexString(e) + " names ring position " + seq + " of segment "
                        + seg + ", which does not hold a hash with its fingerprint");
            }
            if (!hashes.add(key)) {
                throw new IllegalStateException("ghost " + key + " is in the table twice");
            }
        }
        int[] inRings = new int[2];
        for (int seg = 0; seg < 2; seg++) {
            long[] r = ring[seg];
            if (head[seg] - tail[seg] > sweepPeriod) {
                throw new IllegalStateException("ring " + seg + " holds " + (head[seg] - tail[seg]) + " positions, over "
                        + sweepPeriod);
            }
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
