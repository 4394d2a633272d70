package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.ObjectKind;

/**
 * Admits a block to disk only once it has been used at least {@code minUses} times (default two):
 * a prefix computed once and never reused is not worth an SSD write.
 *
 * <p>Design note: a direct-mapped table of {@code 2^k} entries, each a key fingerprint (the upper
 * 48 bits of the key's hash) and a saturating use count (the lower 16 bits). A use of a key whose
 * fingerprint is not in its entry replaces the entry (count 1), so a colliding key can only make
 * the filter forget uses (a false refusal), never admit a key seen fewer times than asked, apart
 * from a full 48-bit fingerprint collision. Memory is fixed; every operation is O(1).
 *
 * <p>Threads: thread-safe (one monitor; both operations are a few instructions).
 */
public final class SeenTwiceAdmission implements KvDiskAdmission {
    private static final long COUNT_MASK = 0xFFFFL;

    private final long[] entries; // [2^k] fingerprint << 16 | uses
    private final int mask; // entries.length - 1
    private final int minUses; // uses needed for admission
    private long admitted; // admissions granted
    private long refused; // admissions refused

    /** A filter of {@code entries} entries (rounded up to a power of two) admitting at two uses. */
    public SeenTwiceAdmission(int entries) {
        this(entries, 2);
    }

    /**
     * @throws IllegalArgumentException if {@code entries} or {@code minUses} is not positive
     */
    public SeenTwiceAdmission(int entries, int minUses) {
        if (entries <= 0 || entries > (1 << 30)) {
            throw new IllegalArgumentException("admission table entries must be in [1, 2^30], got " + entries);
        }
        if (minUses <= 0 || minUses > COUNT_MASK) {
            throw new IllegalArgumentException("uses needed for admission must be in [1, 65535], got " + minUses);
        }
        int n = Integer.highestOneBit(entries);
        if (n < entries) {
            n <<= 1;
        }
        this.entries = new long[n];
        this.mask = n - 1;
        this.minUses = minUses;
    }

    @Override
    public synchronized void recordUse(ObjectKey key) {
        long h = key.hash64();
        int i = (int) h & mask;
        long fingerprint = h & ~COUNT_MASK;
        long e = entries[i];
        if ((e & ~COUNT_MASK) == fingerprint && (e & COUNT_MASK) != 0) {
            long count = e & COUNT_MASK;
            entries[i] = count == COUNT_MASK ? e : e + 1;
        } else {
            entries[i] = fingerprint | 1;
        }
    }

    /** Uses recorded for {@code key} (0 if its entry now belongs to another key). */
    public synchronized int uses(ObjectKey key) {
        long h = key.hash64();
        long e = entries[(int) h & mask];
        return (e & ~COUNT_MASK) == (h & ~COUNT_MASK) ? (int) (e & COUNT_MASK) : 0;
    }

    @Override
    public synchronized boolean admit(ObjectKey key, ObjectKind kind, long sizeBytes) {
        long h = key.hash64();
        long e = entries[(int) h & mask];
        boolean ok = (e & ~COUNT_MASK) == (h & ~COUNT_MASK) && (e & COUNT_MASK) >= minUses;
        if (ok) {
            admitted++;
        } else {
            refused++;
        }
        return ok;
    }

    /** Admissions granted so far. */
    public synchronized long admitted() {
        return admitted;
    }

    /** Admissions refused so far. */
    public synchronized long refused() {
        return refused;
    }
}
