package dev.strata.cache.curve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Exact reuse distances and miss curves against the obvious algorithms; its LRU reference is shared through the test jar. */
public class ReuseDistanceTrackerTest {

    /** Misses of a plain LRU cache of {@code capacity} items over {@code stream}, first sights included. */
    public static long lruMisses(long[] stream, int capacity) {
        LinkedHashMap<Long, Boolean> lru = new LinkedHashMap<>(16, 0.75f, true);
        long misses = 0;
        for (long item : stream) {
            if (lru.get(item) != null) {
                continue;
            }
            misses++;
            if (capacity == 0) {
                continue;
            }
            if (lru.size() == capacity) {
                Iterator<Long> eldest = lru.keySet().iterator();
                eldest.next();
                eldest.remove();
            }
            lru.put(item, Boolean.TRUE);
        }
        return misses;
    }

    /** Reuse distances by walking a recency stack: the obvious O(distinct) algorithm. */
    static int[] stackDistances(long[] stream) {
        List<Long> stack = new ArrayList<>(); // most recent last
        int[] out = new int[stream.length];
        for (int i = 0; i < stream.length; i++) {
            int at = stack.lastIndexOf(stream[i]);
            out[i] = at < 0 ? ReuseDistanceTracker.FIRST_SIGHT : stack.size() - 1 - at;
            if (at >= 0) {
                stack.remove(at);
            }
            stack.add(stream[i]);
        }
        return out;
    }

    static void assertCurveMatchesLru(long[] stream) {
        ReuseDistanceTracker t = new ReuseDistanceTracker(4);
        for (long item : stream) {
            t.access(item);
        }
        MissCurve curve = t.missCurve();
        long distinct = java.util.Arrays.stream(stream).distinct().count();
        assertThat(t.distinct()).isEqualTo(distinct);
        assertThat(curve.compulsory()).isEqualTo(distinct);
        assertThat(curve.references()).isEqualTo(stream.length);
        for (int c = 0; c <= distinct + 2; c++) {
            assertThat(curve.misses(c)).as("misses at capacity %d", c).isEqualTo(lruMisses(stream, c));
        }
        for (int c = 1; c <= curve.maxCapacity(); c++) {
            assertThat(curve.misses(c)).isLessThanOrEqualTo(curve.misses(c - 1));
        }
    }

    @Test
    void randomStreamsMatchLruAtEveryCapacity() {
        Property.forAll("random streams vs LRU", 40, r -> {
            int items = 1 + r.nextInt(r.nextBoolean() ? 8 : 150);
            long[] stream = new long[r.nextInt(1500)];
            long salt = r.nextLong();
            for (int i = 0; i < stream.length; i++) {
                stream[i] = (r.nextInt(items) * 0x9E37_79B9_7F4A_7C15L) ^ salt; // arbitrary longs, negatives too
            }
            assertCurveMatchesLru(stream);
        });
    }

    @Test
    void zipfStreamsMatchLruAtEveryCapacity() {
        Property.forAll("zipf streams vs LRU", 15, r -> {
            int items = 20 + r.nextInt(200);
            double s = 0.5 + r.nextDouble() * 1.2;
            double[] cdf = new double[items];
            double sum = 0;
            for (int i = 0; i < items; i++) {
                sum += 1 / Math.pow(i + 1, s);
                cdf[i] = sum;
            }
            long[] stream = new long[2000];
            for (int i = 0; i < stream.length; i++) {
                double u = r.nextDouble() * sum;
                int lo = java.util.Arrays.binarySearch(cdf, u);
                stream[i] = lo >= 0 ? lo : -lo - 1;
            }
            assertCurveMatchesLru(stream);
        });
    }

    @Test
    void adversarialStreamsMatchLru() {
        for (int n : new int[] {1, 2, 7, 64, 129}) {
            long[] cyclic = new long[(n + 1) * 9 + 3]; // a cyclic scan of n+1 items: LRU of n misses every time
            for (int i = 0; i < cyclic.length; i++) {
                cyclic[i] = i % (n + 1);
            }
            assertCurveMatchesLru(cyclic);
            ReuseDistanceTracker t = new ReuseDistanceTracker();
            for (long x : cyclic) {
                t.access(x);
            }
            assertThat(t.missCurve().misses(n)).isEqualTo(cyclic.length);
            assertThat(t.missCurve().misses(n + 1)).isEqualTo(n + 1);

            long[] distinct = new long[n * 13];
            for (int i = 0; i < distinct.length; i++) {
                distinct[i] = -5L * i - 1;
            }
            assertCurveMatchesLru(distinct);

            long[] one = new long[n * 5 + 1];
            java.util.Arrays.fill(one, 42L);
            assertCurveMatchesLru(one);

            List<Long> saw = new ArrayList<>(); // sawtooth: 0..n, n..0, 0..n, ...
            for (int rep = 0; rep < 6; rep++) {
                for (int i = 0; i <= n; i++) {
                    saw.add((long) (rep % 2 == 0 ? i : n - i));
                }
            }
            assertCurveMatchesLru(saw.stream().mapToLong(Long::longValue).toArray());
        }
    }

    @Test
    void compactionKeepsEveryDistanceExact() {
        Property.forAll("compaction exact", 6, r -> {
            int items = 1 + r.nextInt(r.nextBoolean() ? 30 : 3000);
            long[] stream = new long[20_000 + r.nextInt(20_000)];
            int hot = 1 + r.nextInt(Math.max(1, items / 10));
            for (int i = 0; i < stream.length; i++) {
                // phases: a hot set, then the whole range, so the window sees both few and many live items
                stream[i] = (i / 5000) % 2 == 0 ? r.nextInt(hot) : r.nextInt(items);
            }
            int[] expected = stackDistances(stream);
            ReuseDistanceTracker t = new ReuseDistanceTracker(1);
            for (int i = 0; i < stream.length; i++) {
                assertThat(t.access(stream[i])).as("distance of reference %d", i).isEqualTo(expected[i]);
            }
            assertThat(t.compactions()).isGreaterThan(3);
            assertThat(t.footprintBytes()).as("memory follows distinct items, not the stream")
                    .isLessThan(200L * Math.max(1024, t.distinct()));
        });
    }

    @Test
    void clearForgetsEverything() {
        ReuseDistanceTracker t = new ReuseDistanceTracker();
        for (int i = 0; i < 5000; i++) {
            t.access(i % 37);
        }
        t.clear();
        assertThat(t.access(3)).isEqualTo(ReuseDistanceTracker.FIRST_SIGHT);
        assertThat(t.access(4)).isEqualTo(ReuseDistanceTracker.FIRST_SIGHT);
        assertThat(t.access(3)).isEqualTo(1);
        assertThat(t.missCurve().references()).isEqualTo(3);
    }

    @Test
    void decayOneEqualsTheExactCurveAndDecayForgets() {
        Property.forAll("decayed histogram", 10, r -> {
            int items = 5 + r.nextInt(100);
            int cap = 1 + r.nextInt(items + 5);
            ReuseDistanceTracker t = new ReuseDistanceTracker();
            DecayedReuseHistogram h = new DecayedReuseHistogram(cap, 1.0);
            for (int b = 0; b < 40; b++) {
                int len = r.nextInt(60);
                for (int i = 0; i < len; i++) {
                    h.record(t.access(r.nextInt(items)));
                }
                h.endBurst();
            }
            MissCurve exact = t.missCurve(cap);
            MissCurve decayed = h.missCurve();
            assertThat(decayed.compulsory()).isEqualTo(exact.compulsory());
            for (int c = 0; c <= cap + 1; c++) {
                assertThat(decayed.misses(c)).isEqualTo(exact.misses(c));
            }
        });
        // decay < 1: an old regime fades; a stream that moved from a 40-item scan to a 4-item loop reads as the loop
        ReuseDistanceTracker t = new ReuseDistanceTracker();
        DecayedReuseHistogram h = new DecayedReuseHistogram(64, 0.5);
        for (int b = 0; b < 20; b++) {
            for (int i = 0; i < 40; i++) {
                h.record(t.access(i));
            }
            h.endBurst();
        }
        for (int b = 0; b < 20; b++) {
            for (int i = 0; i < 40; i++) {
                h.record(t.access(100 + i % 4));
            }
            h.endBurst();
        }
        MissCurve live = h.missCurve();
        assertThat(live.warmMisses(4) / live.references()).isLessThan(0.001);
        assertThat(t.missCurve().warmMisses(4) / t.missCurve().references()).isGreaterThan(0.4);
    }
}
