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

    /** A supplier returning {@code first} for its warm-up and first rounds, then {@code rest}, counting its calls. */
    private static DoubleSupplier phases(int[] calls, int firstCalls, double[] first, double rest) {
        return () -> {
            int i = calls[0]++;
            return i < firstCalls ? first[i % first.length] : rest;
        };
    }

    @Test
    void anUndecidedFigureIsMeasuredOnAndJudgedAgainAtTheStricterCoverage() {
        int[] b = {0};
        int[] s = {0};
        // warm-up and 9 rounds alternate 0.85 and 0.95 (spread 0.85-0.95 straddles 0.9), then 0.85 only
        Paired p = Trials.pairedUntilDecided(9, 27, ">= 0.9", () -> {
            b[0]++;
            return 1;
        }, phases(s, 10, new double[] {0.85, 0.95}, 0.85));
        assertThat(b[0]).as("one warm-up and 27 rounds").isEqualTo(28);
        assertThat(s[0]).isEqualTo(28);
        assertThat(p.rounds()).isEqualTo(27);
        assertThat(p.looks()).isEqualTo(2);
        assertThat(p.coverage()).isEqualTo(Trials.SECOND_LOOK_COVERAGE);
        // 23 rounds at 0.85, 4 at 0.95: the 8th to 20th of 27 are all 0.85
        assertThat(p.ratioInterval()).containsExactly(0.85, 0.85);
        Figure f = Figure.paired("x", "GB/s", "raw", p, ">= 0.9");
        assertThat(f.verdict()).isEqualTo(Verdict.MISSED);
        assertThat(f.rounds()).isEqualTo(27);
        // the first nine alone were inconclusive
        Paired first = Paired.of(java.util.Arrays.copyOf(p.baseline(), 9), java.util.Arrays.copyOf(p.subject(), 9));
        assertThat(Figure.paired("x", "GB/s", "raw", first, ">= 0.9").verdict()).isEqualTo(Verdict.INCONCLUSIVE);
    }

    @Test
    void theSecondLookKeepsAlternatingWhichSideGoesFirst() {
        List<String> log = new ArrayList<>();
        double[] straddling = {1, 0.5, 1.5, 0.5, 1.5};
        Trials.pairedUntilDecided(2, 4, ">= 1", recording("b", log, 1, 1, 1, 1, 1), recording("s", log, straddling));
        assertThat(log).containsExactly("b0", "s0", "b1", "s1", "s2", "b2", // warm-up, rounds 0 and 1
                "b3", "s3", "s4", "b4"); // rounds 2 and 3, after the first look
    }

    @Test
    void aDecidedFigureStopsAfterItsFirstRounds() {
        int[] s = {0};
        Paired p = Trials.pairedUntilDecided(9, 27, ">= 0.9", () -> 1, phases(s, 100, new double[] {0.95, 0.97}, 0));
        assertThat(s[0]).isEqualTo(10);
        assertThat(p.rounds()).isEqualTo(9);
        assertThat(p.looks()).isEqualTo(1);
        assertThat(Figure.paired("x", "GB/s", "raw", p, ">= 0.9").verdict()).isEqualTo(Verdict.MET);
        int[] t = {0};
        Paired missed = Trials.pairedUntilDecided(9, 27, ">= 0.9", () -> 1, phases(t, 100, new double[] {0.5}, 0));
        assertThat(missed.rounds()).isEqualTo(9);
        int[] u = {0};
        Paired noSecondLook = Trials.pairedUntilDecided(9, 9, ">= 0.9", () -> 1, phases(u, 100, new double[] {0.85, 0.95}, 0));
        assertThat(noSecondLook.rounds()).isEqualTo(9);
        assertThat(noSecondLook.looks()).isEqualTo(1);
    }

    @Test
    void aFigureOnItsGoalStaysInconclusiveAfterItsSecondLook() {
        int[] s = {0};
        Paired p = Trials.pairedUntilDecided(9, 27, ">= 0.9", () -> 1, phases(s, 100, new double[] {0.85, 0.95}, 0));
        assertThat(p.rounds()).isEqualTo(27);
        assertThat(Figure.paired("x", "GB/s", "raw", p, ">= 0.9").verdict()).isEqualTo(Verdict.INCONCLUSIVE);
    }

    @Test
    void aGoalOnTheValueIsJudgedOnTheSubjectsSpread() {
        int[] s = {0};
        // the ratio to the baseline is 1 throughout; the value's spread decides
        Paired p = Trials.pairedUntilDecided(9, 27, ">= 5 ops/s", () -> 5, phases(s, 10, new double[] {4, 6}, 6));
        assertThat(p.rounds()).isEqualTo(27);
        assertThat(p.subjectInterval()).containsExactly(6, 6);
        assertThat(p.judge(Goal.parse(">= 5 ops/s"))).isEqualTo(Verdict.MET);
        assertThat(Figure.paired("x", "ops/s", "map", p, ">= 5 ops/s").verdict()).isEqualTo(Verdict.MET);
    }

    @Test
    void theSecondLooksIntervalIsTheWiderOrderStatisticInterval() {
        double[] values = new double[27];
        for (int i = 0; i < 27; i++) {
            values[i] = 26 - i; // 0..26
        }
        // n = 27 at 97.5%: k = 8 (1 - 2 P(B <= 7) = 0.9808), k = 9 only 0.9478; the 8th to 20th value
        assertThat(Trials.interval(values, Trials.SECOND_LOOK_COVERAGE)).containsExactly(7, 19);
        double[] eighteen = java.util.Arrays.copyOf(values, 18); // 26..9
        // n = 18: k = 5 at 95% (0.9691), but only k = 4 at 97.5% (0.9925; k = 5 falls short)
        assertThat(Trials.interval(eighteen)).containsExactly(13, 22);
        assertThat(Trials.interval(eighteen, Trials.SECOND_LOOK_COVERAGE)).containsExactly(12, 23);
        assertThat(Trials.SECOND_LOOK_COVERAGE).isEqualTo(0.975, org.assertj.core.api.Assertions.within(1e-12));
        Paired twoLooks = new Paired(new double[] {100, 200}, new double[] {50, 50}, 2);
        assertThat(twoLooks.map(x -> 1e9 / x).looks()).as("a change of unit keeps the looks").isEqualTo(2);
        assertThat(twoLooks.mapBaseline(x -> x / 2).looks()).isEqualTo(2);
        assertThat(twoLooks).isNotEqualTo(Paired.of(new double[] {100, 200}, new double[] {50, 50}));
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
        assertThatThrownBy(() -> Trials.pairedUntilDecided(9, 8, ">= 0.9", () -> 1, () -> 1))
                .hasMessageContaining("8 rounds after 9");
        assertThatThrownBy(() -> Trials.pairedUntilDecided(9, 27, "at least 0.9", () -> 1, () -> 1))
                .hasMessageContaining("not a goal: 'at least 0.9'");
        assertThatThrownBy(() -> Trials.interval(new double[] {1}, 1.0)).hasMessageContaining("got 1.0");
        assertThatThrownBy(() -> new Paired(new double[] {1}, new double[] {1}, 3)).hasMessageContaining("got 3");
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
    void aWarmUpRunsWholeBatchesUntilTheJitIsQuietOrItsTimeIsUp() {
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
    void aWarmUpGoesOnUntilTheJitHasBeenQuietForTheWholeSpell() {
        long[] now = {0};
        long[] compiledMillis = {0};
        int[] steps = {0};
        // each step takes 100 ms; the compiler finishes something during steps 1, 2, 3 and 5, then stays quiet
        Trials.Step<RuntimeException> step = () -> {
            steps[0]++;
            now[0] += 100_000_000L;
            if (steps[0] <= 3 || steps[0] == 5) {
                compiledMillis[0] += 2;
            }
        };
        int ran = Trials.warmUntilQuiet(1, 10_000_000_000L, 500_000_000L, () -> compiledMillis[0], () -> now[0], step);
        assertThat(ran).as("quiet from the end of step 5 (0.5 s) to the end of step 10, not from the first quiet step (4)")
                .isEqualTo(10);
    }

    @Test
    void aWarmUpWithoutAQuietSpellEndsAtItsDeadlineAndOneWithoutACompileClockAfterOneBatch() {
        long[] now = {0};
        long[] compiledMillis = {0};
        int[] steps = {0};
        Trials.Step<RuntimeException> busy = () -> { // the compiler finishes something during every step of 100 ms
            steps[0]++;
            now[0] += 100_000_000L;
            compiledMillis[0]++;
        };
        assertThat(Trials.warmUntilQuiet(3, 1_000_000_000L, 500_000_000L, () -> compiledMillis[0], () -> now[0], busy))
                .as("batches of 3 until past the 1 s deadline").isEqualTo(12);
        assertThat(Trials.warmUntilQuiet(3, 1_000_000_000L, 500_000_000L, null, () -> now[0], busy))
                .as("no compile clock: one batch").isEqualTo(3);
        long before = now[0];
        assertThat(Trials.warmUntilQuiet(2, 10_000_000_000L, 500_000_000L, () -> 7L, () -> now[0], busy))
                .as("never compiles: a quiet spell from the start").isEqualTo(6);
        assertThat(now[0] - before).isEqualTo(600_000_000L);
    }

    @Test
    void aWarmUpPassesOnWhatItsStepThrows() {
        java.io.IOException boom = new java.io.IOException("step failed");
        assertThatThrownBy(() -> Trials.warmUntilCompiled(3, 0, () -> {
            throw boom;
        })).isSameAs(boom);
    }
}
