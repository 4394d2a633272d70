package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

/**
 * Several weight matrices of one dtype and one input width, read by one kernel call as if their
 * rows were stacked: the q, k and v projections of a layer, or an expert's gate and up. Each part
 * keeps its own output array, so a stacked call writes exactly what one call per part would, bit
 * for bit (every output element is still one dot product in the canonical order of
 * {@link VectorKernels}); only the number of fork/joins on the {@link KernelPool} changes.
 *
 * <p>Global row {@code r} of the stack is row {@code r − start(p)} of the part {@code p} holding it
 * ({@code start(p) ≤ r < start(p + 1)}).
 *
 * <p>Immutable after construction (the arrays are copied); any thread.
 */
public final class RowStack {
    private final DType dtype;
    private final int cols; // input width shared by every part
    private final MemorySegment[] weights; // [parts] row-major [rows(p), cols] each
    private final int[] starts; // [parts + 1] first global row of each part; starts[parts] = total rows

    /**
     * @param dtype   element type of every part
     * @param cols    input width of every part
     * @param weights each part row-major {@code [rows[p], cols]}
     * @param rows    output rows of each part
     */
    public RowStack(DType dtype, int cols, MemorySegment[] weights, int[] rows) {
        this.dtype = Objects.requireNonNull(dtype, "dtype");
        if (weights.length != rows.length || weights.length == 0) {
            throw new IllegalArgumentException("a row stack needs one row count per matrix and at least one matrix, got "
                    + weights.length + " matrices and " + rows.length + " row counts");
        }
        if (cols < 0) {
            throw new IllegalArgumentException("input width must not be negative, got " + cols);
        }
        this.cols = cols;
        this.weights = weights.clone();
        this.starts = new int[rows.length + 1];
        for (int p = 0; p < rows.length; p++) {
            Kernels.checkWeights(dtype, Objects.requireNonNull(this.weights[p], "matrix " + p), rows[p], cols);
            starts[p + 1] = Math.addExact(starts[p], rows[p]);
        }
    }

    /** A stack of two matrices. */
    public static RowStack of(DType dtype, int cols, MemorySegment a, int aRows, MemorySegment b, int bRows) {
        return new RowStack(dtype, cols, new MemorySegment[] {a, b}, new int[] {aRows, bRows});
    }

    /** A stack of three matrices. */
    public static RowStack of(DType dtype, int cols, MemorySegment a, int aRows, MemorySegment b, int bRows,
            MemorySegment c, int cRows) {
        return new RowStack(dtype, cols, new MemorySegment[] {a, b, c}, new int[] {aRows, bRows, cRows});
    }

    public DType dtype() {
        return dtype;
    }

    public int cols() {
        return cols;
    }

    /** Matrices in the stack. */
    public int parts() {
        return weights.length;
    }

    /** Output rows of part {@code p}. */
    public int rows(int p) {
        return starts[p + 1] - starts[p];
    }

    /** Rows of all parts together. */
    public int totalRows() {
        return starts[starts.length - 1];
    }

    /** The weights of part {@code p}. */
    public MemorySegment weights(int p) {
        return weights[p];
    }

    /** First global row of part {@code p}. */
    int start(int p) {
        return starts[p];
    }

    /** The part holding global row {@code r} ({@code 0 ≤ r < totalRows}). */
    int partOf(int r) {
        int p = 0;
        while (starts[p + 1] <= r) {
            p++;
        }
        return p;
    }

    @Override
    public String toString() {
        int[] rows = new int[weights.length];
        for (int p = 0; p < rows.length; p++) {
            rows[p] = rows(p);
        }
        return "RowStack[" + dtype + ", rows " + Arrays.toString(rows) + " x " + cols + "]";
    }
}
