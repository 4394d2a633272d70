package dev.strata.node.daemon;

import java.util.function.BiConsumer;

/**
 * A set of 128-bit keys (two longs), open addressing with linear probing and backward-shift
 * deletion, so that adds and removes allocate nothing except when the table doubles. The pair
 * (0, 0) marks empty slots in the table and is kept in a flag of its own.
 *
 * <p>Not thread-safe: owned by the daemon's polling thread.
 */
final class KeySet {
    private long[] high;
    private long[] low;
    private int size;
    private boolean hasZero; // the key (0, 0)

    KeySet() {
        high = new long[16];
        low = new long[16];
    }

    int size() {
        return size + (hasZero ? 1 : 0);
    }

    /** Adds the key; false if it was there. */
    boolean add(long h, long l) {
        if (h == 0 && l == 0) {
            boolean added = !hasZero;
            hasZero = true;
            return added;
        }
        if ((size + 1) * 2 > high.length) {
            grow();
        }
        int mask = high.length - 1;
        for (int i = slot(h, l, mask); ; i = (i + 1) & mask) {
            if (high[i] == 0 && low[i] == 0) {
                high[i] = h;
                low[i] = l;
                size++;
                return true;
            }
            if (high[i] == h && low[i] == l) {
                return false;
            }
        }
    }

    /** Removes the key; false if it was not there. */
    boolean remove(long h, long l) {
        if (h == 0 && l == 0) {
            boolean had = hasZero;
            hasZero = false;
            return had;
        }
        int mask = high.length - 1;
        int i = slot(h, l, mask);
        while (true) {
            if (high[i] == 0 && low[i] == 0) {
                return false;
            }
            if (high[i] == h && low[i] == l) {
                break;
            }
            i = (i + 1) & mask;
        }
        // backward shift: move later members of the cluster into the hole if their home allows
        int hole = i;
        for (int j = (hole + 1) & mask; high[j] != 0 || low[j] != 0; j = (j + 1) & mask) {
            int home = slot(high[j], low[j], mask);
            boolean movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
            if (movable) {
                high[hole] = high[j];
                low[hole] = low[j];
                hole = j;
            }
        }
        high[hole] = 0;
        low[hole] = 0;
        size--;
        return true;
    }

    boolean contains(long h, long l) {
        if (h == 0 && l == 0) {
            return hasZero;
        }
        int mask = high.length - 1;
        for (int i = slot(h, l, mask); high[i] != 0 || low[i] != 0; i = (i + 1) & mask) {
            if (high[i] == h && low[i] == l) {
                return true;
            }
        }
        return false;
    }

    /** Calls {@code action} for every key, then empties the set. */
    void drain(BiConsumer<Long, Long> action) {
        long[] hs = high;
        long[] ls = low;
        high = new long[16];
        low = new long[16];
        size = 0;
        if (hasZero) {
            hasZero = false;
            action.accept(0L, 0L);
        }
        for (int i = 0; i < hs.length; i++) {
            if (hs[i] != 0 || ls[i] != 0) {
                action.accept(hs[i], ls[i]);
            }
        }
    }

    private void grow() {
        long[] hs = high;
        long[] ls = low;
        high = new long[hs.length * 2];
        low = new long[hs.length * 2];
        size = 0;
        for (int i = 0; i < hs.length; i++) {
            if (hs[i] != 0 || ls[i] != 0) {
                add(hs[i], ls[i]);
            }
        }
    }

    private static int slot(long h, long l, int mask) {
        return (int) dev.strata.cache.ObjectKey.hash64(h, l) & mask;
    }
}
