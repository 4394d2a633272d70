package dev.strata.bench;

import java.util.Arrays;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

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

    /**
     * As {@link #alternate}, for runs that measure several quantities at once (a put phase and a
     * get phase of one run, say): each side returns {@code n} values per run, and the result holds
     * each quantity's median, {@code [side][quantity]} with side 0 the baseline and 1 the candidate.
     *
     * @throws IllegalStateException if a run returns another number of values than the first
     */
    public static double[][] alternateEach(int rounds, Supplier<double[]> baseline, Supplier<double[]> candidate) {
        int n = baseline.get().length;
        if (candidate.get().length != n) {
            throw new IllegalStateException("baseline and candidate measure different numbers of quantities");
        }
        double[][][] runs = new double[2][n][rounds]; // [side][quantity][round]
        for (int i = 0; i < rounds; i++) {
            boolean baselineFirst = i % 2 == 0;
            for (int k = 0; k < 2; k++) {
                int side = (k == 0) == baselineFirst ? 0 : 1;
                double[] v = side == 0 ? baseline.get() : candidate.get();
                if (v.length != n) {
                    throw new IllegalStateException("a run returned " + v.length + " values, the first " + n);
                }
                for (int q = 0; q < n; q++) {
                    runs[side][q][i] = v[q];
                }
            }
        }
        double[][] medians = new double[2][n];
        for (int side = 0; side < 2; side++) {
            for (int q = 0; q < n; q++) {
                medians[side][q] = median(runs[side][q]);
            }
        }
        return medians;
    }

    /** The median of {@code values} (mean of the middle two for an even count). */
    public static double median(double[] values) {
        double[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }
}
