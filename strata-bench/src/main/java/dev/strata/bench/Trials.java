package dev.strata.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

/**
 * The one way Strata's benchmarks measure: a subject against its baseline in interleaved, paired
 * rounds on a noisy shared machine. Each side first runs once unmeasured (JIT compilation, first
 * touch of pages and file blocks); then round {@code i} runs both sides back to back, the baseline
 * first in even rounds and the subject first in odd ones, so that a slow spell of the machine hits
 * both members of a pair. The figure is then the median of the per-pair ratios with its
 * {@linkplain #interval spread} ({@link Paired}), not a ratio of two medians taken at different
 * times.
 *
 * <p>A figure without a baseline measured per round (a goal on an absolute value, a bound computed
 * once) is measured with {@link #sample}: warm-up, then {@code rounds} measured runs ({@link Sample}).
 *
 * <p>Stateless; any thread (the suppliers run on the calling thread).
 */
public final class Trials {
    /** Coverage aimed at by {@link #interval}. */
    public static final double COVERAGE = 0.95;

    /**
     * Rounds of a full run: the fewest for which {@link #interval} is the median's confidence
     * interval {@code [x(2), x(8)]} rather than the whole range, so one slow round does not set a
     * bound of the spread.
     */
    public static final int FULL_ROUNDS = 9;

    private Trials() {
    }

    /**
     * {@code rounds} paired runs after one warm-up run of each side: round {@code i} runs the
     * baseline then the subject when {@code i} is even, the subject then the baseline when odd.
     *
     * @throws IllegalArgumentException if {@code rounds < 1}
     */
    public static Paired paired(int rounds, DoubleSupplier baseline, DoubleSupplier subject) {
        Paired[] each = pairedEach(rounds, () -> new double[] {baseline.getAsDouble()},
                () -> new double[] {subject.getAsDouble()});
        return each[0];
    }

    /**
     * As {@link #paired}, for runs that measure several quantities at once (a put phase and a get
     * phase of one run, say): each side returns {@code n} values per run, and the result holds one
     * {@link Paired} per quantity, in the order the runs return them.
     *
     * @throws IllegalArgumentException if {@code rounds < 1}
     * @throws IllegalStateException    if a run returns another number of values than the first
     */
    public static Paired[] pairedEach(int rounds, Supplier<double[]> baseline, Supplier<double[]> subject) {
        requireRounds(rounds);
        int n = baseline.get().length;
        if (subject.get().length != n) {
            throw new IllegalStateException("baseline and subject measure different numbers of quantities");
        }
        double[][][] runs = new double[2][n][rounds]; // [side: 0 baseline, 1 subject][quantity][round]
        for (int i = 0; i < rounds; i++) {
            boolean baselineFirst = i % 2 == 0;
            for (int k = 0; k < 2; k++) {
                int side = (k == 0) == baselineFirst ? 0 : 1;
                double[] v = side == 0 ? baseline.get() : subject.get();
                if (v.length != n) {
                    throw new IllegalStateException("a run returned " + v.length + " values, the first " + n);
                }
                for (int q = 0; q < n; q++) {
                    runs[side][q][i] = v[q];
                }
            }
        }
        Paired[] out = new Paired[n];
        for (int q = 0; q < n; q++) {
            out[q] = new Paired(runs[0][q], runs[1][q]);
        }
        return out;
    }

    /**
     * {@code rounds} measured runs of {@code run} after one unmeasured warm-up run.
     *
     * @throws IllegalArgumentException if {@code rounds < 1}
     */
    public static Sample sample(int rounds, DoubleSupplier run) {
        requireRounds(rounds);
        run.getAsDouble();
        double[] v = new double[rounds];
        for (int i = 0; i < rounds; i++) {
            v[i] = run.getAsDouble();
        }
        return new Sample(v);
    }

    /**
     * Warms up a measure made of many short steps (a revocation, a request) until the JIT has
     * compiled what they run: {@code step} runs in batches of {@code batch}, at least one batch, and
     * stops after a batch during which the JVM spent no time compiling, or once {@code maxNanos}
     * have passed. A fixed count of warm-up steps does not do: a path that runs a few hundred times
     * a second reaches its last compilations seconds in, and on two cores a compiler thread at work
     * takes a core from the threads measured. Returns the steps run.
     *
     * @throws IllegalArgumentException if {@code batch < 1}
     */
    public static <E extends Exception> int warmUntilCompiled(int batch, long maxNanos, Step<E> step) throws E {
        if (batch < 1) {
            throw new IllegalArgumentException("warm-up batch must be at least 1, got " + batch);
        }
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean timed = jit != null && jit.isCompilationTimeMonitoringSupported();
        long deadline = System.nanoTime() + maxNanos;
        int steps = 0;
        while (true) {
            long compiledBefore = timed ? jit.getTotalCompilationTime() : 0; // ms
            for (int i = 0; i < batch; i++) {
                step.run();
            }
            steps += batch;
            if (!timed || jit.getTotalCompilationTime() == compiledBefore || System.nanoTime() - deadline > 0) {
                return steps;
            }
        }
    }

    /** One step of a measure, which may throw {@code E}. */
    @FunctionalInterface
    public interface Step<E extends Exception> {
        /** Runs the step once. */
        void run() throws E;
    }

    /** The median of {@code values} (mean of the middle two for an even count); NaN when empty. */
    public static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    /**
     * The spread Strata reports around a median: the distribution-free confidence interval of the
     * median from order statistics, {@code [x(k), x(n+1-k)]} with the largest {@code k} whose
     * coverage {@code 1 - 2 P(Binomial(n, 1/2) < k)} is still at least {@link #COVERAGE}. With eight
     * values or fewer no such {@code k} exists and the interval is the whole range, min to max;
     * with one value it is that value. NaN values are left out; {@code [NaN, NaN]} when none remain.
     *
     * @return {@code [low, high]}
     */
    public static double[] interval(double[] values) {
        double[] s = Arrays.stream(values).filter(v -> !Double.isNaN(v)).sorted().toArray();
        int n = s.length;
        if (n == 0) {
            return new double[] {Double.NaN, Double.NaN};
        }
        int k = 1;
        while (k + 1 <= (n + 1) / 2 && 1 - 2 * binomialBelow(n, k + 1) >= COVERAGE) {
            k++;
        }
        return new double[] {s[k - 1], s[n - k]};
    }

    /** {@code P(Binomial(n, 1/2) < k)}. */
    private static double binomialBelow(int n, int k) {
        double sum = 0;
        double term = Math.pow(0.5, n);
        for (int j = 0; j < k; j++) {
            sum += term;
            term = term * (n - j) / (j + 1);
        }
        return sum;
    }

    private static void requireRounds(int rounds) {
        if (rounds < 1) {
            throw new IllegalArgumentException("rounds must be at least 1, got " + rounds);
        }
    }
}
