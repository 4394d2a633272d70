package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Measures what the matvec and matmul kernels achieve on this machine, for the engine's roofline
 * figures: GFLOP/s ({@code 2 · batch · rows · cols} per call) and the effective bandwidth of weight streaming
 * (weight bytes per call over the time), next to a {@link MemorySegment#copy} of the same number
 * of bytes measured right after. Weights are seeded random values in a freshly allocated,
 * pre-touched segment larger than the caches for realistic sizes; each figure is the median of
 * the repetitions after a warm-up.
 *
 * <p>Threads: call from one thread at a time; the kernels run on the given pool.
 */
public final class KernelCalibration {

    /**
     * One measurement.
     *
     * @param dtype      weight type
     * @param rows       matrix rows (outputs)
     * @param cols       matrix columns (inputs)
     * @param batch      tokens per call (1 for matvec)
     * @param threads    kernel threads
     * @param seconds    median seconds per call
     * @param gflops     {@code 2 · batch · rows · cols / seconds / 1e9}
     * @param weightGBps weight bytes per second (each weight read once per call), 1e9 bytes per GB
     * @param copyGBps   bytes copied per second by {@link MemorySegment#copy} of the weights' size
     *                   (bytes copied, not bytes moved: a copy reads and writes each byte)
     */
    public record Result(DType dtype, int rows, int cols, int batch, int threads, double seconds, double gflops,
                         double weightGBps, double copyGBps) {
        /** Weight bandwidth as a fraction of the copy bandwidth. */
        public double fractionOfCopy() {
            return weightGBps / copyGBps;
        }
    }

    private KernelCalibration() {
    }

    /**
     * Measures {@code repetitions} matvecs of a {@code [rows, cols]} {@code dtype} matrix on
     * {@code pool} (after as many warm-up calls), then as many copies of its bytes.
     */
    public static Result measureMatvec(DType dtype, int rows, int cols, KernelPool pool, int repetitions) {
        return measure(dtype, rows, cols, 0, pool, repetitions);
    }

    /**
     * Measures {@code repetitions} matmuls of a {@code [rows, cols]} {@code dtype} matrix with a
     * batch of {@code batch} tokens (prefill), then as many copies of the weight bytes.
     */
    public static Result measureMatmul(DType dtype, int rows, int cols, int batch, KernelPool pool, int repetitions) {
        if (batch < 1) {
            throw new IllegalArgumentException("calibration needs a positive batch, got " + batch);
        }
        return measure(dtype, rows, cols, batch, pool, repetitions);
    }

    /** {@code batch == 0}: matvec; otherwise matmul of {@code batch} tokens. */
    private static Result measure(DType dtype, int rows, int cols, int batch, KernelPool pool, int repetitions) {
        if (rows < 1 || cols < 1 || repetitions < 1) {
            throw new IllegalArgumentException("calibration needs positive rows, cols and repetitions, got " + rows
                    + ", " + cols + ", " + repetitions);
        }
        int tokens = Math.max(1, batch);
        long bytes = (long) rows * cols * dtype.bytes();
        Kernels kernels = new Kernels(pool);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment w = arena.allocate(bytes, 64);
            MemorySegment copy = arena.allocate(bytes, 64);
            fillRandom(dtype, w, (long) rows * cols, new SplittableRandom(rows * 31L + cols));
            copy.fill((byte) 1);
            float[] x = new float[tokens * cols];
            SplittableRandom r = new SplittableRandom(7);
            for (int i = 0; i < x.length; i++) {
                x[i] = (float) (r.nextDouble() * 2 - 1);
            }
            float[] y = new float[tokens * rows];
            Runnable call = batch == 0
                    ? () -> kernels.matvec(dtype, w, rows, cols, x, 0, y, 0)
                    : () -> kernels.matmul(dtype, w, rows, cols, x, 0, batch, y, 0);
            double[] times = new double[repetitions];
            for (int i = 0; i < repetitions; i++) {
                call.run();
            }
            for (int i = 0; i < repetitions; i++) {
                long t0 = System.nanoTime();
                call.run();
                times[i] = (System.nanoTime() - t0) / 1e9;
            }
            double seconds = median(times);
            if (!Float.isFinite(y[y.length - 1])) {
                throw new IllegalStateException("calibration output is " + y[y.length - 1] + " for finite inputs");
            }
            for (int i = 0; i < repetitions; i++) {
                MemorySegment.copy(w, 0, copy, 0, bytes);
            }
            for (int i = 0; i < repetitions; i++) {
                long t0 = System.nanoTime();
                MemorySegment.copy(w, 0, copy, 0, bytes);
                times[i] = (System.nanoTime() - t0) / 1e9;
            }
            double copySeconds = median(times);
            return new Result(dtype, rows, cols, tokens, pool.threads(), seconds,
                    2.0 * tokens * rows * cols / seconds / 1e9, bytes / seconds / 1e9, bytes / copySeconds / 1e9);
        }
    }

    private static void fillRandom(DType dtype, MemorySegment w, long elements, SplittableRandom random) {
        for (long i = 0; i < elements; i++) {
            float v = (float) (random.nextDouble() * 0.2 - 0.1);
            switch (dtype) {
                case F32 -> w.setAtIndex(FloatLoads.F32, i, v);
                case BF16 -> w.setAtIndex(FloatLoads.I16, i, FloatLoads.floatToBf16(v));
                case F16 -> w.setAtIndex(FloatLoads.I16, i, Float.floatToFloat16(v));
            }
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    /**
     * Prints measurements: {@code KernelCalibration [rows cols [repetitions [batch [threads...]]]]}
     * (batch 0: matvec), each dtype (system property {@code strata.kernel.dtypes}, default
     * {@code bf16,f16,f32}) at each thread count.
     */
    public static void main(String[] args) {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 4096;
        int cols = args.length > 1 ? Integer.parseInt(args[1]) : 4096;
        int reps = args.length > 2 ? Integer.parseInt(args[2]) : 20;
        int batch = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        int[] threads = args.length > 4 ? Arrays.stream(args, 4, args.length).mapToInt(Integer::parseInt).toArray()
                : new int[] {1, 2};
        DType[] dtypes = Arrays.stream(System.getProperty("strata.kernel.dtypes", "bf16,f16,f32").split(","))
                .map(DType::parse).toArray(DType[]::new);
        for (int t : threads) {
            try (KernelPool pool = new KernelPool(t)) {
                for (DType d : dtypes) {
                    Result res = batch == 0 ? measureMatvec(d, rows, cols, pool, reps)
                            : measureMatmul(d, rows, cols, batch, pool, reps);
                    System.out.printf("%s %s [%d, %d] batch %d threads %d: %.3f ms, %.2f GFLOP/s, weights %.2f GB/s,"
                                    + " copy %.2f GB/s, ratio %.2f%n", batch == 0 ? "matvec" : "matmul", d, rows, cols,
                            res.batch(), t, res.seconds() * 1e3, res.gflops(), res.weightGBps(), res.copyGBps(),
                            res.fractionOfCopy());
                }
            }
        }
    }
}
