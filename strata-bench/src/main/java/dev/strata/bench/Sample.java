package dev.strata.bench;

import java.util.Arrays;

/**
 * The values of one quantity over measured rounds ({@link Trials#sample}), for figures judged on
 * an absolute value or compared with a bound that is not measured per round.
 *
 * <p>Immutable (the array is copied in and out); any thread.
 *
 * @param values one value per round, in the figure's unit; at least one
 */
public record Sample(double[] values) {

    /** @throws IllegalArgumentException if there is no value */
    public Sample {
        if (values.length == 0) {
            throw new IllegalArgumentException("a sample needs at least one value");
        }
        values = values.clone();
    }

    /** A sample of the given values. */
    public static Sample of(double... values) {
        return new Sample(values);
    }

    @Override
    public double[] values() {
        return values.clone();
    }

    /** The number of rounds. */
    public int rounds() {
        return values.length;
    }

    /** The median value. */
    public double median() {
        return Trials.median(values);
    }

    /** The spread around the median, {@code [low, high]} ({@link Trials#interval}). */
    public double[] interval() {
        return Trials.interval(values);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Sample s && Arrays.equals(values, s.values);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(values);
    }

    @Override
    public String toString() {
        return "Sample" + Arrays.toString(values);
    }
}
