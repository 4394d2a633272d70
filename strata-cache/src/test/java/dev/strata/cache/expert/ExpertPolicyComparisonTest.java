package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.curve.MissCurve;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** The policies on the same traces: where a shared pool and frequency beat per-layer LRU, and LRU's exact miss curve. */
class ExpertPolicyComparisonTest {

    static final ExpertLayout LAYOUT = ExpertLayout.single(300);

    /** trace[step][layer]: the experts routed in that layer at that step. */
    static ExpertPagerStats replay(int[][][] trace, int layers, int experts, int topK, int k, SlotScope scope,
                                   Supplier<ExpertPolicy> policy) {
        try (ExpertFixture f = new ExpertFixture(LAYOUT, layers, experts, (long) layers * k * 4096, 5);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(topK).slotsPerLayer(k).scope(scope)
                     .policy(policy.get()).build()) {
            for (int[][] step : trace) {
                for (int l = 0; l < layers; l++) {
                    pager.page(l, step[l]);
                }
            }
            pager.checkInvariants();
            pager.verifyResidentBytes();
            return pager.stats();
        }
    }

    @Test
    void aSharedPoolServesASkewedLayerThatAFixedSplitThrashes() {
        // Layer 0 routes to 2 experts only; layer 1 cycles over 6. k = 4 per layer: layer 1 cannot
        // keep its 6 under a fixed split, while the shared pool of 8 holds 2 + 6.
        int steps = 300;
        int[][][] trace = new int[steps][2][];
        for (int s = 0; s < steps; s++) {
            trace[s][0] = new int[] {0, 1};
            trace[s][1] = new int[] {2 * (s % 3), 2 * (s % 3) + 1};
        }
        ExpertPagerStats perLayer = replay(trace, 2, 16, 2, 4, SlotScope.PER_LAYER, LruExpertPolicy::new);
        ExpertPagerStats shared = replay(trace, 2, 16, 2, 4, SlotScope.SHARED, LruExpertPolicy::new);
        System.out.printf("skewed layers: per-layer LRU hit ratio %.3f (layer 1: %.3f), shared LRU %.3f (layer 1: %.3f)%n",
                perLayer.hitRatio(), perLayer.layers().get(1).hitRatio(), shared.hitRatio(), shared.layers().get(1).hitRatio());
        assertThat(perLayer.layers().get(1).hits()).as("fixed split: layer 1 thrashes").isZero();
        assertThat(shared.misses()).as("shared pool: only first sights miss").isEqualTo(8);
        assertThat(shared.hitRatio()).isGreaterThan(perLayer.hitRatio() + 0.4);
        assertThat(shared.bytesFetched()).isLessThan(perLayer.bytesFetched() / 10);
    }

    @Test
    void frequencyKeepsTheHotSetThroughBurstsOfOneTimeExperts() {
        // Hot experts 0..3 in every non-burst step; every 10 steps a burst of 3 steps routes 6
        // experts seen once. LRU lets each burst flush the hot set; LFU keeps it.
        int steps = 400;
        int[][][] trace = new int[steps][1][];
        int cold = 4;
        for (int s = 0; s < steps; s++) {
            if (s % 10 >= 7) {
                trace[s][0] = new int[] {cold, cold + 1};
                cold = cold + 2 >= 64 ? 4 : cold + 2;
            } else {
                trace[s][0] = s % 2 == 0 ? new int[] {0, 1} : new int[] {2, 3};
            }
        }
        ExpertPagerStats lru = replay(trace, 1, 64, 2, 6, SlotScope.PER_LAYER, LruExpertPolicy::new);
        ExpertPagerStats lfu = replay(trace, 1, 64, 2, 6, SlotScope.PER_LAYER, LfuExpertPolicy::new);
        System.out.printf("hot set with bursts: LRU hit ratio %.3f, LFU with aging %.3f%n", lru.hitRatio(), lfu.hitRatio());
        assertThat(lfu.hitRatio()).isGreaterThan(lru.hitRatio() + 0.1);
        assertThat(lfu.misses()).isLessThan(lru.misses());
    }

    @Test
    void agingLetsFrequencyFollowAChangeOfTopic() {
        // Topic A (experts 0..5) for 2000 steps, then topic B (6..11). With aging, LFU settles on B;
        // without, A's large counts keep its experts resident and B's experts evict each other.
        int steps = 2600;
        int[][][] trace = new int[steps][1][];
        SplittableRandom random = new SplittableRandom(3);
        for (int s = 0; s < steps; s++) {
            int base = s < 2000 ? 0 : 6;
            int a = random.nextInt(6);
            int b = (a + 1 + random.nextInt(5)) % 6;
            trace[s][0] = new int[] {base + a, base + b};
        }
        ExpertPagerStats aging = replay(trace, 1, 16, 2, 6, SlotScope.PER_LAYER, () -> new LfuExpertPolicy(64));
        ExpertPagerStats agingUntil2300 = replay(java.util.Arrays.copyOf(trace, 2300), 1, 16, 2, 6, SlotScope.PER_LAYER,
                () -> new LfuExpertPolicy(64));
        ExpertPagerStats noAging = replay(trace, 1, 16, 2, 6, SlotScope.PER_LAYER, () -> new LfuExpertPolicy(Integer.MAX_VALUE));
        System.out.printf("change of topic: LFU misses with aging %d (last 300 steps: %d), without aging %d%n", aging.misses(),
                aging.misses() - agingUntil2300.misses(), noAging.misses());
        assertThat(aging.misses() - agingUntil2300.misses()).as("settled on topic B within 300 steps").isZero();
        assertThat(noAging.misses()).as("without aging topic A's counts hold its slots").isGreaterThan(aging.misses() + 100);
    }

    @Test
    void lruMissesMatchTheReuseDistanceMissCurveAtEveryCapacity() {
        int experts = 24;
        int steps = 3000;
        SplittableRandom random = new SplittableRandom(9);
        int[][][] trace = new int[steps][1][];
        List<Integer> refs = new ArrayList<>();
        for (int s = 0; s < steps; s++) {
            int e = (int) (experts * Math.pow(random.nextDouble(), 2));
            trace[s][0] = new int[] {e};
            refs.add(e);
        }
        double[] histogram = new double[experts + 1];
        int compulsory = 0;
        for (int i = 0; i < refs.size(); i++) {
            int previous = refs.subList(0, i).lastIndexOf(refs.get(i));
            if (previous < 0) {
                compulsory++;
            } else {
                histogram[(int) refs.subList(previous + 1, i).stream().distinct().count()]++;
            }
        }
        MissCurve curve = MissCurve.fromReuseHistogram(histogram, compulsory);
        for (int k = 1; k <= experts; k++) {
            ExpertPagerStats stats = replay(trace, 1, experts, 1, k, SlotScope.PER_LAYER, LruExpertPolicy::new);
            assertThat((double) stats.misses()).as("LRU misses at k = %d", k).isEqualTo(curve.misses(k));
        }
    }
}
