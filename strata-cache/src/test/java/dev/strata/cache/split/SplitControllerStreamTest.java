package dev.strata.cache.split;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.curve.ReuseDistanceTracker;
import dev.strata.memory.device.DeviceTier;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The controller fed by the estimator from real reference streams: it settles near the oracle split
 * of a stationary stream within a bounded number of bursts, and follows the stream when it shifts.
 */
class SplitControllerStreamTest {
    private static final long SLOT = 7 * 4096;
    private static final long BLOCK = 3 * 4096;
    private static final int LAYERS = 2;
    private static final int EXPERTS = 32;
    private static final int TOP_K = 2;
    private static final long BUDGET = 20 * SLOT + 150 * BLOCK + 1234;
    private static final MissCosts COSTS = MissCosts.given(300e-6, 500e-6);

    /** A stationary stream: a hot set of experts per layer and sessions whose contexts are reread each turn. */
    private record Stream(int hotSet, int sessions, int context, long seed) {
        /** One burst's references: experts per step per layer, then the KV blocks of one session's turn. */
        void burst(SplittableRandom r, int[][] hot, List<int[]> experts, List<Long> blocks) {
            for (int step = 0; step < 12; step++) {
                for (int l = 0; l < LAYERS; l++) {
                    int a = pick(r, hot[l]);
                    int b;
                    do {
                        b = pick(r, hot[l]);
                    } while (b == a);
                    experts.add(new int[] {l, a});
                    experts.add(new int[] {l, b});
                }
            }
            int s = r.nextInt(sessions);
            for (int i = 0; i < context; i++) {
                blocks.add(seed << 40 | (long) s << 20 | i);
            }
        }

        private int pick(SplittableRandom r, int[] hot) {
            return r.nextInt(10) < 9 ? hot[r.nextInt(hotSet)] : r.nextInt(EXPERTS);
        }

        int[][] hotSets(SplittableRandom r) {
            int[][] hot = new int[LAYERS][hotSet];
            for (int l = 0; l < LAYERS; l++) {
                for (int i = 0; i < hotSet; i++) {
                    hot[l][i] = (int) ((i * 7 + l * 3 + seed) % EXPERTS);
                }
            }
            return hot;
        }

        /** The oracle cap over a long run of this stream, from exact LRU curves. */
        int oracleCap(long floor) {
            SplittableRandom r = new SplittableRandom(seed);
            int[][] hot = hotSets(r);
            ReuseDistanceTracker[] layers = {new ReuseDistanceTracker(), new ReuseDistanceTracker()};
            ReuseDistanceTracker kv = new ReuseDistanceTracker();
            for (int b = 0; b < 400; b++) {
                List<int[]> e = new ArrayList<>();
                List<Long> k = new ArrayList<>();
                burst(r, hot, e, k);
                e.forEach(x -> layers[x[0]].access(x[1]));
                k.forEach(kv::access);
            }
            List<MissCurve> curves = List.of(layers[0].missCurve(EXPERTS), layers[1].missCurve(EXPERTS));
            SplitProblem p = new SplitProblem(BUDGET, SLOT, BLOCK, ExpertDemand.perLayer(curves, EXPERTS),
                    kv.missCurve((int) (BUDGET / BLOCK)), COSTS, floor, TOP_K, EXPERTS);
            return MvWsaSolver.oracle(p).expertCap();
        }
    }

    @Test
    void settlesNearTheOracleAndFollowsAShift() {
        try (DeviceTier tier = DeviceTier.cpu("device", BUDGET + 32 * SLOT)) {
            BudgetWatch watch = new BudgetWatch(tier, BUDGET);
            ArenaSlabPool experts = new ArenaSlabPool("experts", tier, SLOT, TOP_K, EXPERTS, 4, watch, 1);
            ArenaSlabPool kv = new ArenaSlabPool("kv", tier, BLOCK, 1, 10_000, (int) ((BUDGET - 4 * SLOT) / BLOCK), watch, 2);
            SplitController c = new SplitController(experts, kv,
                    new SplitController.Settings(BUDGET, 30, 2, 0.05, 4, 2, SplitController.Mode.ESTIMATOR), new MvWsaSolver());
            SplitEstimator estimator = new SplitEstimator(LAYERS, EXPERTS, (int) (BUDGET / BLOCK), 0.97);
            // phase 1: a wide expert hot set, few short sessions: experts are worth the budget
            Stream wide = new Stream(14, 2, 30, 3);
            int oracleWide = wide.oracleCap(30);
            int settledWide = run(wide, 60, oracleWide, 40, c, estimator, experts, kv);
            // phase 2: a narrow hot set, many sessions whose contexts compete: KV is worth the budget
            Stream narrow = new Stream(3, 8, 20, 4);
            int oracleNarrow = narrow.oracleCap(30);
            assertThat(oracleWide - oracleNarrow).as("the two phases want different splits: %d, %d", oracleWide, oracleNarrow).isGreaterThanOrEqualTo(6);
            int settledNarrow = run(narrow, 120, oracleNarrow, 70, c, estimator, experts, kv);
            assertThat(settledWide).as("settled cap of the wide phase vs its oracle %d", oracleWide).isBetween(oracleWide - 2, oracleWide + 2);
            assertThat(settledNarrow).as("settled cap of the narrow phase vs its oracle %d", oracleNarrow)
                    .isBetween(oracleNarrow - 2, oracleNarrow + 2);
            assertThat(watch.maxUsed()).isLessThanOrEqualTo(BUDGET);
            assertThat(experts.contentsIntact()).isTrue();
            assertThat(kv.contentsIntact()).isTrue();
            experts.release();
            kv.release();
        }
    }

    /**
     * Runs {@code bursts} bursts of {@code s}; checks that the cap comes within 2 slots of
     * {@code oracle} within {@code bound} bursts and stays there for at least 80% of the last half
     * (the decayed estimate is noisy: a short excursion that the next bursts' misses correct is
     * allowed). Returns the cap held most often over the last half.
     */
    private static int run(Stream s, int bursts, int oracle, int bound, SplitController c, SplitEstimator estimator,
                           ArenaSlabPool experts, ArenaSlabPool kv) {
        SplittableRandom r = new SplittableRandom(s.seed());
        int[][] hot = s.hotSets(r);
        List<Integer> caps = new ArrayList<>();
        for (int b = 0; b < bursts; b++) {
            List<int[]> e = new ArrayList<>();
            List<Long> k = new ArrayList<>();
            s.burst(r, hot, e, k);
            e.forEach(x -> estimator.expertAccess(x[0], x[1]));
            k.forEach(estimator::kvAccess);
            estimator.kvOccupancy(s.context());
            estimator.endBurst();
            c.onBurst(estimator.view(COSTS));
            assertThat(c.atDrainedBarrier().status()).isIn(SplitController.ResizeStatus.APPLIED,
                    SplitController.ResizeStatus.NOTHING_PENDING);
            assertThat(experts.units() * SLOT + kv.units() * BLOCK).isLessThanOrEqualTo(BUDGET);
            caps.add(experts.units());
        }
        int first = -1;
        for (int b = 0; b < bursts && first < 0; b++) {
            first = Math.abs(caps.get(b) - oracle) <= 2 ? b : -1;
        }
        assertThat(first).as("burst at which the cap came near the oracle %d: %s", oracle, caps).isBetween(0, bound);
        List<Integer> tail = caps.subList(bursts / 2, bursts);
        long near = tail.stream().filter(x -> Math.abs(x - oracle) <= 2).count();
        assertThat(near).as("bursts near the oracle %d over the last half: %s", oracle, caps).isGreaterThanOrEqualTo(tail.size() * 4L / 5);
        return tail.stream().collect(java.util.stream.Collectors.groupingBy(x -> x, java.util.stream.Collectors.counting()))
                .entrySet().stream().max(java.util.Map.Entry.comparingByValue()).orElseThrow().getKey();
    }
}
