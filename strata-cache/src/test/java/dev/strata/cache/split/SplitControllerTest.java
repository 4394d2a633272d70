package dev.strata.cache.split;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.split.SplitController.Mode;
import dev.strata.cache.split.SplitController.Reason;
import dev.strata.cache.split.SplitController.ResizeStatus;
import dev.strata.cache.split.SplitController.Settings;
import dev.strata.memory.device.DeviceTier;
import dev.strata.testing.Property;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SplitControllerTest {
    private static final long SLOT = 13 * 4096; // one expert slot in every layer
    private static final long BLOCK = 5 * 4096; // one KV block
    private static final int EXPERTS = 64;
    private static final long BUDGET = 40 * SLOT + 150 * BLOCK + 777;
    private static final MissCosts COSTS = MissCosts.given(300e-6, 700e-6);

    private DeviceTier tier;
    private BudgetWatch watch;
    private ArenaSlabPool experts;
    private ArenaSlabPool kv;

    private void pools(int k, int blocks) {
        tier = DeviceTier.cpu("device", BUDGET + 64 * SLOT);
        watch = new BudgetWatch(tier, BUDGET);
        experts = new ArenaSlabPool("experts", tier, SLOT, 4, EXPERTS, k, watch, 11);
        kv = new ArenaSlabPool("kv", tier, BLOCK, 1, 100_000, blocks, watch, 12);
    }

    @AfterEach
    void close() {
        if (tier != null) {
            experts.release();
            kv.release();
            assertThat(tier.used()).isZero();
            tier.close();
        }
    }

    private static ExpertDemand expertCurve(double scale, double length) {
        double[] warm = new double[EXPERTS + 1];
        for (int k = 0; k <= EXPERTS; k++) {
            warm[k] = scale * Math.exp(-k / length);
        }
        return ExpertDemand.ofWarmMisses(warm, 50);
    }

    private static MissCurve kvCurve(double scale, double length) {
        double[] h = new double[2001];
        for (int d = 0; d < 2000; d++) {
            h[d] = scale * Math.exp(-d / length) / length;
        }
        return MissCurve.fromReuseHistogram(h, 20);
    }

    private SplitController controller(Mode mode, double gate, int rate, int deadZone, long floor) {
        return new SplitController(experts, kv, new Settings(BUDGET, floor, 8, gate, rate, deadZone, mode), new MvWsaSolver());
    }

    private SplitProblem problem(ExpertDemand e, MissCurve k, long floor) {
        return new SplitProblem(BUDGET, SLOT, BLOCK, e, k, COSTS, floor, 4, EXPERTS);
    }

    private int runUntilSettled(SplitController c, SplitController.BurstView view, int maxBursts) {
        for (int burst = 1; burst <= maxBursts; burst++) {
            SplitController.Decision d = c.onBurst(view);
            SplitController.ResizeOutcome o = c.atDrainedBarrier();
            assertThat(o.status()).isIn(ResizeStatus.APPLIED, ResizeStatus.NOTHING_PENDING);
            assertThat(experts.units() * SLOT + kv.units() * BLOCK).isLessThanOrEqualTo(BUDGET);
            if (d.reason() == Reason.AT_TARGET) {
                return burst;
            }
        }
        return -1;
    }

    @Test
    void convergesOnAStationaryStreamAndFollowsAShift() {
        pools(6, 100);
        SplitController c = controller(Mode.ESTIMATOR, 0.0, 5, 0, 20);
        // expert-heavy phase: the oracle gives experts most of the budget
        var heavy = new SplitController.BurstView(expertCurve(2e5, 20), kvCurve(5e3, 30), 30, COSTS);
        Split oracleA = MvWsaSolver.oracle(problem(heavy.experts(), heavy.kv(), 30));
        int bursts = runUntilSettled(c, heavy, 40);
        assertThat(bursts).isPositive().isLessThanOrEqualTo((Math.abs(oracleA.expertCap() - 6) + 4) / 5 + 1);
        assertThat(experts.units()).isEqualTo(oracleA.expertCap());
        assertThat(kv.units()).isEqualTo(oracleA.kvBlocks());
        // the workload shifts to long contexts: KV is now worth more
        var kvHeavy = new SplitController.BurstView(expertCurve(2e4, 5), kvCurve(4e5, 120), 60, COSTS);
        Split oracleB = MvWsaSolver.oracle(problem(kvHeavy.experts(), kvHeavy.kv(), 60));
        assertThat(oracleB.expertCap()).isLessThan(oracleA.expertCap() - 10);
        bursts = runUntilSettled(c, kvHeavy, 40);
        assertThat(bursts).isPositive().isLessThanOrEqualTo((oracleA.expertCap() - oracleB.expertCap() + 4) / 5 + 1);
        assertThat(experts.units()).isEqualTo(oracleB.expertCap());
        assertThat(experts.contentsIntact()).isTrue();
        assertThat(kv.contentsIntact()).isTrue();
        assertThat(watch.maxUsed()).isLessThanOrEqualTo(BUDGET);
    }

    @Test
    void rateLimitBoundsEveryMove() {
        pools(6, 100);
        SplitController c = controller(Mode.ESTIMATOR, 0.0, 3, 0, 20);
        var view = new SplitController.BurstView(expertCurve(2e5, 20), kvCurve(5e3, 30), 30, COSTS);
        int before = experts.units();
        SplitController.Decision d = c.onBurst(view);
        assertThat(d.reason()).isEqualTo(Reason.MOVE);
        assertThat(d.target().expertCap() - before).isGreaterThan(3);
        assertThat(c.pending().expertCap()).isEqualTo(before + 3);
        assertThat(c.atDrainedBarrier().status()).isEqualTo(ResizeStatus.APPLIED);
        assertThat(experts.units()).isEqualTo(before + 3);
        assertThat(kv.units()).isEqualTo((BUDGET - (before + 3) * SLOT) / BLOCK);
    }

    @Test
    void deadZoneIgnoresSmallMoves() {
        var view = new SplitController.BurstView(expertCurve(2e5, 20), kvCurve(5e3, 30), 30, COSTS);
        Split oracle = MvWsaSolver.oracle(problem(view.experts(), view.kv(), 30));
        pools(oracle.expertCap() - 2, (int) ((BUDGET - (oracle.expertCap() - 2) * SLOT) / BLOCK));
        SplitController c = controller(Mode.ESTIMATOR, 0.0, 8, 3, 20);
        SplitController.Decision d = c.onBurst(view);
        assertThat(d.reason()).isEqualTo(Reason.DEAD_ZONE);
        assertThat(c.pending()).isNull();
        assertThat(c.atDrainedBarrier().status()).isEqualTo(ResizeStatus.NOTHING_PENDING);
        // without the dead zone the same burst moves
        SplitController open = controller(Mode.ESTIMATOR, 0.0, 8, 0, 20);
        assertThat(open.onBurst(view).reason()).isEqualTo(Reason.MOVE);
    }

    @Test
    void aTargetInsideTheDeadZoneThatKeepsItsSideIsTakenAndOneThatFlipsIsNot() {
        var above = new SplitController.BurstView(expertCurve(2e5, 20), kvCurve(5e3, 30), 30, COSTS);
        int high = MvWsaSolver.oracle(problem(above.experts(), above.kv(), 30)).expertCap();
        int k = high - 1;
        // a second view whose optimum lies below k: noise that points the other way
        SplitController.BurstView below = null;
        for (double scale = 2e5; scale > 1e3 && below == null; scale *= 0.95) {
            var v = new SplitController.BurstView(expertCurve(scale, 20), kvCurve(5e3, 30), 30, COSTS);
            if (MvWsaSolver.oracle(problem(v.experts(), v.kv(), 30)).expertCap() < k) {
                below = v;
            }
        }
        assertThat(below).isNotNull();
        int low = MvWsaSolver.oracle(problem(below.experts(), below.kv(), 30)).expertCap();
        int deadZone = k - low + 1; // both targets inside it
        pools(k, (int) ((BUDGET - k * SLOT) / BLOCK));
        SplitController c = new SplitController(experts, kv, new Settings(BUDGET, 20, 8, 0.0, 8, deadZone,
                Double.POSITIVE_INFINITY, 3, Mode.ESTIMATOR), new MvWsaSolver());
        for (int burst = 0; burst < 12; burst++) {
            SplitController.Decision d = c.onBurst(burst % 2 == 0 ? above : below);
            assertThat(d.reason()).as("burst %d", burst).isEqualTo(Reason.DEAD_ZONE);
            assertThat(c.atDrainedBarrier().status()).isEqualTo(ResizeStatus.NOTHING_PENDING);
        }
        // the same side twice is not yet confirmed; the third time it is
        assertThat(c.onBurst(above).reason()).isEqualTo(Reason.DEAD_ZONE);
        assertThat(c.onBurst(above).reason()).isEqualTo(Reason.DEAD_ZONE);
        SplitController.Decision d = c.onBurst(above);
        assertThat(d.reason()).isEqualTo(Reason.MOVE);
        assertThat(d.next().expertCap()).isEqualTo(high);
        assertThat(c.atDrainedBarrier().status()).isEqualTo(ResizeStatus.APPLIED);
        assertThat(experts.units()).isEqualTo(high);
        assertThat(c.onBurst(above).reason()).isEqualTo(Reason.AT_TARGET);
    }

    @Test
    void aDeadZoneWithoutConfirmationHoldsAPersistentTargetForGood() {
        var view = new SplitController.BurstView(expertCurve(2e5, 20), kvCurve(5e3, 30), 30, COSTS);
        int k = MvWsaSolver.oracle(problem(view.experts(), view.kv(), 30)).expertCap() - 1;
        pools(k, (int) ((BUDGET - k * SLOT) / BLOCK));
        SplitController strict = new SplitController(experts, kv, new Settings(BUDGET, 20, 8, 0.0, 8, 2,
                Double.POSITIVE_INFINITY, Integer.MAX_VALUE, Mode.ESTIMATOR), new MvWsaSolver());
        for (int burst = 0; burst < 20; burst++) {
            assertThat(strict.onBurst(view).reason()).isEqualTo(Reason.DEAD_ZONE);
            assertThat(strict.atDrainedBarrier().status()).isEqualTo(ResizeStatus.NOTHING_PENDING);
        }
        assertThat(experts.units()).isEqualTo(k);
    }

    @Test
    void settingsRejectAConfirmationOfNoBursts() {
        assertThatThrownBy(() -> new Settings(BUDGET, 20, 8, 0.0, 8, 2, 0.25, 0, Mode.ESTIMATOR))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("confirm bursts 0");
    }

    @Test
    void gainGateHoldsWhenThePredictedGainIsSmall() {
        var view = new SplitController.BurstView(expertCurve(2e5, 20), kvCurve(5e3, 30), 30, COSTS);
        Split oracle = MvWsaSolver.oracle(problem(view.experts(), view.kv(), 30));
        int k = oracle.expertCap() - 6;
        pools(k, (int) ((BUDGET - k * SLOT) / BLOCK));
        SplitController gated = controller(Mode.ESTIMATOR, 0.9, 8, 0, 20);
        SplitController.Decision d = gated.onBurst(view);
        assertThat(d.predictedGain()).isPositive().isLessThan(0.9 * d.currentSeconds());
        assertThat(d.reason()).isEqualTo(Reason.GAIN_GATE);
        assertThat(gated.pending()).isNull();
        SplitController open = controller(Mode.ESTIMATOR, d.predictedGain() / d.currentSeconds() * 0.5, 8, 0, 20);
        assertThat(open.onBurst(view).reason()).isEqualTo(Reason.MOVE);
    }

    @Test
    void stepRuleKeepsKvAtPeakPlusHeadroomAndRestoresTheFloorAtOnce() {
        pools(10, 100);
        SplitController c = controller(Mode.STEP_RULE, 0.0, 64, 0, 20);
        var view = new SplitController.BurstView(expertCurve(2e5, 20), kvCurve(5e3, 30), 42, COSTS);
        SplitController.Decision d = c.onBurst(view);
        Split rule = StepRule.target(BUDGET, SLOT, BLOCK, 42, 8, 20, 4, EXPERTS);
        assertThat(d.target().expertCap()).isEqualTo(rule.expertCap());
        assertThat(c.atDrainedBarrier().status()).isEqualTo(ResizeStatus.APPLIED);
        assertThat(kv.units()).isGreaterThanOrEqualTo(50);
        assertThat(kv.units()).isEqualTo(rule.kvBlocks());
        // a burst that needs more KV than the pool has: restored at once, past gate, dead zone and rate limit
        SplitController strict = controller(Mode.STEP_RULE, 0.99, 1, 40, 20);
        var big = new SplitController.BurstView(expertCurve(2e5, 20), kvCurve(5e3, 30), kv.units() + 30, COSTS);
        SplitController.Decision restore = strict.onBurst(big);
        assertThat(restore.reason()).isEqualTo(Reason.RESTORE_FLOOR);
        assertThat(strict.atDrainedBarrier().status()).isEqualTo(ResizeStatus.APPLIED);
        assertThat(kv.units()).isGreaterThanOrEqualTo((int) big.peakKvBlocks());
    }

    @Test
    void stepRuleReclaimsTheClampSlackAndNeverOvercommits() {
        // a KV peak so small that experts hit their cap: the slack goes back to KV
        Split s = StepRule.target(BUDGET, SLOT, BLOCK, 3, 2, 4, 4, 30);
        assertThat(s.expertCap()).isEqualTo(30);
        assertThat(s.kvBlocks()).isEqualTo((BUDGET - 30 * SLOT) / BLOCK);
        assertThat(s.expertCap() * SLOT + s.kvBlocks() * BLOCK).isLessThanOrEqualTo(BUDGET);
        // a peak the budget cannot hold even at the smallest cap: not admissible, still within budget
        Split over = StepRule.target(BUDGET, SLOT, BLOCK, 10_000, 0, 4, 4, 30);
        assertThat(over.admissible()).isFalse();
        assertThat(over.expertCap()).isEqualTo(4);
        assertThat(over.expertCap() * SLOT + over.kvBlocks() * BLOCK).isLessThanOrEqualTo(BUDGET);
    }

    @Test
    void refusedGrowRollsBackTheShrinkAndKeepsThePreviousSplit() {
        int full = (int) ((BUDGET - 6 * SLOT) / BLOCK);
        pools(6, full);
        SplitController c = controller(Mode.ESTIMATOR, 0.0, 10, 0, 20);
        var view = new SplitController.BurstView(expertCurve(2e5, 20), kvCurve(5e3, 30), 30, COSTS);
        assertThat(c.onBurst(view).reason()).isEqualTo(Reason.MOVE);
        experts.failNextGrowAfter(4); // the expert grow gets part way, then the pool refuses
        SplitController.ResizeOutcome o = c.atDrainedBarrier();
        assertThat(o.status()).isEqualTo(ResizeStatus.FAILED_KEPT_PREVIOUS);
        assertThat(o.detail()).contains("'experts' refused");
        assertThat(experts.units()).isEqualTo(6);
        assertThat(kv.units()).isEqualTo(full);
        assertThat(experts.contentsIntact()).isTrue();
        assertThat(kv.contentsIntact()).isTrue();
        // a refused shrink changes nothing
        assertThat(c.onBurst(view).reason()).isEqualTo(Reason.MOVE);
        kv.refuseNext(1);
        assertThat(c.atDrainedBarrier().status()).isEqualTo(ResizeStatus.FAILED_KEPT_PREVIOUS);
        assertThat(experts.units()).isEqualTo(6);
        assertThat(kv.units()).isEqualTo(full);
        // a refused grow whose undo is refused too: the shrunk split stays, within budget
        assertThat(c.onBurst(view).reason()).isEqualTo(Reason.MOVE);
        experts.refuseNext(1);
        kv.failNextGrowAfter(0);
        SplitController.ResizeOutcome worst = c.atDrainedBarrier();
        assertThat(worst.status()).as(worst.toString()).isEqualTo(ResizeStatus.FAILED_ROLLBACK_REFUSED);
        assertThat(experts.units()).isEqualTo(6);
        assertThat(kv.units()).isLessThan(full);
        assertThat(c.failures()).isEqualTo(3);
        assertThat(watch.maxUsed()).isLessThanOrEqualTo(BUDGET);
    }

    @Test
    void budgetWatchCatchesAGrowBeforeTheShrink() {
        int full = (int) ((BUDGET - 6 * SLOT) / BLOCK);
        pools(6, full);
        // growing experts before shrinking KV would exceed the budget for a moment: the watch sees it
        assertThatThrownBy(() -> experts.resize(16))
                .isInstanceOf(AssertionError.class).hasMessageContaining("over the split budget");
    }

    /** Random curves each burst, random refusals: the budget holds after every allocation and free. */
    @Test
    void budgetHoldsAtEveryStepOfRandomResizes() {
        Property.forAll("controller budget", 12, random -> {
            pools(4 + random.nextInt(20), 50 + random.nextInt(80));
            try {
                Mode mode = random.nextBoolean() ? Mode.ESTIMATOR : Mode.STEP_RULE;
                SplitController c = controller(mode, random.nextDouble() * 0.05, 1 + random.nextInt(12), random.nextInt(3), 10);
                for (int burst = 0; burst < 40; burst++) {
                    var view = new SplitController.BurstView(expertCurve(1e3 + random.nextInt(300_000), 2 + random.nextInt(40)),
                            kvCurve(1e3 + random.nextInt(300_000), 5 + random.nextInt(300)), random.nextInt(120), COSTS);
                    c.onBurst(view);
                    switch (random.nextInt(6)) {
                        case 0 -> experts.failNextGrowAfter(random.nextInt(5));
                        case 1 -> kv.failNextGrowAfter(random.nextInt(20));
                        case 2 -> (random.nextBoolean() ? experts : kv).refuseNext(1 + random.nextInt(2));
                        default -> { }
                    }
                    int k0 = experts.units();
                    int kv0 = kv.units();
                    SplitController.ResizeOutcome o = c.atDrainedBarrier();
                    assertThat(experts.units() * SLOT + kv.units() * BLOCK).isLessThanOrEqualTo(BUDGET);
                    assertThat(o.expertCap()).isEqualTo(experts.units());
                    if (o.status() == ResizeStatus.FAILED_KEPT_PREVIOUS) {
                        assertThat(experts.units()).isEqualTo(k0);
                        assertThat(kv.units()).isEqualTo(kv0);
                    }
                    experts.failNextGrowAfter(-1);
                    kv.failNextGrowAfter(-1);
                    experts.refuseNext(0);
                    kv.refuseNext(0);
                }
                assertThat(experts.contentsIntact()).isTrue();
                assertThat(kv.contentsIntact()).isTrue();
                assertThat(watch.maxUsed()).isLessThanOrEqualTo(BUDGET);
                assertThat(watch.checks()).isPositive();
            } finally {
                experts.release();
                kv.release();
                tier.close();
                tier = null;
            }
        });
    }
}
