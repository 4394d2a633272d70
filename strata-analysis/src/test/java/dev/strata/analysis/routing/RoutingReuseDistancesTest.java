package dev.strata.analysis.routing;

import static dev.strata.cache.curve.ReuseDistanceTrackerTest.lruMisses;
import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.routing.BurstStart;
import dev.strata.cache.routing.RoutingPhase;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceHeader;
import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RoutingReuseDistancesTest {

    static RoutingStep randomStep(SplittableRandom r, RoutingTraceHeader h, int tokens, int hotExperts) {
        int k = h.topK();
        int[] ids = new int[h.layers() * tokens * k];
        for (int g = 0; g < h.layers() * tokens; g++) {
            LinkedHashSet<Integer> top = new LinkedHashSet<>();
            while (top.size() < k) {
                top.add(r.nextInt(4) == 0 ? r.nextInt(h.experts()) : r.nextInt(Math.max(k, hotExperts)));
            }
            int s = 0;
            for (int id : top) {
                ids[g * k + s++] = id;
            }
        }
        return RoutingStep.of(h, RoutingPhase.DECODE, tokens, ids);
    }

    @Test
    void perLayerAndSharedCurvesMatchLruOnTheUnionStream() {
        Property.forAll("routing curves vs LRU", 12, r -> {
            int experts = 4 + r.nextInt(40);
            RoutingTraceHeader h = new RoutingTraceHeader(1 + r.nextInt(4), experts, 1 + r.nextInt(Math.min(4, experts)), "");
            RoutingReuseDistances rd = new RoutingReuseDistances(h, experts, 1.0);
            List<List<Long>> perLayer = new ArrayList<>();
            for (int l = 0; l < h.layers(); l++) {
                perLayer.add(new ArrayList<>());
            }
            List<Long> shared = new ArrayList<>();
            int hot = 1 + r.nextInt(experts);
            for (int i = 0; i < 150; i++) {
                RoutingStep s = randomStep(r, h, 1 + (r.nextInt(5) == 0 ? r.nextInt(6) : 0), hot);
                rd.accept(s);
                for (int l = 0; l < h.layers(); l++) {
                    LinkedHashSet<Integer> union = new LinkedHashSet<>();
                    for (int t = 0; t < s.tokens(); t++) {
                        for (int k = 0; k < s.topK(); k++) {
                            union.add(s.expert(l, t, k));
                        }
                    }
                    for (int e : union) {
                        perLayer.get(l).add((long) e);
                        shared.add(((long) l << 32) | e);
                    }
                }
                if (r.nextInt(10) == 0) {
                    rd.accept(BurstStart.INSTANCE);
                }
            }
            rd.endBurst();
            for (int l = 0; l < h.layers(); l++) {
                long[] stream = perLayer.get(l).stream().mapToLong(Long::longValue).toArray();
                MissCurve c = rd.layerCurve(l);
                MissCurve d = rd.decayedLayerCurve(l);
                for (int cap = 0; cap <= experts + 1; cap++) {
                    assertThat(c.misses(cap)).as("layer %d, capacity %d", l, cap).isEqualTo(lruMisses(stream, cap));
                    assertThat(d.misses(cap)).isEqualTo(c.misses(cap));
                }
            }
            long[] all = shared.stream().mapToLong(Long::longValue).toArray();
            MissCurve sc = rd.sharedCurve();
            for (int cap = 0; cap <= experts * h.layers() + 1; cap += 1 + cap / 8) {
                assertThat(sc.misses(cap)).as("shared, capacity %d", cap).isEqualTo(lruMisses(all, cap));
            }
            assertThat(rd.steps()).isEqualTo(150);
        });
    }
}
