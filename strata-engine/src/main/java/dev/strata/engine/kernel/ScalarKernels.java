package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;

import java.lang.foreign.MemorySegment;

/**
 * Scalar reference implementations of every kernel, written for clarity: one element at a time,
 * sums and transcendental functions in double, rounded to float once at the end. The vector
 * kernels are tested against these within a documented tolerance (they differ in rounding and
 * summation order, not in math). Weights are read through {@link FloatLoads#load}, which equals
 * the bit definitions of BF16 and {@link Float#float16ToFloat}.
 *
 * <p>Stateless; any thread.
 */
public final class ScalarKernels {
    private ScalarKernels() {
    }

    /** {@code y[r] = Σ_i W[r, i] · x[i]} for W row-major {@code [rows, cols]}. */
    public static void matvec(DType dtype, MemorySegment w, int rows, int cols, float[] x, int xOff, float[] y,
            int yOff) {
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int i = 0; i < cols; i++) {
                s += (double) FloatLoads.load(dtype, w, (long) r * cols + i) * x[xOff + i];
            }
            y[yOff + r] = (float) s;
        }
    }

    /** {@code Y[b, r] = Σ_i W[r, i] · X[b, i]}, X {@code [batch, cols]}, Y {@code [batch, rows]}. */
    public static void matmul(DType dtype, MemorySegment w, int rows, int cols, float[] x, int xOff, int batch,
            float[] y, int yOff) {
        for (int b = 0; b < batch; b++) {
            matvec(dtype, w, rows, cols, x, xOff + b * cols, y, yOff + b * rows);
        }
    }

    /** {@code out[i] = x[i] / sqrt(mean(x²) + eps) · w[i]}. */
    public static void rmsNorm(float[] x, int xOff, MemorySegment weight, DType weightType, float eps, float[] out,
            int outOff, int n) {
        double ss = 0;
        for (int i = 0; i < n; i++) {
            ss += (double) x[xOff + i] * x[xOff + i];
        }
        double inv = 1.0 / Math.sqrt(ss / n + eps);
        for (int i = 0; i < n; i++) {
            out[outOff + i] = (float) (x[xOff + i] * inv * FloatLoads.load(weightType, weight, i));
        }
    }

    /**
     * Rotate-half RoPE of {@code heads} heads in place: pair {@code (i, i + d/2)} rotated by
     * {@code position · theta^(−2i/d)} (no scaling).
     */
    public static void rope(float[] x, int off, int heads, int headDim, double theta, long position) {
        int half = headDim / 2;
        for (int h = 0; h < heads; h++) {
            int a = off + h * headDim;
            for (int i = 0; i < half; i++) {
                double angle = position * Math.pow(theta, -2.0 * i / headDim);
                double c = Math.cos(angle);
                double s = Math.sin(angle);
                double x0 = x[a + i];
                double x1 = x[a + half + i];
                x[a + i] = (float) (x0 * c - x1 * s);
                x[a + half + i] = (float) (x1 * c + x0 * s);
            }
        }
    }

    /** Softmax in place: {@code e^(x − max) / Σ e^(x − max)}. */
    public static void softmax(float[] x, int off, int n) {
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, x[off + i]);
        }
        double[] e = new double[n];
        double total = 0;
        for (int i = 0; i < n; i++) {
            e[i] = Math.exp(x[off + i] - max);
            total += e[i];
        }
        for (int i = 0; i < n; i++) {
            x[off + i] = (float) (e[i] / total);
        }
    }

    /** {@code out[i] = x[i] / (1 + e^(−x[i]))}. */
    public static void silu(float[] x, int xOff, float[] out, int outOff, int n) {
        for (int i = 0; i < n; i++) {
            double v = x[xOff + i];
            out[outOff + i] = (float) (v / (1 + Math.exp(-v)));
        }
    }

    /** {@code out[i] = silu(gate[i]) · up[i]}. */
    public static void swiglu(float[] gate, int gOff, float[] up, int uOff, float[] out, int outOff, int n) {
        for (int i = 0; i < n; i++) {
            double g = gate[gOff + i];
            out[outOff + i] = (float) (g / (1 + Math.exp(-g)) * up[uOff + i]);
        }
    }

    /** {@code out[i] = a[i] + b[i]}. */
    public static void add(float[] a, int aOff, float[] b, int bOff, float[] out, int outOff, int n) {
        for (int i = 0; i < n; i++) {
            out[outOff + i] = a[aOff + i] + b[bOff + i];
        }
    }

    /**
     * Attention of one query token over paged KV, token by token: scores
     * {@code q[h]·K[t, g] / sqrt(d)}, softmax, weighted sum of V, all in double.
     */
    public static void attention(float[] q, int qOff, int heads, PagedKv kv, float[] out, int outOff) {
        int headDim = kv.geometry().headDim();
        int group = heads / kv.geometry().kvHeads();
        DType dtype = kv.elementType();
        int tokens = kv.tokens();
        double scale = 1.0 / Math.sqrt(headDim);
        double[] scores = new double[tokens];
        for (int h = 0; h < heads; h++) {
            int g = h / group;
            double max = Double.NEGATIVE_INFINITY;
            for (int t = 0; t < tokens; t++) {
                double s = 0;
                for (int i = 0; i < headDim; i++) {
                    s += (double) q[qOff + h * headDim + i] * FloatLoads.load(dtype, kv.block(t), kv.keyIndex(t, g) + i);
                }
                scores[t] = s * scale;
                max = Math.max(max, scores[t]);
            }
            double total = 0;
            for (int t = 0; t < tokens; t++) {
                scores[t] = Math.exp(scores[t] - max);
                total += scores[t];
            }
            for (int i = 0; i < headDim; i++) {
                double o = 0;
                for (int t = 0; t < tokens; t++) {
                    o += scores[t] * FloatLoads.load(dtype, kv.block(t), kv.valueIndex(t, g) + i);
                }
                out[outOff + h * headDim + i] = (float) (o / total);
            }
        }
    }
}
