package dev.strata.cache.split;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.strata.cache.curve.MissCurve;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class SplitEstimatorTest {

    /** Misses of an LRU of {@code capacity} over the references fed so far. */
    private static final class Lru {
        final int capacity;
        long misses;
        final LinkedHashMap<Long, Boolean> map = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Boolean> e) {
                return size() > capacity;
            }
        };

        Lru(int capacity) {
            this.capacity = capacity;
        }

        void access(long item) {
            if (map.get(item) == null) {
                misses++;
                map.put(item, Boolean.TRUE);
            }
        }
    }

    @Test
    void withoutDecayTheCurvesAreTheExactLruMissesWarmOnly() {
        SplitEstimator e = new SplitEstimator(3, 29, 700, 1.0);
        SplittableRandom r = new SplittableRandom(42);
        Lru[] layerLru = {new Lru(7), new Lru(7), new Lru(7)};
        Lru kvLru = new Lru(123);
        long firstSightsExperts = 0;
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (int burst = 0; burst < 30; burst++) {
            for (int step = 0; step < 17; step++) {
                for (int l = 0; l < 3; l++) {
                    int x = r.nextInt(10) < 8 ? r.nextInt(9) : r.nextInt(29);
                    e.expertAccess(l, x);
                    layerLru[l].access(x);
                    if (seen.add(((long) l << 32) | x)) {
                        firstSightsExperts++;
                    }
                }
                long block = r.nextInt(4) == 0 ? r.nextInt(400) : r.nextInt(60);
                e.kvAccess(block);
                kvLru.access(block);
            }
            e.kvOccupancy(10 + burst);
            e.endBurst();
        }
        SplitController.BurstView view = e.view(MissCosts.given(1e-4, 2e-4));
        assertThat(view.peakKvBlocks()).isEqualTo(39);
        long lruWarm = 0;
        for (Lru l : layerLru) {
            lruWarm += l.misses;
        }
        lruWarm -= firstSightsExperts;
        assertThat(view.experts().misses(7)).isCloseTo(lruWarm, within(1e-6));
        assertThat(view.experts().compulsory()).isZero();
        MissCurve kv = view.kv();
        assertThat(kv.compulsory()).isZero();
        assertThat(kv.misses(123) + e.kvCurve().compulsory()).isCloseTo(kvLru.misses, within(1e-6));
    }

    @Test
    void decayFollowsAShiftedStream() {
        SplitEstimator e = new SplitEstimator(1, 64, 10, 0.5);
        SplittableRandom r = new SplittableRandom(9);
        for (int burst = 0; burst < 20; burst++) {
            for (int i = 0; i < 200; i++) {
                e.expertAccess(0, r.nextInt(4)); // tight working set: hits at cap 4
            }
            e.endBurst();
        }
        assertThat(e.view(MissCosts.given(1, 1)).experts().warmMisses(4)).isZero();
        for (int burst = 0; burst < 12; burst++) {
            for (int i = 0; i < 200; i++) {
                e.expertAccess(0, r.nextInt(40)); // wide working set
            }
            e.endBurst();
        }
        ExpertDemand d = e.view(MissCosts.given(1, 1)).experts();
        // after 12 halvings the old tight stream weighs nothing: cap 4 misses most warm references
        assertThat(d.warmMisses(4) / d.warmMisses(0)).isGreaterThan(0.8);
    }
}
