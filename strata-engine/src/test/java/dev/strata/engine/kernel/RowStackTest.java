package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;
import dev.strata.testing.Property;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A stacked matvec or matmul writes, part by part, exactly the bits of one call per part, at every
 * thread count, whatever the parts' row counts (odd, smaller than a thread's share, a single row).
 */
class RowStackTest {
    private static final Arena ARENA = Arena.ofShared();

    @AfterAll
    static void close() {
        ARENA.close();
    }

    @Test
    void stackedCallsEqualOneCallPerPartBitForBit() {
        Property.forAll("row stack vs separate calls", 4, r -> {
            DType d = DType.values()[r.nextInt(DType.values().length)];
            int parts = 1 + r.nextInt(4);
            int cols = 1 + r.nextInt(140);
            int batch = 1 + r.nextInt(6);
            MemorySegment[] w = new MemorySegment[parts];
            int[] rows = new int[parts];
            for (int p = 0; p < parts; p++) {
                rows[p] = 1 + r.nextInt(45);
                w[p] = KernelData.encode(ARENA, d, KernelData.floats(r, rows[p] * cols), r.nextInt(4));
            }
            RowStack stack = new RowStack(d, cols, w, rows);
            assertThat(stack.totalRows()).isEqualTo(java.util.Arrays.stream(rows).sum());
            float[] x = KernelData.floats(r, batch * cols + 2);
            for (int threads = 1; threads <= 4; threads++) {
                try (KernelPool pool = new KernelPool(threads)) {
                    Kernels k = new Kernels(pool);
                    float[][] yv = new float[parts][];
                    float[][] ym = new float[parts][];
                    for (int p = 0; p < parts; p++) {
                        yv[p] = new float[rows[p]];
                        ym[p] = new float[batch * rows[p]];
                    }
                    k.matvec(stack, x, 2, yv);
                    k.matmul(stack, x, 2, batch, ym);
                    for (int p = 0; p < parts; p++) {
                        float[] one = new float[rows[p]];
                        k.matvec(d, w[p], rows[p], cols, x, 2, one, 0);
                        assertThat(bits(yv[p])).as("%s matvec part %d of %s at %d threads", d, p, stack, threads)
                                .isEqualTo(bits(one));
                        float[] many = new float[batch * rows[p]];
                        k.matmul(d, w[p], rows[p], cols, x, 2, batch, many, 0);
                        assertThat(bits(ym[p])).as("%s matmul part %d of %s at %d threads", d, p, stack, threads)
                                .isEqualTo(bits(many));
                        assertThat(one).as("part %d computed something", p).isNotEqualTo(new float[rows[p]]);
                    }
                }
            }
        });
    }

    @Test
    void misuseIsRefusedNamingTheValues() {
        MemorySegment small = ARENA.allocate(10);
        assertThatThrownBy(() -> new RowStack(DType.F32, 3, new MemorySegment[] {small}, new int[] {1, 2}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 matrices and 2 row counts");
        assertThatThrownBy(() -> new RowStack(DType.F32, 3, new MemorySegment[] {small}, new int[] {1}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("10 bytes");
        RowStack ok = RowStack.of(DType.BF16, 2, ARENA.allocate(8), 2, ARENA.allocate(4), 1);
        try (KernelPool pool = new KernelPool(2)) {
            assertThatThrownBy(() -> new Kernels(pool).matvec(ok, new float[2], 0, new float[][] {new float[2]}))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 output arrays");
        }
    }

    private static int[] bits(float[] v) {
        int[] b = new int[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = Float.floatToRawIntBits(v[i]);
        }
        return b;
    }
}
