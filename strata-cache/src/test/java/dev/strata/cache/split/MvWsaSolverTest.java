package dev.strata.cache.split;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.curve.MissCurve;
import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** MV-WSA against the brute-force oracle; its problem fixtures are shared through the test jar. */
public class MvWsaSolverTest {
    /** Bytes of one expert slot across the fixtures' layers. */
    public static final long SLOT = 9L * 1024 * 1024 * 12 + 4096 * 3; // one slot in 12 layers, odd tail
    /** Bytes of one KV block of the fixtures. */
    public static final long BLOCK = 16 * 96 * 1024 + 512; // 16 tokens of KV, odd tail
    private static final MissCosts COSTS = MissCosts.given(380e-6, 800e-6);

    private static MissCurve curve(double[] histogram, double compulsory) {
        return MissCurve.fromReuseHistogram(histogram, compulsory);
    }

    /** Warm misses of an expert demand that decays smoothly with the cap: a convex curve. */
    public static ExpertDemand convexExperts(int experts, double scale, double length) {
        double[] warm = new double[experts + 1];
        for (int k = 0; k <= experts; k++) {
            warm[k] = scale * Math.exp(-k / length);
        }
        return ExpertDemand.ofWarmMisses(warm, 123);
    }

    /** A KV miss curve whose reuse distances decay exponentially: convex. */
    public static MissCurve convexKv(int blocks, double scale, double length) {
        double[] h = new double[blocks + 1];
        for (int d = 0; d < blocks; d++) {
            h[d] = scale * Math.exp(-d / length) / length;
        }
        return curve(h, 77);
    }

    /** A problem over the fixtures' slot and block sizes and miss costs, caps up to every expert. */
    public static SplitProblem problem(ExpertDemand e, MissCurve kv, long budget, long floor, int minCap) {
        return new SplitProblem(budget, SLOT, BLOCK, e, kv, COSTS, floor, minCap, e.experts());
    }

    private static void assertMatchesOracle(SplitProblem p) {
        Split oracle = MvWsaSolver.oracle(p);
        SplitPlan plan = new MvWsaSolver().solve(p);
        assertThat(plan.chosen()).isEqualTo(oracle);
        assertThat(plan.chosen().kvBlocks()).isGreaterThanOrEqualTo(p.floorBlocks());
        assertThat(plan.chosen().expertCap()).isBetween(p.minExpertCap(), p.maxExpertCap());
    }

    @Test
    void convexSurfaceGivesTheOracleSplitWithFewerEvaluations() {
        SplitProblem p = problem(convexExperts(256, 5e5, 30), convexKv(6000, 4e5, 900), 24L << 30, 400, 8);
        assertMatchesOracle(p);
        SplitPlan plan = new MvWsaSolver().solve(p);
        int feasible = p.highestCap() - p.lowestCap() + 1;
        assertThat(plan.evaluations()).isLessThan(feasible);
        // interior optimum: the marginals change sign across the grid
        assertThat(plan.marginals()[0]).isNegative();
        assertThat(plan.marginals()[plan.marginals().length - 1]).isPositive();
        assertThat(plan.chosen().expertCap()).isStrictlyBetween(p.lowestCap(), p.highestCap());
    }

    @Test
    void stepShapedKvGivesTheOracleSplit() {
        // KV misses only below 1700 blocks: the optimum keeps exactly the step and gives the rest to experts
        double[] h = new double[4001];
        for (int d = 1200; d < 1700; d++) {
            h[d] = 40;
        }
        SplitProblem p = problem(convexExperts(256, 5e5, 60), curve(h, 10), 24L << 30, 300, 8);
        assertMatchesOracle(p);
        Split s = new MvWsaSolver().solve(p).chosen();
        assertThat(s.kvBlocks()).isGreaterThanOrEqualTo(1700);
        assertThat(p.kvBlocks(s.expertCap() + 1)).isLessThan(1700);
    }

    @Test
    void bimodalReuseDistancesGiveTheOracleSplit() {
        // experts: a within-burst mode at 3..6 and a cross-session mode at 150..160
        double[] eh = new double[257];
        for (int d = 3; d <= 6; d++) {
            eh[d] = 9000;
        }
        for (int d = 150; d <= 160; d++) {
            eh[d] = 2500;
        }
        ExpertDemand experts = ExpertDemand.perLayer(List.of(curve(eh, 64), curve(eh, 64)), 256);
        // KV: a near mode and a far mode
        double[] kh = new double[5001];
        for (int d = 10; d < 40; d++) {
            kh[d] = 500;
        }
        for (int d = 2300; d < 2400; d++) {
            kh[d] = 90;
        }
        for (long budget : new long[] {20L << 30, 24L << 30, 26L << 30, 30L << 30}) {
            assertMatchesOracle(problem(experts, curve(kh, 5), budget, 200, 4));
        }
    }

    @Test
    void flatRegionsTieTowardMoreKv() {
        // expert misses flat from cap 20 to 256, KV never misses: every cap >= 20 ties; the smallest wins
        double[] warm = new double[257];
        for (int k = 0; k < 20; k++) {
            warm[k] = 1000 - 50 * k;
        }
        SplitProblem p = problem(ExpertDemand.ofWarmMisses(warm, 0), curve(new double[] {0, 0}, 0), 28L << 30, 100, 8);
        assertMatchesOracle(p);
        assertThat(new MvWsaSolver().solve(p).chosen().expertCap()).isEqualTo(20);
    }

    @Test
    void floorBindsWhenExpertsArePressured() {
        // experts want every slot; the floor keeps 2000 blocks of KV
        SplitProblem p = problem(convexExperts(256, 1e7, 400), convexKv(100, 10, 5), 29L << 30, 2000, 8);
        Split s = new MvWsaSolver().solve(p).chosen();
        assertThat(s.expertCap()).isEqualTo(p.highestCap());
        assertThat(s.kvBlocks()).isGreaterThanOrEqualTo(2000);
        assertThat(p.kvBlocks(s.expertCap() + 1)).isLessThan(2000);
    }

    @Test
    void infeasibleBudgetIsNamedWithItsNumbers() {
        SplitProblem p = problem(convexExperts(64, 100, 5), convexKv(10, 10, 2), 1L << 30, 10_000, 8);
        assertThatThrownBy(() -> new MvWsaSolver().solve(p)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("KV floor of 10000 blocks").hasMessageContaining("minimum expert cap of 8");
    }

    /** Random multi-modal curves: the floor holds, the budget holds, and the solver finds the oracle. */
    @Test
    void randomSurfacesRespectTheFloorAndMatchTheOracle() {
        Property.forAll("solver floor and oracle", 150, random -> {
            int experts = 16 + random.nextInt(300);
            int layers = 1 + random.nextInt(4);
            List<MissCurve> layerCurves = new ArrayList<>();
            for (int l = 0; l < layers; l++) {
                layerCurves.add(curve(modes(random, experts + 1, 1 + random.nextInt(3)), random.nextInt(100)));
            }
            int kvMax = 200 + random.nextInt(8000);
            MissCurve kv = curve(modes(random, kvMax + 1, 1 + random.nextInt(3)), random.nextInt(100));
            long slot = 4096L * (1 + random.nextInt(5000)) + random.nextInt(4096);
            long block = 512L * (1 + random.nextInt(4000)) + random.nextInt(512);
            long budget = slot * (8 + random.nextInt(experts)) + block * random.nextInt(kvMax + 1) + random.nextInt(1 << 20);
            int minCap = 1 + random.nextInt(8);
            long floor = random.nextInt((int) Math.max(1, Math.min(kvMax, (budget - minCap * slot) / block + 1)) + 1);
            MissCosts costs = MissCosts.given(1e-6 * (1 + random.nextInt(1000)), 1e-6 * (1 + random.nextInt(1000)));
            SplitProblem p = new SplitProblem(budget, slot, block, ExpertDemand.perLayer(layerCurves, experts), kv, costs,
                    floor, minCap, experts);
            if (!p.feasible()) {
                return;
            }
            Split s = new MvWsaSolver().solve(p).chosen();
            assertThat(s.kvBlocks()).isGreaterThanOrEqualTo(floor);
            assertThat(s.expertCap()).isBetween(minCap, experts);
            assertThat(s.expertCap() * slot + s.kvBlocks() * block).isLessThanOrEqualTo(budget);
            assertThat(s).isEqualTo(MvWsaSolver.oracle(p));
        });
    }

    /** A histogram with {@code modes} bumps of random position, width and mass. */
    private static double[] modes(SplittableRandom random, int length, int modes) {
        double[] h = new double[length];
        for (int m = 0; m < modes; m++) {
            int at = random.nextInt(length - 1);
            int width = 1 + random.nextInt(Math.max(1, length / 8));
            double mass = 1 + random.nextInt(10_000);
            for (int d = at; d < Math.min(length - 1, at + width); d++) {
                h[d] += mass / width;
            }
        }
        return h;
    }
}
