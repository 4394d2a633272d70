package dev.strata.cache.policy;

/**
 * A count-min sketch of 4-bit counters estimating how often each key was seen recently.
 *
 * <p>Design note: the table is a {@code long[]} of 16 four-bit counters per word; each key maps
 * to one counter in each of 4 rows (4 independently mixed hashes into the same table). An increment
 * raises each of the key's counters below 15; the estimate is the minimum. After
 * {@code sampleSize} increments (10 per tracked entry) every counter is halved, so the sketch
 * forgets old popularity (the "reset" of TinyLFU). The table grows (and forgets) when the number
 * of tracked entries outgrows it.
 *
 * <p>Threads: not thread-safe; guarded by the owning policy's lock.
 */
public final class FrequencySketch {
    private static final long[] SEEDS = {0x97CB3127F3A1D2E5L, 0xB492B66FBE98F273L, 0x9AE16A3B2F90404FL, 0xCBF29CE484222325L};
    private static final long HALF_MASK = 0x7777_7777_7777_7777L;

    private long[] table; // [power of two] words of 16 four-bit counters
    private int mask; // table.length - 1
    private int sampleSize; // increments between halvings
    private int additions; // increments since the last halving

    /** A sketch sized for about {@code expectedEntries} keys. */
    public FrequencySketch(int expectedEntries) {
        resize(expectedEntries);
    }

    /** Grows the table if {@code entries} keys no longer fit well. */
    public void ensureCapacity(int entries) {
        if (entries > table.length) {
            resize(entries);
        }
    }

    private void resize(int entries) {
        int n = Integer.highestOneBit(Math.max(16, entries - 1)) << 1;
        table = new long[n];
        mask = n - 1;
        sampleSize = 10 * n;
        additions = 0;
    }

    private static long rowHash(long keyHash, int row) {
        long h = (keyHash + SEEDS[row]) * 0x9E3779B97F4A7C15L;
        return h ^ (h >>> 29);
    }

    /** Estimated recent count of {@code keyHash}, 0 to 15. */
    public int frequency(long keyHash) {
        int min = 15;
        for (int row = 0; row < 4; row++) {
            long h = rowHash(keyHash, row);
            int index = (int) (h >>> 32) & mask;
            int shift = (int) (h & 15) << 2;
            int count = (int) ((table[index] >>> shift) & 15);
            min = Math.min(min, count);
        }
        return min;
    }

    /** Records one occurrence of {@code keyHash}. */
    public void increment(long keyHash) {
        boolean added = false;
        for (int row = 0; row < 4; row++) {
            long h = rowHash(keyHash, row);
            int index = (int) (h >>> 32) & mask;
            int shift = (int) (h & 15) << 2;
            if (((table[index] >>> shift) & 15) < 15) {
                table[index] += 1L << shift;
                added = true;
            }
        }
        if (added && ++additions >= sampleSize) {
            halve();
        }
    }

    private void halve() {
        for (int i = 0; i < table.length; i++) {
            table[i] = (table[i] >>> 1) & HALF_MASK;
        }
        additions >>>= 1;
    }
}
