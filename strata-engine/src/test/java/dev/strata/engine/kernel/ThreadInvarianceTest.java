package dev.strata.engine.kernel;

import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.engine.model.DType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** Matvec, matmul and attention give identical bytes at 1, 2, 3 and 4 threads and on repeated runs. */
class ThreadInvarianceTest {
    private static final Arena ARENA = Arena.ofShared();

    @AfterAll
    static void close() {
        ARENA.close();
    }

    private static int[] bits(float[] v) {
        int[] b = new int[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = Float.floatToRawIntBits(v[i]);
        }
        return b;
    }

    @Test
    void resultsAreIdenticalAtEveryThreadCount() {
        SplittableRandom r = new SplittableRandom(2024);
        int rows = 1001, cols = 333, batch = 5;
        MemorySegment[] weights = new MemorySegment[DType.values().length];
        for (DType d : DType.values()) {
            weights[d.ordinal()] = KernelData.encode(ARENA, d, KernelData.floats(r, rows * cols), 1);
        }
        float[] x = KernelData.floats(r, batch * cols);
        KvGeometry g = new KvGeometry(2, 2, 36, KvDtype.BF16, 13);
        AttentionTest.Fixture f = AttentionTest.fixture(ARENA, r, g, 77, 1);
        float[] q = KernelData.floats(r, 8 * 36);
        int[][] expected = null;
        for (int threads = 1; threads <= 4; threads++) {
            try (KernelPool pool = new KernelPool(threads)) {
                Kernels k = new Kernels(pool);
                for (int run = 0; run < 2; run++) {
                    int[][] got = new int[2 * DType.values().length + 1][];
                    for (DType d : DType.values()) {
                        float[] y = new float[rows];
                        k.matvec(d, weights[d.ordinal()], rows, cols, x, 0, y, 0);
                        got[2 * d.ordinal()] = bits(y);
                        float[] ym = new float[batch * rows];
                        k.matmul(d, weights[d.ordinal()], rows, cols, x, 0, batch, ym, 0);
                        got[2 * d.ordinal() + 1] = bits(ym);
                    }
                    float[] out = new float[8 * 36];
                    k.attention(q, 0, 8, f.paged(), out, 0);
                    got[got.length - 1] = bits(out);
                    if (expected == null) {
                        expected = got;
                        for (int[] a : got) {
                            assertThat(Arrays.stream(a).filter(b -> b != 0).count()).isPositive();
                        }
                    } else {
                        for (int i = 0; i < got.length; i++) {
                            assertThat(got[i]).as("output %d at %d threads, run %d", i, threads, run)
                                    .isEqualTo(expected[i]);
                        }
                    }
                }
            }
        }
    }
}
