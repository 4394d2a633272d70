package dev.strata.analysis.split;

import static dev.strata.cache.split.MvWsaSolverTest.BLOCK;
import static dev.strata.cache.split.MvWsaSolverTest.SLOT;
import static dev.strata.cache.split.MvWsaSolverTest.convexExperts;
import static dev.strata.cache.split.MvWsaSolverTest.convexKv;
import static dev.strata.cache.split.MvWsaSolverTest.problem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.split.MvWsaSolver;
import dev.strata.cache.split.Split;
import dev.strata.cache.split.SplitProblem;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class ComparisonSplitsTest {

    @Test
    void comparisonSplitsAreWhatTheyClaim() {
        SplitProblem p = problem(convexExperts(128, 5e4, 10), convexKv(4000, 1e5, 500), 16L << 30, 100, 8);
        Split half = ComparisonSplits.fiftyFiftyIgnoringFloor(p);
        assertThat(half.expertCap()).isEqualTo((int) ((16L << 30) / 2 / SLOT));
        Split blind = ComparisonSplits.kvBlindIgnoringFloor(p);
        assertThat(blind.expertCap()).isEqualTo(Math.max(8, p.experts().workingSet(0.01)));
        for (Split s : List.of(half, blind)) {
            assertThat(s.admissible()).isTrue();
            assertThat(s.predictedSeconds()).isGreaterThanOrEqualTo(MvWsaSolver.oracle(p).predictedSeconds());
            assertThat(s.expertCap() * SLOT + s.kvBlocks() * BLOCK).isLessThanOrEqualTo(16L << 30);
        }
        // both rules' splits clear the floor here: the deployable splits are the very same
        assertThat(ComparisonSplits.fiftyFifty(p)).isEqualTo(half);
        assertThat(ComparisonSplits.kvBlind(p)).isEqualTo(blind);
    }

    @Test
    void theKvBlindRuleIgnoresTheFloorAndItsDeployableSplitIsClampedToIt() {
        // experts want every slot; the floor keeps 2000 blocks of KV, which Flux-prop does not see
        SplitProblem p = problem(convexExperts(256, 1e7, 400), convexKv(100, 10, 5), 29L << 30, 2000, 8);
        assertThat(new MvWsaSolver().solve(p).chosen().kvBlocks()).isGreaterThanOrEqualTo(2000);
        Split proposed = ComparisonSplits.kvBlindIgnoringFloor(p);
        assertThat(proposed.admissible()).isFalse();
        Split deployable = ComparisonSplits.kvBlind(p);
        assertClampedToTheFloor(p, proposed, deployable);
    }

    @Test
    void theEvenSplitIsClampedWhenHalfTheBudgetLeavesLessThanTheFloor() {
        // half of 16 GiB holds about 5,400 blocks; the floor asks for 6,000
        SplitProblem p = problem(convexExperts(128, 5e4, 10), convexKv(8000, 1e5, 500), 16L << 30, 6000, 8);
        Split proposed = ComparisonSplits.fiftyFiftyIgnoringFloor(p);
        assertThat(proposed.admissible()).isFalse();
        assertClampedToTheFloor(p, proposed, ComparisonSplits.fiftyFifty(p));
    }

    @Test
    void aDeployableSplitEqualsTheRulesSplitWheneverThatClearsTheFloor() {
        int unchanged = 0;
        int clamped = 0;
        for (long floor : new long[] {0, 50, 500, 2000, 5000, 9000}) {
            for (long budget : new long[] {12L << 30, 16L << 30, 29L << 30}) {
                SplitProblem p = problem(convexExperts(128, 5e5, 40), convexKv(12_000, 1e5, 800), budget, floor, 8);
                for (var rule : List.<List<Function<SplitProblem, Split>>>of(
                        List.of(ComparisonSplits::fiftyFiftyIgnoringFloor, ComparisonSplits::fiftyFifty),
                        List.of(ComparisonSplits::kvBlindIgnoringFloor, ComparisonSplits::kvBlind))) {
                    Split proposed = rule.get(0).apply(p);
                    Split deployable = rule.get(1).apply(p);
                    if (proposed.admissible()) {
                        assertThat(deployable).as("floor %d, budget %d", floor, budget).isEqualTo(proposed);
                        unchanged++;
                    } else if (p.feasible()) {
                        assertClampedToTheFloor(p, proposed, deployable);
                        clamped++;
                    } else {
                        // no split clears the floor: there is nothing to clamp to
                        assertThat(deployable).isEqualTo(proposed);
                    }
                }
            }
        }
        assertThat(unchanged).isPositive();
        assertThat(clamped).isPositive();
    }

    private static void assertClampedToTheFloor(SplitProblem p, Split proposed, Split deployable) {
        assertThat(deployable.admissible()).isTrue();
        assertThat(deployable.kvBlocks()).isGreaterThanOrEqualTo(p.floorBlocks());
        // the largest cap that leaves the floor: the least the rule's cap has to give up
        assertThat(deployable.expertCap()).isEqualTo(p.highestCap()).isLessThan(proposed.expertCap());
        assertThat(p.splitAt(deployable.expertCap() + 1).admissible()).isFalse();
        assertThat(deployable.predictedSeconds()).isGreaterThanOrEqualTo(MvWsaSolver.oracle(p).predictedSeconds());
    }
}
