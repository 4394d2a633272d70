package dev.strata.bench;

import java.util.Arrays;
import java.util.function.DoubleSupplier;

/**
 * Measures a candidate against its baseline fairly on a noisy shared machine: each side runs
 * once unmeasured (JIT compilation, first touch of pages and file blocks), then the two run in
 * alternation, several times, and each side's median is kept.
 *
 * <p>Stateless; any thread.
 */
public final class Trials {
    private Trials() {
    }

    /** Medians of {@code rounds} alternating runs after one warm-up run of each: {@code [baseline, candidate]}. */
    public static double[] alternate(int rounds, DoubleSupplier baseline, DoubleSupplier candidate) {
        baseline.getAsDouble();
        candidate.getAsDouble();
        double[] b = new double[rounds];
        double[] c = new double[rounds];
        for (int i = 0; i < rounds; i++) {
            if (i % 2 == 0) {
                b[i] = baseline.getAsDouble();
                c[i] = candidate.getAsDouble();
            } else {
                c[i] = candidate.getAsDouble();
                b[i] = baseline.getAsDouble();
            }
        }
        return new double[] {median(b), median(c)};
    }

    /** The median of {@code values} (mean of the middle two for an even count). */
    public static double median(double[] values) {
        double[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }
}
