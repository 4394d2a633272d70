package dev.strata.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Measures how noisy the machine is while a benchmark runs: two fixed reference workloads, a
 * memory copy (bandwidth) and a small compute loop (one core's arithmetic), each run a few times
 * at the start and again at the end of a scenario. Their spread says how far any figure of the
 * run can be trusted: a ratio whose spread is narrower than the machine's noise is pairing at work;
 * a reference that moved between start and end means the machine's load changed during the run.
 *
 * <p>Confined to the calling thread; each call allocates and frees its own buffers.
 */
public final class NoiseProbe {
    /** Runs of each reference workload per probe. */
    static final int RUNS = 5;

    private NoiseProbe() {
    }

    /**
     * One probe: {@link #RUNS} timed runs of each reference workload after one warm-up run.
     *
     * @param when  {@code start} or {@code end}, written into each reading
     * @param quick smaller workloads (a quick run checks that things work)
     */
    public static List<NoiseReading> probe(String when, boolean quick) {
        long copyBytes = (quick ? 16L : 64L) << 20;
        long loopIterations = quick ? 2_000_000L : 20_000_000L;
        List<NoiseReading> out = new ArrayList<>(2);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(copyBytes, 4096);
            MemorySegment dst = arena.allocate(copyBytes, 4096);
            src.fill((byte) 0x5A);
            Sample copy = Trials.sample(RUNS, () -> {
                long t0 = System.nanoTime();
                MemorySegment.copy(src, 0, dst, 0, copyBytes);
                return copyBytes / (double) (System.nanoTime() - t0); // bytes per ns == GB/s
            });
            out.add(NoiseReading.of(String.format(Locale.ROOT, "memory copy %d MiB", copyBytes >> 20), "GB/s", when, copy));
        }
        long[] sink = {0};
        Sample loop = Trials.sample(RUNS, () -> {
            long t0 = System.nanoTime();
            sink[0] += computeLoop(loopIterations, sink[0]);
            return (System.nanoTime() - t0) / 1e6;
        });
        out.add(NoiseReading.of(String.format(Locale.ROOT, "compute loop %d M steps", loopIterations / 1_000_000), "ms", when,
                loop));
        return out;
    }

    /** A fixed chain of dependent integer steps (an xorshift generator), so the time is one core's, not memory's. */
    static long computeLoop(long iterations, long seed) {
        long x = seed | 1;
        for (long i = 0; i < iterations; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x;
    }

    /**
     * One reference workload's runs in one probe.
     *
     * @param workload e.g. {@code memory copy 64 MiB}
     * @param unit     e.g. {@code GB/s} or {@code ms}
     * @param when     {@code start} or {@code end} of the run
     * @param median   the median of the runs
     * @param low      the slowest or smallest run (min)
     * @param high     the largest run (max)
     * @param runs     how many runs
     */
    public record NoiseReading(String workload, String unit, String when, double median, double low, double high, int runs) {
        static NoiseReading of(String workload, String unit, String when, Sample s) {
            double[] v = s.values();
            double lo = java.util.Arrays.stream(v).min().orElse(Double.NaN);
            double hi = java.util.Arrays.stream(v).max().orElse(Double.NaN);
            return new NoiseReading(workload, unit, when, s.median(), lo, hi, s.rounds());
        }

        /** {@code (high - low) / median}: the relative spread of the runs. */
        public double spread() {
            return median > 0 ? (high - low) / median : Double.NaN;
        }

        /** e.g. {@code memory copy 64 MiB at start: 9.10 GB/s, min-max 8.90-9.40 (5.5%), 5 runs}. */
        public String describe() {
            return String.format(Locale.ROOT, "%s at %s: %.3g %s, min-max %.3g-%.3g (%.1f%%), %d runs", workload, when, median, unit,
                    low, high, 100 * spread(), runs);
        }
    }
}
