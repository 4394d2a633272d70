package dev.strata.memory.alloc;

import java.util.Arrays;

/**
 * An open-addressing hash map from non-negative {@code long} keys to {@code long} values, without
 * boxing, for allocators' live tables on hot paths.
 *
 * <p>Design: linear probing over power-of-two arrays, load factor at most 1/2, backward-shift
 * deletion (no tombstones). {@link #MISSING} (-1) marks an empty slot and is returned for absent keys,
 * so keys must be {@code >= 0}.
 *
 * <p>Threads: not thread-safe; callers lock.
 */
final class LongLongMap {

    /** Returned by {@link #get} and {@link #remove} for an absent key. */
    static final long MISSING = -1L;

    private long[] keys;    // [capacity] MISSING where empty
    private long[] values;  // [capacity]
    private int size;
    private int mask;       // capacity - 1

    LongLongMap() {
        allocate(16);
    }

    private void allocate(int capacity) {
        keys = new long[capacity];
        Arrays.fill(keys, MISSING);
        values = new long[capacity];
        mask = capacity - 1;
    }

    private static int hash(long key) {
        long h = key * 0x9E37_79B9_7F4A_7C15L;
        return (int) (h ^ (h >>> 32));
    }

    int size() {
        return size;
    }

    long get(long key) {
        int i = hash(key) & mask;
        while (true) {
            long k = keys[i];
            if (k == key) {
                return values[i];
            }
            if (k == MISSING) {
                return MISSING;
            }
            i = (i + 1) & mask;
        }
    }

    /**
     * Like {@link #get}, but safe to call while another thread modifies the map: it never fails
     * or loops forever, though its answer may be wrong. For optimistic readers that validate
     * afterwards (a {@link java.util.concurrent.locks.StampedLock} stamp) and retry under a lock.
     */
    long getOptimistic(long key) {
        long[] k = keys;      // the arrays may be replaced concurrently; work on one snapshot of each
        long[] v = values;
        int m = k.length - 1;
        int i = hash(key) & m;
        for (int probes = 0; probes < k.length; probes++) {
            long found = k[i];
            if (found == key) {
                return i < v.length ? v[i] : MISSING;
            }
            if (found == MISSING) {
                return MISSING;
            }
            i = (i + 1) & m;
        }
        return MISSING;
    }

    /** Inserts or replaces; {@code key >= 0}. */
    void put(long key, long value) {
        if (key < 0) {
            throw new IllegalArgumentException("key must be >= 0, got " + key);
        }
        if ((size + 1) * 2 > keys.length) {
            grow();
        }
        int i = hash(key) & mask;
        while (true) {
            long k = keys[i];
            if (k == key) {
                values[i] = value;
                return;
            }
            if (k == MISSING) {
                keys[i] = key;
                values[i] = value;
                size++;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /** Removes {@code key}; returns its value or {@link #MISSING}. */
    long remove(long key) {
        int i = hash(key) & mask;
        while (true) {
            long k = keys[i];
            if (k == MISSING) {
                return MISSING;
            }
            if (k == key) {
                break;
            }
            i = (i + 1) & mask;
        }
        long value = values[i];
        size--;
        // backward-shift: move later entries of the probe run into the hole
        int hole = i;
        int j = i;
        while (true) {
            j = (j + 1) & mask;
            long k = keys[j];
            if (k == MISSING) {
                break;
            }
            int home = hash(k) & mask;
            // move k if its home is not cyclically within (hole, j]
            boolean inRange = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!inRange) {
                keys[hole] = k;
                values[hole] = values[j];
                hole = j;
            }
        }
        keys[hole] = MISSING;
        return value;
    }

    /** Calls {@code action} for every entry. */
    void forEach(EntryConsumer action) {
        for (int i = 0; i < keys.length; i++) {
            if (keys[i] != MISSING) {
                action.accept(keys[i], values[i]);
            }
        }
    }

    @FunctionalInterface
    interface EntryConsumer {
        void accept(long key, long value);
    }

    private void grow() {
        long[] oldKeys = keys;
        long[] oldValues = values;
        allocate(oldKeys.length * 2);
        size = 0;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldKeys[i] != MISSING) {
                put(oldKeys[i], oldValues[i]);
            }
        }
    }
}
