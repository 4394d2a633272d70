package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Random configurations (scope, policy, sizes, DEVICE budget) and random sequences of paged steps
 * (with token grouping when a batch does not fit) and resizes (some refused for lack of DEVICE
 * memory). After every step: the pager's structural invariants, byte equality of every resident
 * slot with its master, routed experts resident, capacity bounds, DEVICE allocations equal to the
 * slots; for LRU, residency equal to a reference model. At the end: no allocation left.
 */
class ExpertPagerPropertyTest {

    @Test
    void invariantsHoldAfterEveryStepAndResize() {
        Property.forAll("expert pager steps and resizes", 40, random -> {
            int layers = 1 + random.nextInt(4);
            int experts = 6 + random.nextInt(15);
            int topK = 1 + random.nextInt(3);
            int k = topK + random.nextInt(experts - topK + 1);
            SlotScope scope = random.nextBoolean() ? SlotScope.PER_LAYER : SlotScope.SHARED;
            boolean lru = random.nextBoolean();
            ExpertPolicy policy = lru ? new LruExpertPolicy() : new LfuExpertPolicy(1 + random.nextInt(40));
            int tensors = 1 + random.nextInt(3);
            Object[] spec = new Object[2 * tensors];
            for (int t = 0; t < tensors; t++) {
                spec[2 * t] = "t" + t;
                spec[2 * t + 1] = 1 + random.nextInt(1500);
            }
            ExpertLayout layout = ExpertLayout.of(spec);
            long slotBytes = ExpertFixture.slotBytes(layout);
            int maxSlots = layers * (k + random.nextInt(experts - k + 1)); // DEVICE budget: k up to some larger k
            long budget = maxSlots * slotBytes;
            String context = "layers=" + layers + " experts=" + experts + " topK=" + topK + " k=" + k + " " + scope + " "
                    + policy.name() + " budgetSlots=" + maxSlots;
            try (ExpertFixture f = new ExpertFixture(layout, layers, experts, budget, random.nextLong())) {
                ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(topK).slotsPerLayer(k).scope(scope)
                        .policy(policy).build();
                LruModel model = lru ? new LruModel(layers, experts, scope, k) : null;
                double skew = 0.5 + random.nextDouble() * 2;
                for (int step = 0; step < 60; step++) {
                    String at = context + " step " + step;
                    if (random.nextInt(8) == 0) {
                        int units = topK + random.nextInt(experts - topK + 1);
                        int[][] mapsBefore = maps(pager);
                        long usedBefore = f.device.used();
                        int unitsBefore = pager.units();
                        boolean done = pager.resize(units);
                        boolean fits = (long) layers * units * slotBytes <= budget;
                        assertThat(done).as(at + ": resize to " + units + " succeeds exactly when it fits").isEqualTo(fits);
                        if (done) {
                            assertThat(pager.units()).isEqualTo(units);
                            if (model != null) {
                                model.resize(units);
                            }
                        } else {
                            assertThat(pager.units()).isEqualTo(unitsBefore);
                            assertThat(maps(pager)).as(at + ": refused resize leaves the maps").isDeepEqualTo(mapsBefore);
                            assertThat(f.device.used()).isEqualTo(usedBefore);
                        }
                    } else {
                        int layer = random.nextInt(layers);
                        int tokens = 1 + random.nextInt(4);
                        int[][] routed = new int[tokens][];
                        for (int t = 0; t < tokens; t++) {
                            routed[t] = route(random, experts, topK, skew, layer);
                        }
                        TokenGroups groups = pager.plan(layer, routed);
                        for (int[] group : groups.groups()) {
                            int[] map = pager.page(layer, routed, group);
                            for (int t : group) {
                                for (int e : routed[t]) {
                                    assertThat(map[e]).as(at + ": routed expert " + e + " of layer " + layer + " resident").isNotNegative();
                                }
                            }
                            if (model != null) {
                                model.page(layer, routed, group);
                            }
                        }
                    }
                    pager.checkInvariants();
                    pager.verifyResidentBytes();
                    assertThat(f.device.allocationCount()).as(at).isEqualTo(pager.slots());
                    assertThat(f.device.used()).as(at).isLessThanOrEqualTo(budget);
                    int total = 0;
                    for (int l = 0; l < layers; l++) {
                        total += pager.resident(l);
                        if (scope == SlotScope.PER_LAYER) {
                            assertThat(pager.resident(l)).as(at).isLessThanOrEqualTo(pager.units());
                        }
                    }
                    assertThat(total).as(at).isLessThanOrEqualTo(pager.units() * layers);
                    if (model != null) {
                        for (int l = 0; l < layers; l++) {
                            for (int e = 0; e < experts; e++) {
                                assertThat(pager.slotOf(l, e) >= 0).as(at + ": LRU model residency of layer " + l + " expert " + e)
                                        .isEqualTo(model.resident(l, e));
                            }
                        }
                    }
                }
                long fetched = pager.stats().bytesFetched();
                assertThat(fetched).isEqualTo(pager.stats().misses() * layout.bytes());
                pager.close();
                assertThat(f.device.allocationCount()).isZero();
                assertThat(f.device.used()).isZero();
            }
        });
    }

    private static int[][] maps(ExpertPager pager) {
        int[][] m = new int[pager.layers()][];
        for (int l = 0; l < m.length; l++) {
            m[l] = pager.expertMap(l).clone();
        }
        return m;
    }

    /** top-K distinct experts, skewed towards low ids, the skew shifted per layer. */
    private static int[] route(SplittableRandom random, int experts, int topK, double skew, int layer) {
        LinkedHashSet<Integer> ids = new LinkedHashSet<>();
        while (ids.size() < topK) {
            int e = (int) (experts * Math.pow(random.nextDouble(), skew * (1 + layer % 2)));
            ids.add(Math.min(experts - 1, e));
        }
        int[] out = ids.stream().mapToInt(Integer::intValue).toArray();
        if (random.nextInt(4) == 0) { // a duplicate id now and then
            out = java.util.Arrays.copyOf(out, out.length + 1);
            out[out.length - 1] = out[0];
        }
        return out;
    }

    /** LRU residency as the seed describes it, written the plain way (recency lists of keys). */
    private static final class LruModel {
        final int layers;
        final int experts;
        final SlotScope scope;
        int k;
        final List<List<Integer>> recency = new ArrayList<>(); // per group, least recent first

        LruModel(int layers, int experts, SlotScope scope, int k) {
            this.layers = layers;
            this.experts = experts;
            this.scope = scope;
            this.k = k;
            int groups = scope == SlotScope.PER_LAYER ? layers : 1;
            for (int g = 0; g < groups; g++) {
                recency.add(new ArrayList<>());
            }
        }

        int capacity() {
            return scope == SlotScope.PER_LAYER ? k : k * layers;
        }

        List<Integer> list(int layer) {
            return recency.get(scope == SlotScope.PER_LAYER ? layer : 0);
        }

        void page(int layer, int[][] routed, int[] tokens) {
            LinkedHashSet<Integer> keys = new LinkedHashSet<>();
            for (int t : tokens) {
                for (int e : routed[t]) {
                    keys.add(layer * experts + e);
                }
            }
            List<Integer> list = list(layer);
            List<Integer> misses = new ArrayList<>();
            for (int key : keys) {
                if (list.remove((Integer) key)) {
                    list.add(key);
                } else {
                    misses.add(key);
                }
            }
            for (int key : misses) {
                if (list.size() == capacity()) {
                    int victim = list.stream().filter(x -> !keys.contains(x)).findFirst().orElseThrow();
                    list.remove((Integer) victim);
                }
                list.add(key);
            }
        }

        void resize(int units) {
            k = units;
            for (List<Integer> list : recency) {
                while (list.size() > capacity()) {
                    list.remove(0);
                }
            }
        }

        boolean resident(int layer, int expert) {
            return list(layer).contains(layer * experts + expert);
        }
    }
}
