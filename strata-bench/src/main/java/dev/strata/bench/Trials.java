package dev.strata.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;
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
 * <p>Second look ({@link #pairedUntilDecided}). A figure whose true ratio lies a little off its goal
 * is judged inconclusive in one run and met or missed in the next, as its spread from nine rounds
 * happens to reach the goal or not. Where more rounds are cheap, such a figure is measured further:
 * when the spread after the first rounds straddles the goal, the same alternation goes on to a
 * larger count, and the figure is judged once more on all of its rounds, at the stricter coverage
 * {@link #SECOND_LOOK_COVERAGE}. The two looks together keep the chance of a wrong verdict within
 * that of one look at {@link #COVERAGE} plus one at the second look's, and a figure that sits on its
 * goal stays inconclusive.
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

    /**
     * Coverage of the interval a figure is judged on at its second look ({@link #pairedUntilDecided}):
     * half the first look's chance of a miss, so that the two looks together miss at most
     * {@code (1 - COVERAGE) * 1.5} of the time.
     */
    public static final double SECOND_LOOK_COVERAGE = 1 - (1 - COVERAGE) / 2;

    /**
     * Rounds of a full run's figure after a second look, where a round is cheap (a sweep through
     * memory): three times {@link #FULL_ROUNDS}, which narrows the median's interval at
     * {@link #SECOND_LOOK_COVERAGE} to the 8th to 20th of 27 values.
     */
    public static final int SECOND_LOOK_ROUNDS = 3 * FULL_ROUNDS;

    /**
     * How long a warm-up goes on without the JVM's compilation time growing before it ends
     * ({@link #warmUntilCompiled}), ns: longer than the gaps between the compilations of a
     * deoptimised path being compiled again (up to about 0.45 s in a compilation log of
     * {@code bench tiers}' first gather).
     */
    public static final long JIT_QUIET_NANOS = 500_000_000L;

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
        int n = warmUp(baseline, subject);
        double[][][] runs = new double[2][n][rounds]; // [side: 0 baseline, 1 subject][quantity][round]
        runRounds(0, rounds, baseline, subject, runs);
        Paired[] out = new Paired[n];
        for (int q = 0; q < n; q++) {
            out[q] = new Paired(runs[0][q], runs[1][q]);
        }
        return out;
    }

    /**
     * As {@link #paired}, with a second look: after {@code rounds} rounds the figure is judged
     * against {@code goal} (on the ratio, or on the subject's value when the goal names a unit, as
     * {@link Figure#paired} judges it); if it is inconclusive, rounds go on, alternating as before,
     * until there are {@code maxRounds}, and the result is judged on all of them at
     * {@link #SECOND_LOOK_COVERAGE} ({@link Paired#looks()} is 2). With {@code maxRounds == rounds}
     * this is {@link #paired}.
     *
     * @throws IllegalArgumentException if {@code rounds < 1}, {@code maxRounds < rounds}, or the
     *                                  goal cannot be parsed
     */
    public static Paired pairedUntilDecided(int rounds, int maxRounds, String goal, DoubleSupplier baseline,
                                            DoubleSupplier subject) {
        Goal g = Goal.parse(goal);
        return pairedUntilDecided(rounds, maxRounds, p -> p.judge(g), baseline, subject);
    }

    /**
     * As {@link #pairedUntilDecided(int, int, String, DoubleSupplier, DoubleSupplier)}, for a figure
     * judged on something derived from the rounds (a change of unit, say): {@code verdict} gives the
     * figure's verdict on rounds measured so far.
     *
     * @throws IllegalArgumentException if {@code rounds < 1} or {@code maxRounds < rounds}
     */
    public static Paired pairedUntilDecided(int rounds, int maxRounds, Function<Paired, Verdict> verdict,
                                            DoubleSupplier baseline, DoubleSupplier subject) {
        requireRounds(rounds);
        if (maxRounds < rounds) {
            throw new IllegalArgumentException("a second look cannot have fewer rounds than the first: " + maxRounds
                    + " rounds after " + rounds);
        }
        Supplier<double[]> b = () -> new double[] {baseline.getAsDouble()};
        Supplier<double[]> s = () -> new double[] {subject.getAsDouble()};
        warmUp(b, s);
        double[][][] runs = new double[2][1][maxRounds];
        int n = roundsUntilDecided(rounds, maxRounds, i -> runRounds(i, i + 1, b, s, runs),
                () -> verdict.apply(Paired.firstRounds(runs[0][0], runs[1][0], rounds, rounds)) == Verdict.INCONCLUSIVE);
        return Paired.firstRounds(runs[0][0], runs[1][0], n, rounds);
    }

    /** One round (or block of rounds) of a measure, by its index. */
    @FunctionalInterface
    public interface Round<E extends Exception> {
        void run(int index) throws E;
    }

    /**
     * The second look's course ({@link #pairedUntilDecided}), for measures that run their rounds
     * themselves: runs rounds {@code 0} to {@code rounds - 1}; then, if {@code undecided} says a
     * figure of them is inconclusive, on to {@code maxRounds}. Returns the rounds run; judge them
     * with {@link Paired#firstRounds}.
     */
    public static <E extends Exception> int roundsUntilDecided(int rounds, int maxRounds, Round<E> round,
                                                               java.util.function.BooleanSupplier undecided) throws E {
        for (int i = 0; i < rounds; i++) {
            round.run(i);
        }
        if (maxRounds == rounds || !undecided.getAsBoolean()) {
            return rounds;
        }
        for (int i = rounds; i < maxRounds; i++) {
            round.run(i);
        }
        return maxRounds;
    }

    /** Runs each side once unmeasured; returns how many quantities a run measures. */
    private static int warmUp(Supplier<double[]> baseline, Supplier<double[]> subject) {
        int n = baseline.get().length;
        if (subject.get().length != n) {
            throw new IllegalStateException("baseline and subject measure different numbers of quantities");
        }
        return n;
    }

    /**
     * Rounds {@code from} to {@code to - 1} into {@code runs[side][quantity][round]}: round {@code i}
     * runs the baseline first when {@code i} is even, the subject first when odd.
     */
    private static void runRounds(int from, int to, Supplier<double[]> baseline, Supplier<double[]> subject,
                                  double[][][] runs) {
        int n = runs[0].length;
        for (int i = from; i < to; i++) {
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
     * Warms up a measure until the JIT has compiled what it runs and stayed quiet: {@code step}
     * runs in batches of {@code batch}, at least one batch, and stops once
     * {@link #JIT_QUIET_NANOS} have passed since the end of the last batch during which the JVM's
     * total compilation time grew (counted from the start when it never did), or once {@code maxNanos}
     * have passed. A fixed count of warm-up steps does not do: a path that runs a few hundred times
     * a second reaches its last compilations seconds in, and on two cores a compiler thread at work
     * takes a core from the threads measured. Nor does the first batch that compiles nothing: a
     * path whose code was compiled for another use (the transfer engine's batch loop after a run of
     * plain copies, then warmed by its first gather) is deoptimised, runs interpreted, and is
     * compiled again, some of it twice more, over the next seconds, while a batch of one gather
     * (8 ms) often passes without the compilation time growing: the first gather figure measured after
     * the copy figures ran at 0.44–0.64 of its baseline where, measured first, it ran at 0.84.
     * Returns the steps run.
     *
     * @throws IllegalArgumentException if {@code batch < 1}
     */
    public static <E extends Exception> int warmUntilCompiled(int batch, long maxNanos, Step<E> step) throws E {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        LongSupplier compiledMillis = jit != null && jit.isCompilationTimeMonitoringSupported()
                ? jit::getTotalCompilationTime : null;
        return warmUntilQuiet(batch, maxNanos, JIT_QUIET_NANOS, compiledMillis, System::nanoTime, step);
    }

    /**
     * {@link #warmUntilCompiled} with its clocks given: {@code compiledMillis} is the JVM's total
     * compilation time (null where it is not measured: one batch), {@code nanoTime} the clock
     * the quiet spell and the deadline are read on.
     */
    static <E extends Exception> int warmUntilQuiet(int batch, long maxNanos, long quietNanos, LongSupplier compiledMillis,
                                                    LongSupplier nanoTime, Step<E> step) throws E {
        if (batch < 1) {
            throw new IllegalArgumentException("warm-up batch must be at least 1, got " + batch);
        }
        long start = nanoTime.getAsLong();
        long quietSince = start; // end of the last batch during which the compilation time grew
        long compiled = compiledMillis == null ? 0 : compiledMillis.getAsLong(); // ms
        int steps = 0;
        while (true) {
            for (int i = 0; i < batch; i++) {
                step.run();
            }
            steps += batch;
            long now = nanoTime.getAsLong();
            if (compiledMillis == null || now - start - maxNanos > 0) {
                return steps;
            }
            long c = compiledMillis.getAsLong();
            if (c != compiled) {
                compiled = c;
                quietSince = now;
            } else if (now - quietSince >= quietNanos) {
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
        return interval(values, COVERAGE);
    }

    /**
     * As {@link #interval(double[])}, at {@code coverage} (the whole range when no order
     * statistics reach it).
     *
     * @throws IllegalArgumentException if {@code coverage} is not in (0, 1)
     */
    public static double[] interval(double[] values, double coverage) {
        if (!(coverage > 0 && coverage < 1)) {
            throw new IllegalArgumentException("coverage must lie strictly between 0 and 1, got " + coverage);
        }
        double[] s = Arrays.stream(values).filter(v -> !Double.isNaN(v)).sorted().toArray();
        int n = s.length;
        if (n == 0) {
            return new double[] {Double.NaN, Double.NaN};
        }
        int k = 1;
        while (k + 1 <= (n + 1) / 2 && 1 - 2 * binomialBelow(n, k + 1) >= coverage) {
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
