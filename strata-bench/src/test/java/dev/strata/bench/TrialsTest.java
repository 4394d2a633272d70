package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

/** Paired rounds: call order, per-pair ratios, medians and spreads, on deterministic suppliers. */
class TrialsTest {

    /** A supplier that logs each call as {@code <name><n>} and returns the next of its values. */
    private static DoubleSupplier recording(String name, List<String> log, double... values) {
        int[] i = {0};
        return () -> {
            log.add(name + i[0]);
            return values[i[0]++];
        };
    }

    @Test
    void roundsAlternateWhichSideGoesFirstAfterOneWarmUpEach() {
        List<String> log = new ArrayList<>();
        Trials.paired(4, recording("b", log, 0, 1, 1, 1, 1), recording("s", log, 0, 1, 1, 1, 1));
        assertThat(log).containsExactly("b0", "s0", // warm-up
                "b1", "s1", "s2", "b2", "b3", "s3", "s4", "b4");
    }

    @Test
    void theRatioIsTheMedianOfThePairRatiosNotTheRatioOfMedians() {
        List<String> log = new ArrayList<>();
        // warm-ups first (ignored), then pairs whose ratios are 2, 0.5, 3: median 2
        Paired p = Trials.paired(3, recording("b", log, 99, 10, 40, 1), recording("s", log, 99, 20, 20, 3));
        assertThat(p.baseline()).containsExactly(10, 40, 1);
        assertThat(p.subject()).containsExactly(20, 20, 3);
        assertThat(p.ratios()).containsExactly(2, 0.5, 3);
        assertThat(p.ratio()).isEqualTo(2);
        assertThat(p.baselineSample().median()).isEqualTo(10);
        assertThat(p.subjectSample().median()).isEqualTo(20);
        assertThat(p.ratioInterval()).as("min to max for five rounds or fewer").containsExactly(0.5, 3);
        Figure f = Figure.paired("x", "GB/s", "raw", p, ">= 0.4");
        assertThat(f.ratio()).as("not 20 / 10").isEqualTo(2);
        assertThat(f.value()).isEqualTo(20);
        assertThat(f.baselineValue()).isEqualTo(10);
        assertThat(f.ratioLow()).isEqualTo(0.5);
        assertThat(f.ratioHigh()).isEqualTo(3);
        assertThat(f.valueLow()).isEqualTo(3);
        assertThat(f.valueHigh()).isEqualTo(20);
        assertThat(f.rounds()).isEqualTo(3);
        assertThat(f.verdict()).isEqualTo(Verdict.MET);
    }

    @Test
    void anEvenNumberOfRoundsTakesTheMeanOfTheMiddlePairRatios() {
        Paired p = Paired.of(new double[] {1, 1, 1, 1}, new double[] {1, 2, 4, 8});
        assertThat(p.ratio()).isEqualTo(3);
        assertThat(p.ratioInterval()).containsExactly(1, 8);
        assertThat(Trials.median(new double[] {3, 1, 2})).isEqualTo(2);
        assertThat(Trials.median(new double[] {4, 1, 2, 3})).isEqualTo(2.5);
    }

    @Test
    void oneRoundIsAPointAndManyRoundsNarrowToTheMediansConfidenceInterval() {
        assertThat(Trials.interval(new double[] {7})).containsExactly(7, 7);
        assertThat(Trials.interval(new double[] {5, 1, 4, 2, 3})).containsExactly(1, 5);
        double[] twenty = new double[20];
        for (int i = 0; i < 20; i++) {
            twenty[i] = 19 - i; // 0..19, shuffled order does not matter
        }
        // n = 20: k = 6 gives coverage 1 - 2 P(B <= 5) = 0.9586, k = 7 only 0.8847
        assertThat(Trials.interval(twenty)).containsExactly(5, 14);
        assertThat(Trials.interval(new double[] {Double.NaN, 2, 1})).containsExactly(1, 2);
    }

    @Test
    void severalQuantitiesPerRunArePairedEach() {
        List<String> log = new ArrayList<>();
        int[] b = {0};
        int[] s = {0};
        Paired[] each = Trials.pairedEach(2, () -> {
            log.add("b");
            b[0]++;
            return new double[] {b[0], 10 * b[0]};
        }, () -> {
            log.add("s");
            s[0]++;
            return new double[] {2 * s[0], 10 * s[0]};
        });
        assertThat(log).containsExactly("b", "s", "b", "s", "s", "b");
        assertThat(each[0].baseline()).containsExactly(2, 3);
        assertThat(each[0].subject()).containsExactly(4, 6);
        assertThat(each[1].ratios()).containsExactly(1, 1);
    }

    @Test
    void badInputIsRefusedNamingTheProblem() {
        assertThatThrownBy(() -> Trials.paired(0, () -> 1, () -> 1)).hasMessageContaining("rounds must be at least 1, got 0");
        assertThatThrownBy(() -> Paired.of(new double[] {1}, new double[] {1, 2})).hasMessageContaining("got 1 and 2");
        assertThatThrownBy(() -> Trials.pairedEach(1, () -> new double[] {1}, () -> new double[] {1, 2}))
                .hasMessageContaining("different numbers of quantities");
    }

    @Test
    void mappingChangesUnitsOfBothSidesOrDerivesABoundFromTheBaseline() {
        Paired ns = Paired.of(new double[] {100, 200}, new double[] {50, 50});
        Paired perSecond = ns.map(x -> 1e9 / x);
        assertThat(perSecond.ratios()).containsExactly(2, 4);
        Paired bound = ns.mapBaseline(x -> x / 2);
        assertThat(bound.baseline()).containsExactly(50, 100);
        assertThat(bound.subject()).containsExactly(50, 50);
    }

    @Test
    void samplesWarmUpOnceThenMeasureEachRound() {
        List<String> log = new ArrayList<>();
        Sample s = Trials.sample(3, recording("r", log, 100, 3, 1, 2));
        assertThat(log).hasSize(4);
        assertThat(s.values()).containsExactly(3, 1, 2);
        assertThat(s.median()).isEqualTo(2);
        assertThat(s.interval()).containsExactly(1, 3);
    }

    @Test
    void aWarmUpRunsWholeBatchesUntilABatchCompilesNothingOrItsTimeIsUp() {
        int[] steps = {0};
        assertThat(Trials.warmUntilCompiled(7, 0, () -> steps[0]++)).as("no time: one batch").isEqualTo(7);
        assertThat(steps[0]).isEqualTo(7);
        steps[0] = 0;
        long start = System.nanoTime();
        int ran = Trials.warmUntilCompiled(5, 2_000_000_000L, () -> steps[0]++);
        assertThat(ran).isEqualTo(steps[0]).isPositive();
        assertThat(ran % 5).as("whole batches").isZero();
        assertThat(System.nanoTime() - start).as("stops by its deadline, a batch later at most").isLessThan(3_000_000_000L);
        assertThatThrownBy(() -> Trials.warmUntilCompiled(0, 0, () -> { })).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 0");
    }

    @Test
    void aWarmUpPassesOnWhatItsStepThrows() {
        java.io.IOException boom = new java.io.IOException("step failed");
        assertThatThrownBy(() -> Trials.warmUntilCompiled(3, 0, () -> {
            throw boom;
        })).isSameAs(boom);
    }
}
