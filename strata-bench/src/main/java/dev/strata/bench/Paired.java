package dev.strata.bench;

import java.util.Arrays;
import java.util.function.DoubleUnaryOperator;

/**
 * A subject measured against its baseline in paired rounds ({@link Trials#paired}): round
 * {@code i} measured {@code baseline[i]} and {@code subject[i]} back to back, on the same data
 * and threads. The figure's ratio is the median of the per-pair ratios
 * {@code subject[i] / baseline[i]}; its spread is {@link Trials#interval} of those ratios, at
 * {@link Trials#COVERAGE}, or at {@link Trials#SECOND_LOOK_COVERAGE} for rounds measured further
 * because the first ones left the verdict open ({@link Trials#pairedUntilDecided}).
 *
 * <p>Immutable once built (the arrays are copied in and out); any thread.
 *
 * @param baseline the baseline's value in each round, in the figure's unit
 * @param subject  the subject's value in each round, same unit, same length
 * @param looks    how many times the rounds were judged while they were measured: 1, or 2 when a
 *                 second look added rounds
 */
public record Paired(double[] baseline, double[] subject, int looks) {

    /**
     * @throws IllegalArgumentException if the sides differ in length or hold no round, or looks is
     *                                  not 1 or 2
     */
    public Paired {
        if (looks != 1 && looks != 2) {
            throw new IllegalArgumentException("paired rounds are judged at one or two looks, got " + looks);
        }
        if (baseline.length != subject.length) {
            throw new IllegalArgumentException("paired rounds need as many baseline values as subject values, got "
                    + baseline.length + " and " + subject.length);
        }
        if (baseline.length == 0) {
            throw new IllegalArgumentException("paired rounds need at least one round");
        }
        baseline = baseline.clone();
        subject = subject.clone();
    }

    /** Rounds judged once, at the end. */
    public Paired(double[] baseline, double[] subject) {
        this(baseline, subject, 1);
    }

    /** Rounds paired by the caller, who ran them back to back; {@code baseline[i]} pairs with {@code subject[i]}. */
    public static Paired of(double[] baseline, double[] subject) {
        return new Paired(baseline, subject);
    }

    /**
     * The first {@code rounds} of the pairs in {@code baseline} and {@code subject} (arrays sized
     * for a second look): judged once when {@code rounds} is the first look's {@code firstLook},
     * at the second look's coverage when there are more ({@link Trials#roundsUntilDecided}).
     */
    public static Paired firstRounds(double[] baseline, double[] subject, int rounds, int firstLook) {
        return new Paired(Arrays.copyOf(baseline, rounds), Arrays.copyOf(subject, rounds), rounds > firstLook ? 2 : 1);
    }

    @Override
    public double[] baseline() {
        return baseline.clone();
    }

    @Override
    public double[] subject() {
        return subject.clone();
    }

    /** The number of rounds. */
    public int rounds() {
        return baseline.length;
    }

    /** {@code subject[i] / baseline[i]} for each round; NaN where the baseline is not positive. */
    public double[] ratios() {
        double[] r = new double[baseline.length];
        for (int i = 0; i < r.length; i++) {
            r[i] = baseline[i] > 0 ? subject[i] / baseline[i] : Double.NaN;
        }
        return r;
    }

    /** The median of the per-pair ratios: the figure's ratio. */
    public double ratio() {
        return Trials.median(Arrays.stream(ratios()).filter(x -> !Double.isNaN(x)).toArray());
    }

    /** The coverage of this figure's spreads: {@link Trials#COVERAGE} at one look, {@link Trials#SECOND_LOOK_COVERAGE} at two. */
    public double coverage() {
        return looks == 1 ? Trials.COVERAGE : Trials.SECOND_LOOK_COVERAGE;
    }

    /** The spread of the pair ratios, {@code [low, high]} ({@link Trials#interval} at {@link #coverage()}). */
    public double[] ratioInterval() {
        return Trials.interval(ratios(), coverage());
    }

    /** The spread of the subject's values, {@code [low, high]} ({@link Trials#interval} at {@link #coverage()}). */
    public double[] subjectInterval() {
        return Trials.interval(subject, coverage());
    }

    /**
     * The verdict on these rounds against {@code goal}, as {@link Figure#paired} gives it: on the
     * spread of the ratio, or of the subject's value when the goal names a unit.
     */
    public Verdict judge(Goal goal) {
        return goal.judge(subjectSample().median(), subjectInterval(), ratio(), ratioInterval());
    }

    /** The subject's values as a {@link Sample}. */
    public Sample subjectSample() {
        return new Sample(subject);
    }

    /** The baseline's values as a {@link Sample}. */
    public Sample baselineSample() {
        return new Sample(baseline);
    }

    /** Both sides through {@code f} (a change of unit, e.g. nanoseconds per call to calls per second). */
    public Paired map(DoubleUnaryOperator f) {
        return new Paired(Arrays.stream(baseline).map(f).toArray(), Arrays.stream(subject).map(f).toArray(), looks);
    }

    /** The baseline through {@code f} (a bound derived from what the baseline measured), the subject as it is. */
    public Paired mapBaseline(DoubleUnaryOperator f) {
        return new Paired(Arrays.stream(baseline).map(f).toArray(), subject, looks);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Paired p && Arrays.equals(baseline, p.baseline) && Arrays.equals(subject, p.subject)
                && looks == p.looks;
    }

    @Override
    public int hashCode() {
        return 31 * (31 * Arrays.hashCode(baseline) + Arrays.hashCode(subject)) + looks;
    }

    @Override
    public String toString() {
        return "Paired[baseline=" + Arrays.toString(baseline) + ", subject=" + Arrays.toString(subject) + ", looks=" + looks + "]";
    }
}
