package dev.strata.engine.forward;

import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.kernel.RowStack;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.Tensor;

import java.lang.foreign.MemorySegment;

/**
 * {@code Y = X Wᵀ} for the rows of a forward batch, reading W once per tile of
 * {@value #MATMUL_TILE} rows: whole tiles go through the matmul kernel (which shares each weight
 * load among a tile); two or three rows left over are padded to a tile with copies of their last
 * row; a single row (or one left over) goes through the matvec kernel, which is faster for one row
 * than the matmul's single-row path. Every element gets the same bits whichever way its row went.
 *
 * <p>The padded tile's input and output ({@code [tile, widest input]}, {@code [tile, widest
 * output]} per stacked part) are allocated on the first batch that leaves two or three rows over
 * and reused after; a decode step of one row never touches them.
 *
 * <p>Threads: the thread driving the {@link ForwardPass} that owns it; the kernels fan out over
 * their pool.
 */
final class Projector {
    /** Tokens sharing each weight load in the matmul kernel. */
    static final int MATMUL_TILE = 4;
    private static final int MAX_PARTS = 3; // q, k, v: the largest stack the forward pass projects

    private final Kernels kernels;
    private final int maxCols; // widest input of any projection of the model
    private final int maxRows; // widest output of any projection of the model (the vocabulary, usually)
    private float[] tileIn; // [tile, maxCols] rows left over, the last repeated; null until needed
    private float[][] tileOut; // [MAX_PARTS][tile × maxRows] outputs of a padded tile; null until needed
    private float[][] tileOut2; // {tileOut[0], tileOut[1]}: the outputs of a two-part stack
    private float[][] tileOut1; // {tileOut[0]}

    Projector(Kernels kernels, ModelConfig c) {
        this.kernels = kernels;
        int width = Math.max(c.intermediateSize(), c.moe() ? c.expertIntermediateSize() : 0);
        this.maxCols = Math.max(Math.max(c.hiddenSize(), c.qDim()), width);
        this.maxRows = Math.max(Math.max(maxCols, c.kvDim()), Math.max(c.vocabSize(), c.moe() ? c.numExperts() : 0));
    }

    Kernels kernels() {
        return kernels;
    }

    /** {@link #project(DType, MemorySegment, int, int, float[], int, float[])} with a 2-D weight tensor {@code [out, in]}. */
    void project(Tensor w, float[] x, int n, float[] y) {
        project(w.dtype(), w.data(), Math.toIntExact(w.dim(0)), Math.toIntExact(w.dim(1)), x, n, y);
    }

    /** {@code y[n, rows] = x[n, cols] Wᵀ} for W row-major {@code [rows, cols]} of {@code dtype}. */
    void project(DType dtype, MemorySegment w, int rows, int cols, float[] x, int n, float[] y) {
        int tiled = n - n % MATMUL_TILE;
        if (tiled > 0) {
            kernels.matmul(dtype, w, rows, cols, x, 0, tiled, y, 0);
        }
        int rest = n - tiled;
        if (rest == 1) {
            kernels.matvec(dtype, w, rows, cols, x, tiled * cols, y, tiled * rows);
        } else if (rest > 1) {
            float[] xt = padTile(x, tiled, rest, cols);
            float[] yt = tileOut()[0];
            kernels.matmul(dtype, w, rows, cols, xt, 0, MATMUL_TILE, yt, 0);
            System.arraycopy(yt, 0, y, tiled * rows, rest * rows);
        }
    }

    /**
     * {@link #project(DType, MemorySegment, int, int, float[], int, float[])} of every part of
     * {@code stack} over the same {@code n} rows of X, in one kernel call per tile shape instead of
     * one per matrix: {@code ys[p]} ({@code [n, rows(p)]}) gets exactly the bits a projection of part
     * {@code p} alone gives.
     */
    void project(RowStack stack, float[] x, int n, float[][] ys) {
        int cols = stack.cols();
        int tiled = n - n % MATMUL_TILE;
        if (tiled > 0) {
            kernels.matmul(stack, x, 0, tiled, ys);
        }
        int rest = n - tiled;
        if (rest == 0) {
            return;
        }
        if (n == 1) { // one row (a decode step): straight into the outputs
            kernels.matvec(stack, x, 0, ys);
            return;
        }
        int parts = stack.parts();
        if (parts > MAX_PARTS) {
            throw new IllegalArgumentException("a stack of " + parts + " matrices; the projector pads stacks of at most "
                    + MAX_PARTS);
        }
        float[][] tail = tileOut(parts); // [parts][1 or tile, rows(p)]
        if (rest == 1) {
            kernels.matvec(stack, x, tiled * cols, tail);
        } else {
            kernels.matmul(stack, padTile(x, tiled, rest, cols), 0, MATMUL_TILE, tail);
        }
        for (int p = 0; p < parts; p++) {
            System.arraycopy(tail[p], 0, ys[p], tiled * stack.rows(p), rest * stack.rows(p));
        }
    }

    /** The rows {@code [tiled, tiled + rest)} of x, the last repeated to a full tile, in the reused tile input. */
    private float[] padTile(float[] x, int tiled, int rest, int cols) {
        if (tileIn == null) {
            tileIn = new float[MATMUL_TILE * maxCols];
        }
        for (int b = 0; b < MATMUL_TILE; b++) {
            System.arraycopy(x, (tiled + Math.min(b, rest - 1)) * cols, tileIn, b * cols, cols);
        }
        return tileIn;
    }

    private float[][] tileOut() {
        if (tileOut == null) {
            tileOut = new float[MAX_PARTS][MATMUL_TILE * maxRows];
        }
        return tileOut;
    }

    /** The first {@code parts} tile outputs, as an array of exactly that length (the kernels take one array per part). */
    private float[][] tileOut(int parts) {
        float[][] all = tileOut();
        if (parts == MAX_PARTS) {
            return all;
        }
        if (parts == 2) {
            if (tileOut2 == null) {
                tileOut2 = new float[][] {all[0], all[1]};
            }
            return tileOut2;
        }
        if (tileOut1 == null) {
            tileOut1 = new float[][] {all[0]};
        }
        return tileOut1;
    }
}
