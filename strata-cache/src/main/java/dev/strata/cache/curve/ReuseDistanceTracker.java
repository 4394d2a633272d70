package dev.strata.cache.curve;

import java.util.Arrays;

/**
 * Exact LRU reuse distances of one reference stream, in O(log n) per reference, and the stream's
 * exact {@link MissCurve}.
 *
 * <p>Design. Every reference gets a time (its position in a window of {@code capacity} slots).
 * The window holds a mark at the time of each item's most recent reference, so the marks after an
 * item's previous reference time count exactly the distinct items referenced since: its reuse
 * distance. Marks are bits of 64-bit words, and a Fenwick tree (binary indexed tree) over the
 * words counts the marks of each prefix of words: a count is one tree walk over
 * {@code window / 64} entries plus one popcount, six fewer levels than a tree over single times. A reference clears the item's old mark and sets one at
 * the current time. The tree leaves out the word holding the current time (the open word): a
 * prefix count never reaches past the word it asks about, so no count reads the open word's tree
 * entries, and marks set or cleared in it touch only the bit; its count enters the tree once, when
 * the time moves to the next word. So a reference walks the tree at most twice (count, clear),
 * not three times. An open-addressing map from {@code long} id to the item's last time (primitive
 * arrays, linear probing, no allocation per reference) finds the old mark. When the window is used
 * up, compaction renumbers the live marks (one per distinct item) to times {@code 0..distinct-1}
 * in their order (an item's new time is the number of marks before its old one, read off per-word
 * prefix counts of the marks in one pass over the map) and rebuilds the tree in linear time; the window is kept at
 * two to four times the distinct items, so memory grows with the distinct items, never with the
 * stream, and compaction costs O(1) amortised per reference.
 *
 * <p>Distances are counted into a histogram; {@link #missCurve()} is then exact at every
 * capacity. First sights are counted apart (compulsory misses).
 *
 * <p>Confined to one thread.
 */
public final class ReuseDistanceTracker {
    /** Returned by {@link #access} for an item seen for the first time. */
    public static final int FIRST_SIGHT = -1;

    private static final int MIN_WINDOW = 1 << 10;
    private static final int EMPTY = -1;

    // item map: id -> the window time of the item's most recent reference, by open addressing
    private long[] keys; // [mapCapacity] item ids
    private int[] times; // [mapCapacity] window time of the item's last reference, EMPTY where the slot is free
    private int mapMask;

    // the window
    private long[] marks; // [window / 64] bit t % 64 of word t / 64: a mark at time t
    private int[] fenwick; // [window / 64 + 1] 1-based Fenwick tree of the marks per word
    private int window; // times available before compaction
    private int now; // next time to hand out
    private int openWord; // now / 64 (the word of the next time): its marks are not counted in the tree yet

    private int distinct;
    private long references;
    private long compulsory;
    private long[] histogram; // [d] references with reuse distance d; length grows to cover distinct items
    private long compactions;

    public ReuseDistanceTracker() {
        this(64);
    }

    /** A tracker sized for about {@code expectedItems} distinct items (it grows past that). */
    public ReuseDistanceTracker(int expectedItems) {
        int mapCapacity = Integer.highestOneBit(Math.max(16, expectedItems) * 2 - 1) * 2;
        keys = new long[mapCapacity];
        times = new int[mapCapacity];
        Arrays.fill(times, EMPTY);
        mapMask = mapCapacity - 1;
        window = Math.max(MIN_WINDOW, Integer.highestOneBit(Math.max(1, expectedItems) - 1) * 4);
        marks = new long[window >>> 6];
        fenwick = new int[(window >>> 6) + 1];
        histogram = new long[Math.max(16, expectedItems)];
    }

    /**
     * Records one reference to {@code item} and returns its reuse distance: the number of distinct
     * other items referenced since its previous reference, or {@link #FIRST_SIGHT}.
     */
    public int access(long item) {
        references++;
        int slot = slotOf(item);
        int distance;
        if (times[slot] == EMPTY) {
            if ((distinct + 1) * 2 > mapMask + 1) {
                growMap();
                slot = slotOf(item);
            }
            distinct++;
            keys[slot] = item;
            times[slot] = 0; // occupied; the mark is set below
            compulsory++;
            distance = FIRST_SIGHT;
        } else {
            int prev = times[slot];
            // one mark per distinct item; marksUpTo(prev) counts those at times 0..prev, the item's own
            // included, so the rest are the distinct items referenced since
            int word = prev >>> 6;
            long bits = marks[word];
            distance = distinct - prefix(word) - Long.bitCount(bits & (-1L >>> (63 - (prev & 63))));
            marks[word] = bits & ~(1L << prev);
            if (word != openWord) {
                add(word + 1, -1);
            }
            if (distance >= histogram.length) {
                histogram = Arrays.copyOf(histogram, Math.max(distance + 1, histogram.length * 2));
            }
            histogram[distance]++;
        }
        if (now == window) {
            compact(); // renumbers every time in the map, this item's stale one included
        }
        times[slot] = now;
        int word = now >>> 6;
        if (word != openWord) { // the time moved into the next word: the last one closes
            add(openWord + 1, Long.bitCount(marks[openWord]));
            openWord = word;
        }
        marks[word] |= 1L << now;
        now++;
        return distance;
    }

    /** References recorded. */
    public long references() {
        return references;
    }

    /** First sights recorded. */
    public long compulsory() {
        return compulsory;
    }

    /** Distinct items seen. */
    public int distinct() {
        return distinct;
    }

    /** Times the window was compacted (for tests). */
    public long compactions() {
        return compactions;
    }

    /** References with reuse distance {@code d} so far. */
    public long count(int d) {
        return d >= 0 && d < histogram.length ? histogram[d] : 0;
    }

    /** The exact miss curve at every capacity {@code 0..distinct()} (beyond it only first sights miss). */
    public MissCurve missCurve() {
        return missCurve(distinct);
    }

    /**
     * The miss curve resolved up to {@code maxCapacity}: exact at capacities {@code 0..maxCapacity},
     * distances at or beyond it counted in the last bucket.
     */
    public MissCurve missCurve(int maxCapacity) {
        if (maxCapacity < 0) {
            throw new IllegalArgumentException("maxCapacity must not be negative, got " + maxCapacity);
        }
        double[] h = new double[maxCapacity + 1];
        for (int d = 0; d < histogram.length; d++) {
            if (histogram[d] != 0) {
                h[Math.min(d, maxCapacity)] += histogram[d];
            }
        }
        return MissCurve.fromReuseHistogram(h, compulsory);
    }

    /** Forgets every reference and item. */
    public void clear() {
        Arrays.fill(times, EMPTY);
        Arrays.fill(fenwick, 0);
        Arrays.fill(marks, 0);
        Arrays.fill(histogram, 0);
        distinct = 0;
        now = 0;
        openWord = 0;
        references = 0;
        compulsory = 0;
    }

    /** Bytes of the tracker's arrays (memory grows with distinct items, not with references). */
    public long footprintBytes() {
        return 8L * keys.length + 4L * times.length + 8L * marks.length + 4L * fenwick.length + 8L * histogram.length;
    }

    private int slotOf(long item) {
        long h = item * 0x9E37_79B9_7F4A_7C15L;
        int i = (int) (h ^ (h >>> 29)) & mapMask;
        while (times[i] != EMPTY && keys[i] != item) {
            i = (i + 1) & mapMask;
        }
        return i;
    }

    /** Doubles the map; every item keeps its time. */
    private void growMap() {
        long[] oldKeys = keys;
        int[] oldTimes = times;
        int capacity = (mapMask + 1) * 2;
        keys = new long[capacity];
        times = new int[capacity];
        Arrays.fill(times, EMPTY);
        mapMask = capacity - 1;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldTimes[i] != EMPTY) {
                int s = slotOf(oldKeys[i]);
                keys[s] = oldKeys[i];
                times[s] = oldTimes[i];
            }
        }
    }

    /**
     * Renumbers the live marks to 0..live-1 in time order (an item's new time is the number of
     * marks before its old one) and rebuilds the tree; grows the window when live is over half of it.
     */
    private void compact() {
        compactions++;
        int words = window >>> 6;
        int[] before = fenwick; // scratch until the tree is rebuilt below: before[w] = marks in words 0..w-1
        int live = 0;
        for (int w = 0; w < words; w++) {
            before[w] = live;
            live += Long.bitCount(marks[w]);
        }
        int[] t = times;
        for (int i = 0; i < t.length; i++) {
            int time = t[i];
            if (time != EMPTY) { // the item being accessed has no mark: the caller overwrites its rank
                t[i] = before[time >>> 6] + Long.bitCount(marks[time >>> 6] & ((1L << time) - 1));
            }
        }
        // the item being accessed has no mark right now; it gets one at time `live` after this
        int needed = (live + 1) * 2;
        if (window < needed) {
            int grown = Integer.highestOneBit(needed - 1) * 2;
            marks = new long[grown >>> 6];
            fenwick = new int[(grown >>> 6) + 1];
            window = grown;
        }
        // marks at 0..live-1, then a linear Fenwick build over the words' counts
        words = window >>> 6;
        Arrays.fill(marks, 0);
        for (int w = 0; w < (live >>> 6); w++) {
            marks[w] = -1L;
        }
        if ((live & 63) != 0) {
            marks[live >>> 6] = -1L >>> (64 - (live & 63));
        }
        Arrays.fill(fenwick, 0);
        openWord = live >>> 6; // counted when the time leaves it
        for (int i = 1; i <= words; i++) {
            fenwick[i] += i - 1 == openWord ? 0 : Long.bitCount(marks[i - 1]);
            int parent = i + (i & -i);
            if (parent <= words) {
                fenwick[parent] += fenwick[i];
            }
        }
        now = live;
    }

    /** Adds {@code delta} to the count of word {@code i - 1} (1-based {@code i}). */
    private void add(int i, int delta) {
        int[] f = fenwick;
        int n = f.length - 1;
        for (; i <= n; i += i & -i) {
            f[i] += delta;
        }
    }

    /** Marks in words 0..i-1 (times 0..64i-1). */
    private int prefix(int i) {
        int[] f = fenwick;
        int s = 0;
        for (; i > 0; i -= i & -i) {
            s += f[i];
        }
        return s;
    }
}
