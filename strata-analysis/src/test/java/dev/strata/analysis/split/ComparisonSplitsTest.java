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
import org.junit.jupiter.api.Test;

class ComparisonSplitsTest {

    @Test
    void comparisonSplitsAreWhatTheyClaim() {
        SplitProblem p = problem(convexExperts(128, 5e4, 10), convexKv(4000, 1e5, 500), 16L << 30, 100, 8);
        Split half = ComparisonSplits.fiftyFifty(p);
        assertThat(half.expertCap()).isEqualTo((int) ((16L << 30) / 2 / SLOT));
        Split blind = ComparisonSplits.kvBlind(p);
        assertThat(blind.expertCap()).isEqualTo(Math.max(8, p.experts().workingSet(0.01)));
        for (Split s : List.of(half, blind)) {
            assertThat(s.predictedSeconds()).isGreaterThanOrEqualTo(MvWsaSolver.oracle(p).predictedSeconds());
            assertThat(s.expertCap() * SLOT + s.kvBlocks() * BLOCK).isLessThanOrEqualTo(16L << 30);
        }
    }

    @Test
    void theKvBlindSplitIgnoresTheFloor() {
        // experts want every slot; the floor keeps 2000 blocks of KV, which Flux-prop does not see
        SplitProblem p = problem(convexExperts(256, 1e7, 400), convexKv(100, 10, 5), 29L << 30, 2000, 8);
        assertThat(new MvWsaSolver().solve(p).chosen().kvBlocks()).isGreaterThanOrEqualTo(2000);
        assertThat(ComparisonSplits.kvBlind(p).admissible()).isFalse();
    }
}
