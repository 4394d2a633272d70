package dev.strata.cache.curve;

import java.util.Arrays;

/**
 * Exact LRU reuse distances of one reference stream, in O(log n) per reference, and the stream's
 * exact {@link MissCurve}.
 *
 * <p>Design. Every reference gets a time (its position in a window of {@code capacity} slots).
 * A Fenwick tree over the window holds a mark at the time of each item's most recent reference,
 * so the marks after an item's previous reference time count exactly the distinct items
 * referenced since: its reuse distance. A reference clears the item's old mark and sets one at
 * the current time. Items are numbered densely on first sight by an open-addressing map from
 * {@code long} id to number (primitive arrays, linear probing, no allocation per reference). When
 * the window is used up, compaction renumbers the live marks (one per distinct item) to times
 * {@code 0..distinct-1} in their order and rebuilds the tree in linear time; the window is kept at
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

    // item map: id -> dense item number
    private long[] keys; // [mapCapacity] item ids
    private int[] numbers; // [mapCapacity] dense item numbers, EMPTY where free
    private int mapMask;

    // per item, by dense number
    private int[] lastTime; // [items] window time of the item's most recent reference

    // the window
    private int[] fenwick; // [window + 1] 1-based Fenwick tree of marks
    private int[] itemAt; // [window] dense number of the item whose last reference is at this time, EMPTY if none
    private int window; // times available before compaction
    private int now; // next time to hand out

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
        numbers = new int[mapCapacity];
        Arrays.fill(numbers, EMPTY);
        mapMask = mapCapacity - 1;
        lastTime = new int[Math.max(16, expectedItems)];
        window = Math.max(MIN_WINDOW, Integer.highestOneBit(Math.max(1, expectedItems) - 1) * 4);
        fenwick = new int[window + 1];
        itemAt = new int[window];
        Arrays.fill(itemAt, EMPTY);
        histogram = new long[Math.max(16, expectedItems)];
    }

    /**
     * Records one reference to {@code item} and returns its reuse distance: the number of distinct
     * other items referenced since its previous reference, or {@link #FIRST_SIGHT}.
     */
    public int access(long item) {
        references++;
        int slot = slotOf(item);
        int n = numbers[slot];
        int distance;
        if (n == EMPTY) {
            n = distinct++;
            keys[slot] = item;
            numbers[slot] = n;
            if (n == lastTime.length) {
                lastTime = Arrays.copyOf(lastTime, n * 2);
            }
            if (distinct * 2 > mapMask + 1) {
                growMap();
            }
            compulsory++;
            distance = FIRST_SIGHT;
        } else {
            int prev = lastTime[n];
            // one mark per distinct item; prefix(prev + 1) counts those at times 0..prev, the item's own
            // included, so the rest are the distinct items referenced since
            distance = distinct - prefix(prev + 1);
            add(prev + 1, -1);
            itemAt[prev] = EMPTY;
            if (distance >= histogram.length) {
                histogram = Arrays.copyOf(histogram, Math.max(distance + 1, histogram.length * 2));
            }
            histogram[distance]++;
        }
        if (now == window) {
            compact();
        }
        lastTime[n] = now;
        itemAt[now] = n;
        add(now + 1, 1);
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
        Arrays.fill(numbers, EMPTY);
        Arrays.fill(fenwick, 0);
        Arrays.fill(itemAt, EMPTY);
        Arrays.fill(histogram, 0);
        distinct = 0;
        now = 0;
        references = 0;
        compulsory = 0;
    }

    /** Bytes of the tracker's arrays (memory grows with distinct items, not with references). */
    public long footprintBytes() {
        return 8L * keys.length + 4L * numbers.length + 4L * lastTime.length + 4L * fenwick.length + 4L * itemAt.length
                + 8L * histogram.length;
    }

    private int slotOf(long item) {
        long h = item * 0x9E37_79B9_7F4A_7C15L;
        int i = (int) (h ^ (h >>> 29)) & mapMask;
        while (numbers[i] != EMPTY && keys[i] != item) {
            i = (i + 1) & mapMask;
        }
        return i;
    }

    private void growMap() {
        long[] oldKeys = keys;
        int[] oldNumbers = numbers;
        int capacity = (mapMask + 1) * 2;
        keys = new long[capacity];
        numbers = new int[capacity];
        Arrays.fill(numbers, EMPTY);
        mapMask = capacity - 1;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldNumbers[i] != EMPTY) {
                int s = slotOf(oldKeys[i]);
                keys[s] = oldKeys[i];
                numbers[s] = oldNumbers[i];
            }
        }
    }

    /** Renumbers the live marks to 0..live-1 in time order and rebuilds the tree; grows the window when live is over half of it. */
    private void compact() {
        compactions++;
        int live = 0;
        for (int t = 0; t < now; t++) {
            int n = itemAt[t];
            if (n != EMPTY) {
                itemAt[live] = n;
                lastTime[n] = live;
                live++;
            }
        }
        // the item being accessed has no mark right now; it gets one at time `live` after this
        int needed = (live + 1) * 2;
        if (window < needed) {
            int grown = Integer.highestOneBit(needed - 1) * 2;
            itemAt = Arrays.copyOf(itemAt, grown);
            fenwick = new int[grown + 1];
            window = grown;
        }
        Arrays.fill(itemAt, live, window, EMPTY);
        // linear Fenwick build over marks at 0..live-1
        Arrays.fill(fenwick, 0);
        for (int i = 1; i <= window; i++) {
            if (i <= live) {
                fenwick[i] += 1;
            }
            int parent = i + (i & -i);
            if (parent <= window) {
                fenwick[parent] += fenwick[i];
            }
        }
        now = live;
    }

    private void add(int i, int delta) {
        int[] f = fenwick;
        for (; i <= window; i += i & -i) {
            f[i] += delta;
        }
    }

    /** Marks at 1-based positions 1..i (times 0..i-1). */
    private int prefix(int i) {
        int[] f = fenwick;
        int s = 0;
        for (; i > 0; i -= i & -i) {
            s += f[i];
        }
        return s;
    }
}
