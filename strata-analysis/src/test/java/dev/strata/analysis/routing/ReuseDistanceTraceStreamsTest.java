package dev.strata.analysis.routing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.curve.ReuseDistanceTracker;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link ReuseDistanceTracker} gives, reference by reference, the distances of a plain recency
 * stack walk on streams derived from Strata's trace generators (a multi-turn KV block stream and
 * the expert stream of a routing trace), first sights included, and on seeded random streams whose
 * distinct items outgrow the tracker's initial window and map many times.
 */
class ReuseDistanceTraceStreamsTest {

    /** Distances by walking a recency stack (most recent last): the obvious O(distinct) algorithm. */
    private static int[] stackDistances(long[] stream) {
        long[] stack = new long[16];
        int depth = 0;
        int[] out = new int[stream.length];
        for (int i = 0; i < stream.length; i++) {
            long item = stream[i];
            int at = depth - 1;
            while (at >= 0 && stack[at] != item) {
                at--;
            }
            if (at < 0) {
                out[i] = ReuseDistanceTracker.FIRST_SIGHT;
                if (depth == stack.length) {
                    stack = Arrays.copyOf(stack, depth * 2);
                }
                stack[depth++] = item;
            } else {
                out[i] = depth - 1 - at;
                System.arraycopy(stack, at + 1, stack, at, depth - 1 - at);
                stack[depth - 1] = item;
            }
        }
        return out;
    }

    private static void assertSameDistances(long[] stream, int expectedItems) {
        int[] expected = stackDistances(stream);
        ReuseDistanceTracker t = new ReuseDistanceTracker(expectedItems);
        long firstSights = 0;
        for (int i = 0; i < stream.length; i++) {
            int d = t.access(stream[i]);
            assertThat(d).as("distance of reference %d (item %d)", i, stream[i]).isEqualTo(expected[i]);
            if (d == ReuseDistanceTracker.FIRST_SIGHT) {
                firstSights++;
            }
        }
        assertThat(t.compulsory()).isEqualTo(firstSights).isEqualTo(Arrays.stream(stream).distinct().count());
        assertThat(t.references()).isEqualTo(stream.length);
        for (int d = 0; d < 64; d++) {
            final int dd = d;
            assertThat(t.count(d)).as("references at distance %d", d)
                    .isEqualTo(Arrays.stream(expected).filter(x -> x == dd).count());
        }
    }

    @Test
    void kvBlockStreamMatchesTheStackWalk() {
        long[][] holder = {new long[1024]};
        int[] n = {0};
        new SyntheticKvBlockStream(60, 8, 4, 16, 24, 4, 2, 7).forEach(id -> {
            if (n[0] == holder[0].length) {
                holder[0] = Arrays.copyOf(holder[0], n[0] * 2);
            }
            holder[0][n[0]++] = id;
        });
        long[] stream = Arrays.copyOf(holder[0], n[0]);
        assertThat(stream.length).isGreaterThan(5_000);
        assertSameDistances(stream, 1);
    }

    @Test
    void expertStreamOfARoutingTraceMatchesTheStackWalk() {
        RoutingTraceGenerator g = new RoutingTraceGenerator(RoutingWorkload.defaults().withShape(4, 32, 4).withLength(2, 2, 16, 64, 16));
        long[] stream = new long[1024];
        int n = 0;
        while (g.hasNext() && n < 60_000) {
            RoutingRecord r = g.next();
            if (r instanceof RoutingStep s) {
                for (int l = 0; l < s.layers(); l++) {
                    for (int tok = 0; tok < s.tokens(); tok++) {
                        for (int k = 0; k < s.topK(); k++) {
                            if (n == stream.length) {
                                stream = Arrays.copyOf(stream, n * 2);
                            }
                            stream[n++] = ((long) l << 32) | s.expert(l, tok, k);
                        }
                    }
                }
            }
        }
        stream = Arrays.copyOf(stream, n);
        assertThat(stream.length).isGreaterThan(5_000);
        assertSameDistances(stream, 1);
    }

    @Test
    void seededRandomStreamsWithGrowingItemSetsMatchTheStackWalk() {
        SplittableRandom r = new SplittableRandom(20_261_126L);
        for (int round = 0; round < 8; round++) {
            int items = 1 + r.nextInt(round % 2 == 0 ? 40 : 5_000);
            long salt = r.nextLong();
            long[] stream = new long[10_000 + r.nextInt(10_000)];
            for (int i = 0; i < stream.length; i++) {
                // a hot set and the whole range in turn; ids are arbitrary longs (-1 and 0 included)
                int id = (i / 2_000) % 2 == 0 ? r.nextInt(1 + items / 8) : r.nextInt(items);
                stream[i] = id == 0 ? -1L : id == 1 ? 0L : id * 0x9E37_79B9_7F4A_7C15L ^ salt;
            }
            assertSameDistances(stream, round % 3 == 0 ? 1 : items);
        }
    }
}
