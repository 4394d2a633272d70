package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.testing.Property;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class TokenGrouperTest {

    @Test
    void aBatchThatFitsIsOneGroupInTokenOrder() {
        TokenGroups g = TokenGrouper.plan(new int[][] {{3, 1}, {1, 2}, {3, 3}}, 8, 3);
        assertThat(g.count()).isEqualTo(1);
        assertThat(g.group(0)).containsExactly(0, 1, 2);
        assertThat(g.union()).isEqualTo(3);
        assertThat(g.provablyFewest()).isTrue();
        assertThat(TokenGrouper.plan(new int[0][], 8, 3).count()).isZero();
    }

    @Test
    void tokensThatCannotRunAndIdsOutOfRangeAreRefusedWithTheValue() {
        assertThatThrownBy(() -> TokenGrouper.plan(new int[][] {{1, 2}, {1, 2, 3, 4}}, 8, 3))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("token 1 routes to 4 distinct experts");
        assertThatThrownBy(() -> TokenGrouper.plan(new int[][] {{1, 9}}, 8, 3)).hasMessageContaining("expert 9");
        assertThatThrownBy(() -> TokenGrouper.plan(new int[][] {{1}}, 8, 0)).hasMessageContaining("capacity");
    }

    @Test
    void overlappingTokensShareGroups() {
        // Two clusters: tokens 0, 2, 4 use experts {0..3}, tokens 1, 3, 5 use {4..7}; capacity 4.
        int[][] routed = {{0, 1}, {4, 5}, {2, 3}, {6, 7}, {0, 3}, {5, 6}};
        TokenGroups g = TokenGrouper.plan(routed, 8, 4);
        assertThat(g.count()).isEqualTo(2);
        assertThat(g.groups()).isDeepEqualTo(new int[][] {{0, 2, 4}, {1, 3, 5}});
        assertThat(g.provablyFewest()).isTrue();
    }

    @Test
    void everyGroupFitsAndTheCountIsCloseToTheExhaustiveOptimum() {
        AtomicInteger cases = new AtomicInteger();
        AtomicInteger optimal = new AtomicInteger();
        AtomicInteger worstExcess = new AtomicInteger();
        Property.forAll("token grouping against exhaustive search", 400, random -> {
            int experts = 6 + random.nextInt(12);
            int topK = 1 + random.nextInt(3);
            int capacity = topK + random.nextInt(topK + 3);
            int n = 2 + random.nextInt(8);
            int[][] routed = randomBatch(random, n, experts, topK);
            TokenGroups g = TokenGrouper.plan(routed, experts, capacity);
            checkValid(routed, g, capacity);
            int best = exhaustive(routed, experts, capacity);
            assertThat(g.count()).as("never below the optimum").isGreaterThanOrEqualTo(best);
            assertThat(best).as("the lower bound is a bound").isGreaterThanOrEqualTo(g.lowerBound());
            if (g.provablyFewest()) {
                assertThat(g.count()).isEqualTo(best);
            }
            cases.incrementAndGet();
            if (g.count() == best) {
                optimal.incrementAndGet();
            }
            worstExcess.accumulateAndGet(g.count() - best, Math::max);
        });
        double rate = optimal.get() / (double) cases.get();
        System.out.printf("token grouping: optimal in %d of %d small batches (%.1f%%), worst excess %d group(s)%n",
                optimal.get(), cases.get(), 100 * rate, worstExcess.get());
        assertThat(rate).isGreaterThanOrEqualTo(0.95);
        assertThat(worstExcess.get()).isLessThanOrEqualTo(1);
    }

    @Test
    void largePrefillBatchesSplitIntoGroupsThatFit() {
        Property.forAll("token grouping of prefill batches", 5, random -> {
            int[][] routed = randomBatch(random, 256 + random.nextInt(256), 128, 8);
            int capacity = 8 + random.nextInt(56);
            TokenGroups g = TokenGrouper.plan(routed, 128, capacity);
            checkValid(routed, g, capacity);
            assertThat(g.count()).isGreaterThanOrEqualTo(g.lowerBound());
        });
    }

    /** Each token exactly once, groups ascending and ordered by first token, every union within capacity. */
    static void checkValid(int[][] routed, TokenGroups g, int capacity) {
        boolean[] seen = new boolean[routed.length];
        int previousFirst = -1;
        for (int[] group : g.groups()) {
            assertThat(group).isNotEmpty().isSorted();
            assertThat(group[0]).isGreaterThan(previousFirst);
            previousFirst = group[0];
            long union = Arrays.stream(group).flatMap(t -> Arrays.stream(routed[t])).distinct().count();
            assertThat(union).as("union of group %s", Arrays.toString(group)).isLessThanOrEqualTo(capacity);
            for (int t : group) {
                assertThat(seen[t]).as("token %d in two groups", t).isFalse();
                seen[t] = true;
            }
        }
        for (int t = 0; t < routed.length; t++) {
            assertThat(seen[t]).as("token %d in a group", t).isTrue();
        }
    }

    /** Skewed routing: tokens draw distinct experts, low ids more often. */
    static int[][] randomBatch(SplittableRandom random, int n, int experts, int topK) {
        int[][] routed = new int[n][];
        double skew = 1 + random.nextDouble() * 2;
        for (int t = 0; t < n; t++) {
            routed[t] = random.ints(0, 1 << 20).map(x -> (int) (experts * Math.pow(x / (double) (1 << 20), skew)))
                    .distinct().limit(topK).toArray();
        }
        return routed;
    }

    /** The fewest groups by dynamic programming over token subsets (3^n). */
    static int exhaustive(int[][] routed, int experts, int capacity) {
        int n = routed.length;
        long[] bits = new long[n];
        for (int t = 0; t < n; t++) {
            for (int e : routed[t]) {
                bits[t] |= 1L << e;
            }
        }
        int full = (1 << n) - 1;
        boolean[] fits = new boolean[full + 1];
        for (int mask = 1; mask <= full; mask++) {
            long u = 0;
            for (int t = 0; t < n; t++) {
                if ((mask & (1 << t)) != 0) {
                    u |= bits[t];
                }
            }
            fits[mask] = Long.bitCount(u) <= capacity;
        }
        int[] dp = new int[full + 1];
        for (int mask = 1; mask <= full; mask++) {
            int low = mask & -mask;
            int rest = mask ^ low;
            int best = Integer.MAX_VALUE;
            for (int sub = rest; ; sub = (sub - 1) & rest) {
                int group = sub | low;
                if (fits[group]) {
                    best = Math.min(best, dp[mask ^ group] + 1);
                }
                if (sub == 0) {
                    break;
                }
            }
            dp[mask] = best;
        }
        return dp[full];
    }
}
