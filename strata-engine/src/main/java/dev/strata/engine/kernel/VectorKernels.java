package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;

import java.lang.foreign.MemorySegment;

import static dev.strata.engine.kernel.FloatLoads.FLOATS;
import static dev.strata.engine.kernel.FloatLoads.LANES;

/**
 * Single-threaded Vector API kernels over row ranges; {@link Kernels} runs them on a
 * {@link KernelPool}. Weights and KV live in memory segments (little-endian BF16, F16 or F32, any
 * alignment); activations are {@code float[]} with explicit offsets.
 *
 * <p>Design note — the canonical reduction. Every dot product and every sum in this class is
 * computed in one fixed order that depends only on its length {@code n}: one vector accumulator
 * over elements {@code [0, loopBound(n))} in steps of {@link FloatLoads#LANES} (fused
 * multiply-add per step), then its lanes added left to right into a float, then the tail
 * elements in order with {@link Math#fma}. Row blocking (four rows share each activation load)
 * and batch tiling (four tokens share each converted weight load) keep one accumulator per
 * output element, so an output element's bits never depend on which rows, tokens or threads it
 * was computed with: a matmul row equals the matvec of that token, at any thread count.
 * Elementwise kernels use lanewise IEEE operations whose scalar tail performs the same steps.
 *
 * <p>Stateless; any thread, on disjoint outputs.
 */
public final class VectorKernels {
    private static final int ROW_BLOCK = 16; // weight rows kept hot (in L2) while a batch streams past
    private static final int TILE = 4; // tokens sharing each weight load in matmul, rows in matvec

    private VectorKernels() {
    }

    // ------------------------------------------------------------------ dot products, matvec, matmul

    /**
     * Sum over {@code i < n} of {@code w[wIndex + i] · x[xOff + i]} in the canonical order.
     *
     * @param wIndex element (not byte) index of the first weight
     */
    public static float dot(DType dtype, MemorySegment w, long wIndex, float[] x, int xOff, int n) {
        return dot(dtype, w, wIndex, x, xOff, n, new float[LANES]);
    }

    /** {@link #dot} with a scratch array of {@link FloatLoads#LANES} floats. */
    private static float dot(DType dtype, MemorySegment w, long wIndex, float[] x, int xOff, int n, float[] lanes) {
        int bound = FLOATS.loopBound(n);
        FloatVector acc = FloatVector.zero(FLOATS);
        for (int i = 0; i < bound; i += LANES) {
            acc = FloatLoads.loadVector(dtype, w, wIndex + i).fma(FloatVector.fromArray(FLOATS, x, xOff + i), acc);
        }
        return finishDot(acc, lanes, dtype, w, wIndex, x, xOff, bound, n);
    }

    private static float finishDot(FloatVector acc, float[] lanes, DType dtype, MemorySegment w, long wIndex,
            float[] x, int xOff, int from, int n) {
        float s = laneSum(acc, lanes);
        for (int i = from; i < n; i++) {
            s = Math.fma(FloatLoads.load(dtype, w, wIndex + i), x[xOff + i], s);
        }
        return s;
    }

    private static float laneSum(FloatVector acc, float[] lanes) {
        acc.intoArray(lanes, 0);
        float s = lanes[0];
        for (int l = 1; l < LANES; l++) {
            s += lanes[l];
        }
        return s;
    }

    /**
     * Rows {@code [from, to)} of {@code y = W x}: {@code y[yOff + r] = Σ_i W[r, i] · x[xOff + i]},
     * with W row-major {@code [rows, cols]} (rows beyond {@code to} are not read).
     */
    public static void matvecRows(DType dtype, MemorySegment w, int cols, float[] x, int xOff, float[] y, int yOff,
            int from, int to) {
        // one loop per dtype: each compiles to straight vector code, unpolluted by the others' profiles
        switch (dtype) {
            case BF16 -> matvecRowsBf16(w, cols, x, xOff, y, yOff, from, to);
            case F16 -> matvecRowsF16(w, cols, x, xOff, y, yOff, from, to);
            case F32 -> matvecRowsF32(w, cols, x, xOff, y, yOff, from, to);
        }
    }

    private static void matvecRowsBf16(MemorySegment w, int cols, float[] x, int xOff, float[] y, int yOff,
            int from, int to) {
        int bound = FLOATS.loopBound(cols);
        float[] lanes = new float[LANES];
        int r = from;
        for (; r + TILE <= to; r += TILE) {
            long b0 = (long) r * cols, b1 = b0 + cols, b2 = b1 + cols, b3 = b2 + cols;
            FloatVector a0 = FloatVector.zero(FLOATS), a1 = a0, a2 = a0, a3 = a0;
            for (int i = 0; i < bound; i += LANES) {
                FloatVector xv = FloatVector.fromArray(FLOATS, x, xOff + i);
                a0 = FloatLoads.bf16Vector(w, 2 * (b0 + i)).fma(xv, a0);
                a1 = FloatLoads.bf16Vector(w, 2 * (b1 + i)).fma(xv, a1);
                a2 = FloatLoads.bf16Vector(w, 2 * (b2 + i)).fma(xv, a2);
                a3 = FloatLoads.bf16Vector(w, 2 * (b3 + i)).fma(xv, a3);
            }
            y[yOff + r] = finishDot(a0, lanes, DType.BF16, w, b0, x, xOff, bound, cols);
            y[yOff + r + 1] = finishDot(a1, lanes, DType.BF16, w, b1, x, xOff, bound, cols);
            y[yOff + r + 2] = finishDot(a2, lanes, DType.BF16, w, b2, x, xOff, bound, cols);
            y[yOff + r + 3] = finishDot(a3, lanes, DType.BF16, w, b3, x, xOff, bound, cols);
        }
        for (; r < to; r++) {
            y[yOff + r] = dot(DType.BF16, w, (long) r * cols, x, xOff, cols);
        }
    }

    private static void matvecRowsF16(MemorySegment w, int cols, float[] x, int xOff, float[] y, int yOff,
            int from, int to) {
        // one row at a time: the F16 widening is long enough that several copies of it in one loop
        // body run slower (measured 3.9 GB/s with two or four rows, 5.4 GB/s with one)
        for (int r = from; r < to; r++) {
            y[yOff + r] = dot(DType.F16, w, (long) r * cols, x, xOff, cols);
        }
    }

    private static void matvecRowsF32(MemorySegment w, int cols, float[] x, int xOff, float[] y, int yOff,
            int from, int to) {
        int bound = FLOATS.loopBound(cols);
        float[] lanes = new float[LANES];
        int r = from;
        for (; r + TILE <= to; r += TILE) {
            long b0 = (long) r * cols, b1 = b0 + cols, b2 = b1 + cols, b3 = b2 + cols;
            FloatVector a0 = FloatVector.zero(FLOATS), a1 = a0, a2 = a0, a3 = a0;
            for (int i = 0; i < bound; i += LANES) {
                FloatVector xv = FloatVector.fromArray(FLOATS, x, xOff + i);
                a0 = FloatLoads.f32Vector(w, 4 * (b0 + i)).fma(xv, a0);
                a1 = FloatLoads.f32Vector(w, 4 * (b1 + i)).fma(xv, a1);
                a2 = FloatLoads.f32Vector(w, 4 * (b2 + i)).fma(xv, a2);
                a3 = FloatLoads.f32Vector(w, 4 * (b3 + i)).fma(xv, a3);
            }
            y[yOff + r] = finishDot(a0, lanes, DType.F32, w, b0, x, xOff, bound, cols);
            y[yOff + r + 1] = finishDot(a1, lanes, DType.F32, w, b1, x, xOff, bound, cols);
            y[yOff + r + 2] = finishDot(a2, lanes, DType.F32, w, b2, x, xOff, bound, cols);
            y[yOff + r + 3] = finishDot(a3, lanes, DType.F32, w, b3, x, xOff, bound, cols);
        }
        for (; r < to; r++) {
            y[yOff + r] = dot(DType.F32, w, (long) r * cols, x, xOff, cols);
        }
    }

    /**
     * Rows {@code [from, to)} of {@code Y = X Wᵀ} for a batch: {@code Y[b, r] = Σ_i W[r, i] · X[b, i]}
     * with X row-major {@code [batch, cols]} at {@code xOff} and Y row-major {@code [batch, rows]}
     * at {@code yOff}. Each element equals {@link #dot} of its token and row, bit for bit.
     */
    public static void matmulRows(DType dtype, MemorySegment w, int rows, int cols, float[] x, int xOff, int batch,
            float[] y, int yOff, int from, int to) {
        // one loop per dtype, as in matvecRows
        switch (dtype) {
            case BF16 -> matmulRowsBf16(w, rows, cols, x, xOff, batch, y, yOff, from, to);
            case F16 -> matmulRowsF16(w, rows, cols, x, xOff, batch, y, yOff, from, to);
            case F32 -> matmulRowsF32(w, rows, cols, x, xOff, batch, y, yOff, from, to);
        }
    }

    private static void matmulRowsBf16(MemorySegment w, int rows, int cols, float[] x, int xOff, int batch,
            float[] y, int yOff, int from, int to) {
        int bound = FLOATS.loopBound(cols);
        float[] lanes = new float[LANES];
        for (int rb = from; rb < to; rb += ROW_BLOCK) {
            int re = Math.min(to, rb + ROW_BLOCK);
            int b = 0;
            for (; b + TILE <= batch; b += TILE) {
                int x0 = xOff + b * cols, x1 = x0 + cols, x2 = x1 + cols, x3 = x2 + cols;
                for (int r = rb; r < re; r++) {
                    long base = (long) r * cols;
                    FloatVector a0 = FloatVector.zero(FLOATS), a1 = a0, a2 = a0, a3 = a0;
                    for (int i = 0; i < bound; i += LANES) {
                        FloatVector wv = FloatLoads.bf16Vector(w, 2 * (base + i));
                        a0 = wv.fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
                        a1 = wv.fma(FloatVector.fromArray(FLOATS, x, x1 + i), a1);
                        a2 = wv.fma(FloatVector.fromArray(FLOATS, x, x2 + i), a2);
                        a3 = wv.fma(FloatVector.fromArray(FLOATS, x, x3 + i), a3);
                    }
                    int yr = yOff + r;
                    y[yr + b * rows] = finishDot(a0, lanes, DType.BF16, w, base, x, x0, bound, cols);
                    y[yr + (b + 1) * rows] = finishDot(a1, lanes, DType.BF16, w, base, x, x1, bound, cols);
                    y[yr + (b + 2) * rows] = finishDot(a2, lanes, DType.BF16, w, base, x, x2, bound, cols);
                    y[yr + (b + 3) * rows] = finishDot(a3, lanes, DType.BF16, w, base, x, x3, bound, cols);
                }
            }
            for (; b < batch; b++) {
                for (int r = rb; r < re; r++) {
                    y[yOff + b * rows + r] = dot(DType.BF16, w, (long) r * cols, x, xOff + b * cols, cols);
                }
            }
        }
    }

    private static void matmulRowsF16(MemorySegment w, int rows, int cols, float[] x, int xOff, int batch,
            float[] y, int yOff, int from, int to) {
        int bound = FLOATS.loopBound(cols);
        float[] lanes = new float[LANES];
        for (int rb = from; rb < to; rb += ROW_BLOCK) {
            int re = Math.min(to, rb + ROW_BLOCK);
            int b = 0;
            for (; b + TILE <= batch; b += TILE) {
                int x0 = xOff + b * cols, x1 = x0 + cols, x2 = x1 + cols, x3 = x2 + cols;
                for (int r = rb; r < re; r++) {
                    long base = (long) r * cols;
                    FloatVector a0 = FloatVector.zero(FLOATS), a1 = a0, a2 = a0, a3 = a0;
                    for (int i = 0; i < bound; i += LANES) {
                        FloatVector wv = FloatLoads.f16Vector(w, 2 * (base + i));
                        a0 = wv.fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
                        a1 = wv.fma(FloatVector.fromArray(FLOATS, x, x1 + i), a1);
                        a2 = wv.fma(FloatVector.fromArray(FLOATS, x, x2 + i), a2);
                        a3 = wv.fma(FloatVector.fromArray(FLOATS, x, x3 + i), a3);
                    }
                    int yr = yOff + r;
                    y[yr + b * rows] = finishDot(a0, lanes, DType.F16, w, base, x, x0, bound, cols);
                    y[yr + (b + 1) * rows] = finishDot(a1, lanes, DType.F16, w, base, x, x1, bound, cols);
                    y[yr + (b + 2) * rows] = finishDot(a2, lanes, DType.F16, w, base, x, x2, bound, cols);
                    y[yr + (b + 3) * rows] = finishDot(a3, lanes, DType.F16, w, base, x, x3, bound, cols);
                }
            }
            for (; b < batch; b++) {
                for (int r = rb; r < re; r++) {
                    y[yOff + b * rows + r] = dot(DType.F16, w, (long) r * cols, x, xOff + b * cols, cols);
                }
            }
        }
    }

    private static void matmulRowsF32(MemorySegment w, int rows, int cols, float[] x, int xOff, int batch,
            float[] y, int yOff, int from, int to) {
        int bound = FLOATS.loopBound(cols);
        float[] lanes = new float[LANES];
        for (int rb = from; rb < to; rb += ROW_BLOCK) {
            int re = Math.min(to, rb + ROW_BLOCK);
            int b = 0;
            for (; b + TILE <= batch; b += TILE) {
                int x0 = xOff + b * cols, x1 = x0 + cols, x2 = x1 + cols, x3 = x2 + cols;
                for (int r = rb; r < re; r++) {
                    long base = (long) r * cols;
                    FloatVector a0 = FloatVector.zero(FLOATS), a1 = a0, a2 = a0, a3 = a0;
                    for (int i = 0; i < bound; i += LANES) {
                        FloatVector wv = FloatLoads.f32Vector(w, 4 * (base + i));
                        a0 = wv.fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
                        a1 = wv.fma(FloatVector.fromArray(FLOATS, x, x1 + i), a1);
                        a2 = wv.fma(FloatVector.fromArray(FLOATS, x, x2 + i), a2);
                        a3 = wv.fma(FloatVector.fromArray(FLOATS, x, x3 + i), a3);
                    }
                    int yr = yOff + r;
                    y[yr + b * rows] = finishDot(a0, lanes, DType.F32, w, base, x, x0, bound, cols);
                    y[yr + (b + 1) * rows] = finishDot(a1, lanes, DType.F32, w, base, x, x1, bound, cols);
                    y[yr + (b + 2) * rows] = finishDot(a2, lanes, DType.F32, w, base, x, x2, bound, cols);
                    y[yr + (b + 3) * rows] = finishDot(a3, lanes, DType.F32, w, base, x, x3, bound, cols);
                }
            }
            for (; b < batch; b++) {
                for (int r = rb; r < re; r++) {
                    y[yOff + b * rows + r] = dot(DType.F32, w, (long) r * cols, x, xOff + b * cols, cols);
                }
            }
        }
    }

    // ------------------------------------------------------------------ normalisation and activations

    /** Sum over {@code i < n} of {@code x[off + i]²} in the canonical order. */
    public static float sumOfSquares(float[] x, int off, int n) {
        int bound = FLOATS.loopBound(n);
        FloatVector acc = FloatVector.zero(FLOATS);
        for (int i = 0; i < bound; i += LANES) {
            FloatVector v = FloatVector.fromArray(FLOATS, x, off + i);
            acc = v.fma(v, acc);
        }
        float s = laneSum(acc, new float[LANES]);
        for (int i = bound; i < n; i++) {
            s = Math.fma(x[off + i], x[off + i], s);
        }
        return s;
    }

    /** Sum over {@code i < n} of {@code x[off + i]} in the canonical order. */
    public static float sum(float[] x, int off, int n) {
        int bound = FLOATS.loopBound(n);
        FloatVector acc = FloatVector.zero(FLOATS);
        for (int i = 0; i < bound; i += LANES) {
            acc = acc.add(FloatVector.fromArray(FLOATS, x, off + i));
        }
        float s = laneSum(acc, new float[LANES]);
        for (int i = bound; i < n; i++) {
            s += x[off + i];
        }
        return s;
    }

    /**
     * RMSNorm as Llama and Qwen define it: {@code out[i] = (x[i] · r) · w[i]} with
     * {@code r = 1 / sqrt(Σ x² / n + eps)}, all in float. {@code out} may be {@code x} (same offset).
     *
     * @param weight {@code n} elements of {@code weightType}
     */
    public static void rmsNorm(float[] x, int xOff, MemorySegment weight, DType weightType, float eps, float[] out,
            int outOff, int n) {
        float inv = 1f / (float) Math.sqrt(sumOfSquares(x, xOff, n) / n + eps);
        int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            FloatVector.fromArray(FLOATS, x, xOff + i).mul(inv).mul(FloatLoads.loadVector(weightType, weight, i))
                    .intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = x[xOff + i] * inv * FloatLoads.load(weightType, weight, i);
        }
    }

    /**
     * Softmax of {@code x[off, off + n)} in place, max-subtracted: {@code e^(x−max) / Σ e^(x−max)}.
     * A row of {@code -Infinity} except one finite value gives 1 there and 0 elsewhere.
     */
    public static void softmax(float[] x, int off, int n) {
        float max = max(x, off, n);
        float total = expShifted(x, off, n, max);
        divide(x, off, n, total);
    }

    /** Largest of {@code x[off, off + n)} ({@code n ≥ 1}). */
    public static float max(float[] x, int off, int n) {
        int bound = FLOATS.loopBound(n);
        float m = Float.NEGATIVE_INFINITY;
        if (bound > 0) {
            FloatVector acc = FloatVector.broadcast(FLOATS, Float.NEGATIVE_INFINITY);
            for (int i = 0; i < bound; i += LANES) {
                acc = acc.max(FloatVector.fromArray(FLOATS, x, off + i));
            }
            m = acc.reduceLanes(VectorOperators.MAX); // max is exact: order does not matter
        }
        for (int i = bound; i < n; i++) {
            m = Math.max(m, x[off + i]);
        }
        return m;
    }

    /** Replaces {@code x[i]} by {@code e^(x[i] − shift)} and returns their canonical-order sum. */
    static float expShifted(float[] x, int off, int n, float shift) {
        int bound = FLOATS.loopBound(n);
        FloatVector acc = FloatVector.zero(FLOATS);
        for (int i = 0; i < bound; i += LANES) {
            FloatVector e = VectorMath.exp(FloatVector.fromArray(FLOATS, x, off + i).sub(shift));
            e.intoArray(x, off + i);
            acc = acc.add(e);
        }
        float s = laneSum(acc, new float[LANES]);
        for (int i = bound; i < n; i++) {
            float e = VectorMath.exp(x[off + i] - shift);
            x[off + i] = e;
            s += e;
        }
        return s;
    }

    private static void divide(float[] x, int off, int n, float d) {
        int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            FloatVector.fromArray(FLOATS, x, off + i).div(d).intoArray(x, off + i);
        }
        for (; i < n; i++) {
            x[off + i] = x[off + i] / d;
        }
    }

    /** {@code out[i] = x[i] / (1 + e^(−x[i]))}; {@code out} may be {@code x}. */
    public static void silu(float[] x, int xOff, float[] out, int outOff, int n) {
        int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            FloatVector v = FloatVector.fromArray(FLOATS, x, xOff + i);
            v.div(VectorMath.exp(v.neg()).add(1f)).intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            float v = x[xOff + i];
            out[outOff + i] = v / (VectorMath.exp(-v) + 1f);
        }
    }

    /** The SwiGLU product {@code out[i] = silu(gate[i]) · up[i]}; {@code out} may alias either input. */
    public static void swiglu(float[] gate, int gOff, float[] up, int uOff, float[] out, int outOff, int n) {
        int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            FloatVector g = FloatVector.fromArray(FLOATS, gate, gOff + i);
            FloatVector u = FloatVector.fromArray(FLOATS, up, uOff + i);
            g.div(VectorMath.exp(g.neg()).add(1f)).mul(u).intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            float g = gate[gOff + i];
            out[outOff + i] = g / (VectorMath.exp(-g) + 1f) * up[uOff + i];
        }
    }

    /** {@code out[i] = a[i] + b[i]} (the residual add); {@code out} may alias either input. */
    public static void add(float[] a, int aOff, float[] b, int bOff, float[] out, int outOff, int n) {
        int bound = FLOATS.loopBound(n);
        int i = 0;
        for (; i < bound; i += LANES) {
            FloatVector.fromArray(FLOATS, a, aOff + i).add(FloatVector.fromArray(FLOATS, b, bOff + i))
                    .intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = a[aOff + i] + b[bOff + i];
        }
    }

    // ------------------------------------------------------------------ attention

    /**
     * Attention of query heads {@code [from, to)} for one token over paged KV:
     * {@code out[h] = Σ_t softmax_t(scale · q[h]·K[t, g(h)]) V[t, g(h)]} with
     * {@code g(h) = h / (heads / kvHeads)}.
     *
     * <p>Block by block: the scores of a block's tokens are computed four tokens at a time (each
     * query load shared by four K rows, one accumulator per token, each score the canonical
     * {@link #dot}), then the softmax over all tokens, then the weighted sum of V, where each
     * output vector is kept in a register across a block's tokens and takes their
     * {@code fma(V[t], p[t], acc)} in token order. Every score and every output element is
     * therefore reduced in the same order as a per-token dot and a per-token axpy would reduce it.
     *
     * @param q   {@code [heads, headDim]} at {@code qOff}
     * @param out {@code [heads, headDim]} at {@code outOff}
     */
    public static void attentionHeads(float[] q, int qOff, int heads, PagedKv kv, float scale, float[] out,
            int outOff, int from, int to) {
        attentionHeads(q, qOff, heads, kv, scale, out, outOff, from, to, new float[kv.tokens()], new float[LANES]);
    }

    /**
     * {@link #attentionHeads(float[], int, int, PagedKv, float, float[], int, int, int)} with
     * scratch: {@code scores} of at least {@code kv.tokens()} floats, {@code lanes} of
     * {@link FloatLoads#LANES}.
     */
    static void attentionHeads(float[] q, int qOff, int heads, PagedKv kv, float scale, float[] out, int outOff,
            int from, int to, float[] scores, float[] lanes) {
        int headDim = kv.geometry().headDim();
        int group = heads / kv.geometry().kvHeads();
        int tokens = kv.tokens();
        for (int h = from; h < to; h++) {
            int g = h / group;
            blockScores(kv, g, q, qOff + h * headDim, scale, scores, lanes);
            float total = expShifted(scores, 0, tokens, max(scores, 0, tokens));
            int oh = outOff + h * headDim;
            java.util.Arrays.fill(out, oh, oh + headDim, 0f);
            weightedValues(kv, g, scores, out, oh);
            divide(out, oh, headDim, total);
        }
    }

    /** {@code scores[t] = dot(K[t, g], q[qh..]) · scale} for every token, block by block. */
    private static void blockScores(PagedKv kv, int g, float[] q, int qh, float scale, float[] scores, float[] lanes) {
        int n = kv.geometry().headDim();
        int bt = kv.geometry().blockTokens();
        long stride = (long) kv.geometry().kvHeads() * n; // elements from one token's K to the next's
        int blocks = kv.blocks().size();
        DType dtype = kv.elementType();
        for (int b = 0; b < blocks; b++) {
            MemorySegment seg = kv.blocks().get(b);
            int nt = b == blocks - 1 ? kv.lastBlockTokens() : bt;
            int t0 = b * bt;
            long base = kv.keyIndex(t0, g);
            // one loop per dtype, as in matvecRows; F16 one token at a time, as its matvec
            switch (dtype) {
                case F32 -> blockScoresF32(seg, base, stride, nt, q, qh, n, scale, scores, t0, lanes);
                case BF16 -> blockScoresBf16(seg, base, stride, nt, q, qh, n, scale, scores, t0, lanes);
                case F16 -> {
                    for (int tt = 0; tt < nt; tt++) {
                        scores[t0 + tt] = dot(DType.F16, seg, base + tt * stride, q, qh, n, lanes) * scale;
                    }
                }
            }
        }
    }

    /** Scores of {@code nt} F32 K rows at {@code base + tt · stride}, four rows per pass. */
    private static void blockScoresF32(MemorySegment seg, long base, long stride, int nt, float[] q, int qh, int n,
            float scale, float[] scores, int t0, float[] lanes) {
        int bound = FLOATS.loopBound(n);
        int tt = 0;
        for (; tt + TILE <= nt; tt += TILE) {
            long k0 = base + tt * stride, k1 = k0 + stride, k2 = k1 + stride, k3 = k2 + stride;
            FloatVector a0 = FloatVector.zero(FLOATS), a1 = a0, a2 = a0, a3 = a0;
            for (int i = 0; i < bound; i += LANES) {
                FloatVector qv = FloatVector.fromArray(FLOATS, q, qh + i);
                a0 = FloatLoads.f32Vector(seg, 4 * (k0 + i)).fma(qv, a0);
                a1 = FloatLoads.f32Vector(seg, 4 * (k1 + i)).fma(qv, a1);
                a2 = FloatLoads.f32Vector(seg, 4 * (k2 + i)).fma(qv, a2);
                a3 = FloatLoads.f32Vector(seg, 4 * (k3 + i)).fma(qv, a3);
            }
            scores[t0 + tt] = finishDot(a0, lanes, DType.F32, seg, k0, q, qh, bound, n) * scale;
            scores[t0 + tt + 1] = finishDot(a1, lanes, DType.F32, seg, k1, q, qh, bound, n) * scale;
            scores[t0 + tt + 2] = finishDot(a2, lanes, DType.F32, seg, k2, q, qh, bound, n) * scale;
            scores[t0 + tt + 3] = finishDot(a3, lanes, DType.F32, seg, k3, q, qh, bound, n) * scale;
        }
        for (; tt < nt; tt++) {
            scores[t0 + tt] = dot(DType.F32, seg, base + tt * stride, q, qh, n, lanes) * scale;
        }
    }

    /** Scores of {@code nt} BF16 K rows at {@code base + tt · stride}, four rows per pass. */
    private static void blockScoresBf16(MemorySegment seg, long base, long stride, int nt, float[] q, int qh, int n,
            float scale, float[] scores, int t0, float[] lanes) {
        int bound = FLOATS.loopBound(n);
        int tt = 0;
        for (; tt + TILE <= nt; tt += TILE) {
            long k0 = base + tt * stride, k1 = k0 + stride, k2 = k1 + stride, k3 = k2 + stride;
            FloatVector a0 = FloatVector.zero(FLOATS), a1 = a0, a2 = a0, a3 = a0;
            for (int i = 0; i < bound; i += LANES) {
                FloatVector qv = FloatVector.fromArray(FLOATS, q, qh + i);
                a0 = FloatLoads.bf16Vector(seg, 2 * (k0 + i)).fma(qv, a0);
                a1 = FloatLoads.bf16Vector(seg, 2 * (k1 + i)).fma(qv, a1);
                a2 = FloatLoads.bf16Vector(seg, 2 * (k2 + i)).fma(qv, a2);
                a3 = FloatLoads.bf16Vector(seg, 2 * (k3 + i)).fma(qv, a3);
            }
            scores[t0 + tt] = finishDot(a0, lanes, DType.BF16, seg, k0, q, qh, bound, n) * scale;
            scores[t0 + tt + 1] = finishDot(a1, lanes, DType.BF16, seg, k1, q, qh, bound, n) * scale;
            scores[t0 + tt + 2] = finishDot(a2, lanes, DType.BF16, seg, k2, q, qh, bound, n) * scale;
            scores[t0 + tt + 3] = finishDot(a3, lanes, DType.BF16, seg, k3, q, qh, bound, n) * scale;
        }
        for (; tt < nt; tt++) {
            scores[t0 + tt] = dot(DType.BF16, seg, base + tt * stride, q, qh, n, lanes) * scale;
        }
    }

    /** {@code out[oh + i] = fma(V[t, g][i], p[t], out[oh + i])} for t = 0, 1, ... in order, block by block. */
    private static void weightedValues(PagedKv kv, int g, float[] p, float[] out, int oh) {
        DType dtype = kv.elementType();
        int n = kv.geometry().headDim();
        int bt = kv.geometry().blockTokens();
        long stride = (long) kv.geometry().kvHeads() * n;
        int bound = FLOATS.loopBound(n);
        int blocks = kv.blocks().size();
        for (int b = 0; b < blocks; b++) {
            MemorySegment seg = kv.blocks().get(b);
            int nt = b == blocks - 1 ? kv.lastBlockTokens() : bt;
            int t0 = b * bt;
            long base = kv.valueIndex(t0, g);
            switch (dtype) { // one loop per dtype, as in matvecRows
                case F32 -> {
                    for (int i = 0; i < bound; i += LANES) {
                        FloatVector acc = FloatVector.fromArray(FLOATS, out, oh + i);
                        long at = base + i;
                        for (int tt = 0; tt < nt; tt++, at += stride) {
                            acc = FloatLoads.f32Vector(seg, 4 * at).fma(FloatVector.broadcast(FLOATS, p[t0 + tt]), acc);
                        }
                        acc.intoArray(out, oh + i);
                    }
                }
                case BF16 -> {
                    for (int i = 0; i < bound; i += LANES) {
                        FloatVector acc = FloatVector.fromArray(FLOATS, out, oh + i);
                        long at = base + i;
                        for (int tt = 0; tt < nt; tt++, at += stride) {
                            acc = FloatLoads.bf16Vector(seg, 2 * at).fma(FloatVector.broadcast(FLOATS, p[t0 + tt]), acc);
                        }
                        acc.intoArray(out, oh + i);
                    }
                }
                case F16 -> {
                    for (int i = 0; i < bound; i += LANES) {
                        FloatVector acc = FloatVector.fromArray(FLOATS, out, oh + i);
                        long at = base + i;
                        for (int tt = 0; tt < nt; tt++, at += stride) {
                            acc = FloatLoads.f16Vector(seg, 2 * at).fma(FloatVector.broadcast(FLOATS, p[t0 + tt]), acc);
                        }
                        acc.intoArray(out, oh + i);
                    }
                }
            }
            for (int i = bound; i < n; i++) {
                float acc = out[oh + i];
                long at = base + i;
                for (int tt = 0; tt < nt; tt++, at += stride) {
                    acc = Math.fma(FloatLoads.load(dtype, seg, at), p[t0 + tt], acc);
                }
                out[oh + i] = acc;
            }
        }
    }
}
