package dev.strata.bench.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.bench.Figure;
import dev.strata.bench.FigureChecks;
import dev.strata.bench.Goal;
import dev.strata.bench.Paired;
import dev.strata.bench.Trials;
import dev.strata.bench.Verdict;
import dev.strata.bench.Series;
import dev.strata.memory.Sizes;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RevocationLatencyMeasureTest {
    @TempDir
    Path dir;

    private static void assertFigures(List<Figure> figures, String label, RevocationRig rig) {
        assertThat(figures).extracting(Figure::name).containsExactly("peer_revoke_to_callback_p50_" + label,
                "peer_revoke_to_callback_p99_" + label, "peer_revoke_to_callback_in_flight_p50_" + label,
                "peer_revoke_to_callback_in_flight_p99_" + label, "peer_drain_p50_" + label, "peer_drain_p99_" + label);
        for (Figure f : figures) {
            assertThat(f.value()).as(f.name()).isPositive().isFinite();
            assertThat(f.baselineValue()).as(f.name()).isPositive().isFinite();
            assertThat(f.unit()).isEqualTo("us");
            FigureChecks.assertConsistent(f);
        }
        // every lease borrowed by the measure ended with its revocation
        assertThat(rig.client().liveLeases()).isEmpty();
        assertThat(rig.settled()).isTrue();
    }

    @Test
    void inProcessRevocationsReachTheirCallbacks() throws Exception {
        try (LocalRevocationRig rig = new LocalRevocationRig(16 * Sizes.MiB)) {
            List<Series> plots = new java.util.ArrayList<>();
            List<Figure> figures = RevocationLatencyMeasure.figures(rig, 20, Sizes.MiB + 4032, 2 * Sizes.MiB + 64, plots);
            assertFigures(figures, "in_process", rig);
            assertThat(figures.getFirst().rounds()).as("20 revocations make 2 paired blocks").isEqualTo(2);
            // the drains are paired block by block with the reads timed in the same block, as the in-flight revocations are
            assertThat(figures.subList(2, 6)).extracting(Figure::baseline)
                    .containsOnly("one " + (2 * Sizes.MiB + 64) + "-byte read of the lease, median");
            assertThat(figures.subList(2, 6)).extracting(Figure::rounds).containsOnly(2);
            assertThat(figures.get(4).note()).as("the drains of the 20 in-flight revocations alone, not of the idle ones")
                    .contains(" 20 drains");
            assertThat(plots).extracting(Series::label).containsExactly("idle lease", "idle lease, from the rig's demand",
                    "read in flight", "thread hand-off through a blocking queue (baseline)");
            double[] fromRevocation = plots.get(0).x();
            double[] fromDemand = plots.get(1).x();
            assertThat(fromRevocation[fromRevocation.length - 1]).as("timed from the lender's revocation, which comes after"
                    + " the rig's demand: no longer than from the demand").isLessThanOrEqualTo(fromDemand[fromDemand.length - 1]);
            for (Series s : plots) { // a CDF: latencies and fractions both ascending, ending at 1
                assertThat(s.x()).isSorted();
                assertThat(s.y()).isSorted();
                assertThat(s.y()[s.y().length - 1]).isEqualTo(1.0);
            }
            assertThat(rig.client().stats().peers().getFirst().revocations()).as("idle: 2 to warm up, 20; in flight: 2 to warm up, 20")
                    .isEqualTo(2 + 20 + 2 + 20);
        }
    }

    @Test
    void crossProcessRevocationsReachTheirCallbacks() throws Exception {
        try (ShmRevocationRig rig = new ShmRevocationRig(dir, 8 * Sizes.MiB, 2 * Sizes.MiB, Duration.ofNanos(200_000),
                Duration.ofNanos(200_000))) {
            List<Figure> figures = RevocationLatencyMeasure.figures(rig, 10, 2 * Sizes.MiB, 4 * Sizes.MiB);
            assertFigures(figures, "cross_process", rig);
        }
    }

    @Test
    void blocksThatLeaveAFigureUndecidedAreMeasuredOnToASecondLook() throws Exception {
        List<Integer> run = new java.util.ArrayList<>();
        assertThat(Trials.roundsUntilDecided(9, 27, run::add, () -> false)).isEqualTo(9);
        assertThat(run).as("decided after nine blocks: no more").hasSize(9);
        run.clear();
        assertThat(Trials.roundsUntilDecided(9, 27, run::add, () -> true)).isEqualTo(27);
        assertThat(run).as("undecided: blocks 9 to 26 follow, in order").containsExactlyElementsOf(
                java.util.stream.IntStream.range(0, 27).boxed().toList());
        run.clear();
        assertThat(Trials.roundsUntilDecided(2, 2, run::add, () -> true)).as("no second look allowed").isEqualTo(2);

        double[] base = new double[27];
        java.util.Arrays.fill(base, 100);
        double[] clear = new double[27]; // every block at 1.2x: met against <= 2 at once
        java.util.Arrays.fill(clear, 120);
        double[] straddling = clear.clone(); // two of nine blocks at 2.5x: the interval [x(2), x(8)] reaches 2.5
        straddling[0] = 250;
        straddling[1] = 250;
        double[][] b = {base, base};
        assertThat(RevocationLatencyMeasure.undecided(9, b, new double[][] {clear, clear}, "<= 1.5", "<= 2")).isFalse();
        assertThat(RevocationLatencyMeasure.undecided(9, b, new double[][] {clear, straddling}, "<= 1.5", "<= 2")).isTrue();
        assertThat(RevocationLatencyMeasure.undecided(9, b, new double[][] {straddling, clear}, "<= 3", "<= 2"))
                .as("2.5x meets a goal of 3x").isFalse();
        Paired second = Paired.firstRounds(base, straddling, 27, 9);
        assertThat(second.looks()).isEqualTo(2);
        assertThat(second.rounds()).isEqualTo(27);
        assertThat(second.judge(Goal.parse("<= 2"))).as("25 of 27 blocks at 1.2x: decided on the second look")
                .isEqualTo(Verdict.MET);
        assertThat(Paired.firstRounds(base, straddling, 9, 9).looks()).isEqualTo(1);
    }

    @Test
    void theHandOffBaselineIsMeasured() throws Exception {
        var h = RevocationLatencyMeasure.handoff(50);
        assertThat(h.getTotalCount()).isEqualTo(50);
        assertThat(h.getValueAtPercentile(50)).isPositive();
    }
}
