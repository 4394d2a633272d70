package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;
import dev.strata.engine.model.Tensor;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The engine's multi-threaded kernels: matvec, matmul and attention split over output rows or
 * query heads on a {@link KernelPool}; each output is computed entirely by one thread in the
 * canonical order of {@link VectorKernels}, so results are the same bits at any thread count and
 * in every run. Elementwise kernels (norm, activations, residual add, RoPE) are cheap next to the
 * matrix work and run on the caller through {@link VectorKernels} and {@link Rope}.
 *
 * <p>Accuracy against {@link ScalarKernels} (double-precision references): a float reduction of
 * length {@code n} stays within {@code 1e-5 · sqrt(n) · Σ|terms|} of the exact value.
 *
 * <p>Threads: any thread may call; concurrent calls share the pool. Outputs must not alias inputs
 * of the same call.
 */
public final class Kernels {
    private final KernelPool pool;

    /** Kernels running on {@code pool} (not closed by this object). */
    public Kernels(KernelPool pool) {
        this.pool = Objects.requireNonNull(pool, "pool");
    }

    /** The pool the kernels run on. */
    public KernelPool pool() {
        return pool;
    }

    /**
     * {@code y[yOff + r] = Σ_i W[r, i] · x[xOff + i]} for W row-major {@code [rows, cols]} of
     * {@code dtype} (Hugging Face's {@code [out, in]} projection layout: y = W x).
     */
    public void matvec(DType dtype, MemorySegment w, int rows, int cols, float[] x, int xOff, float[] y, int yOff) {
        checkWeights(dtype, w, rows, cols);
        Objects.checkFromIndexSize(xOff, cols, x.length);
        Objects.checkFromIndexSize(yOff, rows, y.length);
        pool.parallelFor(rows, (from, to) -> VectorKernels.matvecRows(dtype, w, cols, x, xOff, y, yOff, from, to));
    }

    /** {@link #matvec} with a 2-D weight tensor {@code [out, in]}. */
    public void matvec(Tensor w, float[] x, int xOff, float[] y, int yOff) {
        matvec(w.dtype(), w.data(), rows(w), cols(w), x, xOff, y, yOff);
    }

    /**
     * {@code Y[b, r] = Σ_i W[r, i] · X[b, i]} for a batch of {@code batch} tokens: X row-major
     * {@code [batch, cols]} at {@code xOff}, Y row-major {@code [batch, rows]} at {@code yOff}.
     * Each row of Y equals {@link #matvec} of that token bit for bit.
     */
    public void matmul(DType dtype, MemorySegment w, int rows, int cols, float[] x, int xOff, int batch, float[] y,
            int yOff) {
        checkWeights(dtype, w, rows, cols);
        if (batch < 0) {
            throw new IllegalArgumentException("batch must not be negative, got " + batch);
        }
        Objects.checkFromIndexSize(xOff, batch * cols, x.length);
        Objects.checkFromIndexSize(yOff, batch * rows, y.length);
        pool.parallelFor(rows, (from, to) -> VectorKernels.matmulRows(dtype, w, rows, cols, x, xOff, batch, y, yOff,
                from, to));
    }

    /** {@link #matmul} with a 2-D weight tensor {@code [out, in]}. */
    public void matmul(Tensor w, float[] x, int xOff, int batch, float[] y, int yOff) {
        matmul(w.dtype(), w.data(), rows(w), cols(w), x, xOff, batch, y, yOff);
    }

    /**
     * The matvec of every part of {@code stack} with the same input in one call:
     * {@code ys[p][r] = Σ_i W_p[r, i] · x[xOff + i]}, each {@code ys[p]} from index 0. Bit for bit
     * what {@link #matvec} of each part gives; the parts' rows are split over the threads as one range.
     */
    public void matvec(RowStack stack, float[] x, int xOff, float[][] ys) {
        checkOutputs(stack, ys, 1);
        Objects.checkFromIndexSize(xOff, stack.cols(), x.length);
        DType dtype = stack.dtype();
        int cols = stack.cols();
        pool.parallelFor(stack.totalRows(), (from, to) -> {
            for (int p = stack.partOf(from); from < to; p++) {
                int start = stack.start(p);
                int end = Math.min(to, start + stack.rows(p));
                VectorKernels.matvecRows(dtype, stack.weights(p), cols, x, xOff, ys[p], 0, from - start, end - start);
                from = end;
            }
        });
    }

    /**
     * The matmul of every part of {@code stack} with the same batch in one call: X row-major
     * {@code [batch, cols]} at {@code xOff}, {@code ys[p]} row-major {@code [batch, rows(p)]} from
     * index 0. Bit for bit what {@link #matmul} of each part gives.
     */
    public void matmul(RowStack stack, float[] x, int xOff, int batch, float[][] ys) {
        if (batch < 0) {
            throw new IllegalArgumentException("batch must not be negative, got " + batch);
        }
        checkOutputs(stack, ys, batch);
        Objects.checkFromIndexSize(xOff, batch * stack.cols(), x.length);
        DType dtype = stack.dtype();
        int cols = stack.cols();
        pool.parallelFor(stack.totalRows(), (from, to) -> {
            for (int p = stack.partOf(from); from < to; p++) {
                int start = stack.start(p);
                int rows = stack.rows(p);
                int end = Math.min(to, start + rows);
                VectorKernels.matmulRows(dtype, stack.weights(p), rows, cols, x, xOff, batch, ys[p], 0, from - start,
                        end - start);
                from = end;
            }
        });
    }

    private static void checkOutputs(RowStack stack, float[][] ys, int batch) {
        if (ys.length != stack.parts()) {
            throw new IllegalArgumentException(ys.length + " output arrays for " + stack);
        }
        for (int p = 0; p < ys.length; p++) {
            Objects.checkFromIndexSize(0, batch * stack.rows(p), ys[p].length);
        }
    }

    /**
     * Attention of one query token, {@code heads} query heads, over the paged KV of one layer;
     * query head {@code h} reads KV head {@code h / (heads / kvHeads)}; scores are scaled by
     * {@code 1/sqrt(headDim)}.
     *
     * @param q   {@code [heads, headDim]} at {@code qOff}
     * @param out {@code [heads, headDim]} at {@code outOff}
     */
    public void attention(float[] q, int qOff, int heads, PagedKv kv, float[] out, int outOff) {
        int kvHeads = kv.geometry().kvHeads();
        if (heads < kvHeads || heads % kvHeads != 0) {
            throw new IllegalArgumentException(heads + " query heads do not group evenly over " + kvHeads + " KV heads");
        }
        int headDim = kv.geometry().headDim();
        Objects.checkFromIndexSize(qOff, heads * headDim, q.length);
        Objects.checkFromIndexSize(outOff, heads * headDim, out.length);
        float scale = (float) (1.0 / Math.sqrt(headDim));
        pool.parallelFor(heads, (from, to) -> VectorKernels.attentionHeads(q, qOff, heads, kv, scale, out, outOff,
                from, to));
    }

    /**
     * {@link #attention} of {@code rows} query tokens in one call: row {@code r} has its query at
     * {@code qOff + r · heads · headDim}, attends over {@code kvs[r]} (its own sequence's KV up to
     * it; every view of the same geometry and layer) and writes its output at
     * {@code outOff + r · heads · headDim}. Each row's output has the bits of {@link #attention}
     * of that row alone.
     *
     * <p>The (row, head) pairs are split over the threads in an order that alternates short and
     * long rows (first, last, second, second last, ...), so each thread's share of a causal prefill,
     * whose rows grow in length, is about the same work.
     */
    public void attention(float[] q, int qOff, int heads, PagedKv[] kvs, int rows, float[] out, int outOff) {
        if (rows < 0 || rows > kvs.length) {
            throw new IllegalArgumentException(rows + " query rows but " + kvs.length + " KV views");
        }
        if (rows == 0) {
            return;
        }
        PagedKv first = kvs[0];
        int kvHeads = first.geometry().kvHeads();
        if (heads < kvHeads || heads % kvHeads != 0) {
            throw new IllegalArgumentException(heads + " query heads do not group evenly over " + kvHeads + " KV heads");
        }
        int maxTokens = 0;
        for (int r = 0; r < rows; r++) {
            if (!kvs[r].geometry().equals(first.geometry()) || kvs[r].layer() != first.layer()) {
                throw new IllegalArgumentException("KV view of row " + r + " (" + kvs[r].geometry() + ", layer "
                        + kvs[r].layer() + ") differs from row 0's (" + first.geometry() + ", layer " + first.layer() + ")");
            }
            maxTokens = Math.max(maxTokens, kvs[r].tokens());
        }
        int width = heads * first.geometry().headDim();
        Objects.checkFromIndexSize(qOff, rows * width, q.length);
        Objects.checkFromIndexSize(outOff, rows * width, out.length);
        float scale = (float) (1.0 / Math.sqrt(first.geometry().headDim()));
        int scratch = maxTokens;
        pool.parallelFor(rows * heads, (from, to) -> {
            AttentionScratch own = AttentionScratch.SCRATCH.get();
            float[] scores = own.scores(scratch);
            float[] lanes = own.lanes;
            for (int slot = from / heads; slot * heads < to; slot++) {
                int r = (slot & 1) == 0 ? slot >> 1 : rows - 1 - (slot >> 1); // 0, rows-1, 1, rows-2, ...
                int h0 = Math.max(from - slot * heads, 0);
                int h1 = Math.min(to - slot * heads, heads);
                VectorKernels.attentionHeads(q, qOff + r * width, heads, kvs[r], scale, out, outOff + r * width, h0, h1,
                        scores, lanes);
            }
        });
    }

    /**
     * One thread's attention scratch, kept from call to call so that attention allocates no score
     * array per call: the scores of one row ({@code [tokens]}, grown by doubling to the longest KV
     * attended) and one vector's lanes. Each thread only ever touches its own.
     */
    private static final class AttentionScratch {
        static final ThreadLocal<AttentionScratch> SCRATCH = ThreadLocal.withInitial(AttentionScratch::new);

        final float[] lanes = new float[FloatLoads.LANES];
        private float[] scores = new float[64]; // [capacity] scores of the row being attended

        float[] scores(int tokens) {
            if (scores.length < tokens) {
                scores = new float[Math.max(tokens, 2 * scores.length)];
            }
            return scores;
        }
    }

    static void checkWeights(DType dtype, MemorySegment w, int rows, int cols) {
        if (rows < 0 || cols < 0) {
            throw new IllegalArgumentException("matrix shape [" + rows + ", " + cols + "] has a negative dimension");
        }
        long need = (long) rows * cols * dtype.bytes();
        if (w.byteSize() < need) {
            throw new IllegalArgumentException("weights of " + w.byteSize() + " bytes are too small for a " + dtype
                    + " matrix [" + rows + ", " + cols + "] (" + need + " bytes)");
        }
    }

    private static int rows(Tensor w) {
        if (w.rank() != 2) {
            throw new IllegalArgumentException("tensor " + w + " is not a 2-D [out, in] matrix");
        }
        return Math.toIntExact(w.dim(0));
    }

    private static int cols(Tensor w) {
        return Math.toIntExact(w.dim(1));
    }
}
