package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;
import dev.strata.testing.Property;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every vector kernel against its scalar reference on seeded random data of odd sizes. Tolerance
 * of a float reduction of length n: {@code 1e-5 · sqrt(n) · Σ|terms|} (plus one float ulp of the
 * result); elementwise kernels: a few float ulps of the operands.
 */
class KernelsVersusScalarTest {
    private static final int[] SIZES = {1, 7, 17, 33, 127, 1000};
    private static final Arena ARENA = Arena.ofShared();
    private static final KernelPool POOL = new KernelPool(3);
    private static final Kernels KERNELS = new Kernels(POOL);

    @AfterAll
    static void close() {
        POOL.close();
        ARENA.close();
    }

    private static void assertReduction(float actual, float reference, double absTerms, int n, String what) {
        double tol = 1e-5 * Math.sqrt(n) * absTerms + Math.ulp(reference);
        assertThat((double) Math.abs(actual - reference)).as("%s: %s vs reference %s (tolerance %s)", what, actual,
                reference, tol).isLessThanOrEqualTo(tol);
    }

    @Test
    void matvecMatchesScalarForEveryDtypeAndOddShape() {
        Property.forAll("matvec vs scalar", 3, r -> {
            for (DType d : DType.values()) {
                for (int rows : new int[] {1, 7, 33, 130}) {
                    for (int cols : SIZES) {
                        float[] wv = KernelData.rounded(d, KernelData.floats(r, rows * cols));
                        MemorySegment w = KernelData.encode(ARENA, d, wv, r.nextInt(4));
                        float[] x = KernelData.floats(r, cols + 3);
                        int xOff = r.nextInt(4);
                        float[] y = new float[rows + 2];
                        float[] ref = new float[rows + 2];
                        KERNELS.matvec(d, w, rows, cols, x, xOff, y, 1);
                        ScalarKernels.matvec(d, w, rows, cols, x, xOff, ref, 1);
                        assertThat(y[0]).isZero();
                        assertThat(y[rows + 1]).isZero();
                        for (int i = 0; i < rows; i++) {
                            double abs = 0;
                            for (int k = 0; k < cols; k++) {
                                abs += Math.abs((double) wv[i * cols + k] * x[xOff + k]);
                            }
                            assertReduction(y[1 + i], ref[1 + i], abs, cols, d + " [" + rows + "," + cols + "] row " + i);
                        }
                    }
                }
            }
        });
    }

    @Test
    void matmulMatchesScalarAndEachRowEqualsMatvecBitForBit() {
        Property.forAll("matmul vs scalar", 2, r -> {
            for (DType d : DType.values()) {
                for (int batch : new int[] {1, 3, 4, 9}) {
                    for (int[] shape : new int[][] {{7, 17}, {33, 127}, {37, 1000}}) {
                        int rows = shape[0], cols = shape[1];
                        float[] wv = KernelData.rounded(d, KernelData.floats(r, rows * cols));
                        MemorySegment w = KernelData.encode(ARENA, d, wv, r.nextInt(4));
                        float[] x = KernelData.floats(r, batch * cols + 1);
                        float[] y = new float[batch * rows + 1];
                        float[] ref = new float[batch * rows + 1];
                        KERNELS.matmul(d, w, rows, cols, x, 1, batch, y, 1);
                        ScalarKernels.matmul(d, w, rows, cols, x, 1, batch, ref, 1);
                        float[] single = new float[rows];
                        for (int b = 0; b < batch; b++) {
                            KERNELS.matvec(d, w, rows, cols, x, 1 + b * cols, single, 0);
                            for (int i = 0; i < rows; i++) {
                                float v = y[1 + b * rows + i];
                                assertThat(Float.floatToRawIntBits(v)).as("%s token %d row %d vs matvec", d, b, i)
                                        .isEqualTo(Float.floatToRawIntBits(single[i]));
                                double abs = 0;
                                for (int k = 0; k < cols; k++) {
                                    abs += Math.abs((double) wv[i * cols + k] * x[1 + b * cols + k]);
                                }
                                assertReduction(v, ref[1 + b * rows + i], abs, cols, d + " token " + b + " row " + i);
                            }
                        }
                    }
                }
            }
        });
    }

    @Test
    void rmsNormMatchesScalar() {
        Property.forAll("rmsnorm vs scalar", 5, r -> {
            for (DType d : DType.values()) {
                for (int n : SIZES) {
                    float[] x = KernelData.floats(r, n + 2);
                    MemorySegment w = KernelData.encode(ARENA, d, KernelData.rounded(d, KernelData.floats(r, n)), 1);
                    float eps = 1e-6f;
                    float[] out = new float[n + 2];
                    float[] ref = new float[n + 2];
                    VectorKernels.rmsNorm(x, 2, w, d, eps, out, 1, n);
                    ScalarKernels.rmsNorm(x, 2, w, d, eps, ref, 1, n);
                    for (int i = 0; i < n; i++) {
                        double tol = 1e-5 * Math.sqrt(n) * Math.abs(ref[1 + i]) + Math.ulp(ref[1 + i]);
                        assertThat((double) Math.abs(out[1 + i] - ref[1 + i])).as("%s n=%d i=%d", d, n, i)
                                .isLessThanOrEqualTo(tol);
                    }
                    float[] inPlace = x.clone();
                    VectorKernels.rmsNorm(inPlace, 2, w, d, eps, inPlace, 2, n);
                    for (int i = 0; i < n; i++) {
                        assertThat(inPlace[2 + i]).isEqualTo(out[1 + i]);
                    }
                }
            }
        });
    }

    @Test
    void softmaxMatchesScalarAndSumsToOne() {
        Property.forAll("softmax vs scalar", 5, r -> {
            for (int n : SIZES) {
                float[] x = KernelData.floats(r, n + 1);
                for (int i = 0; i < x.length; i++) {
                    x[i] *= 30; // wide logits: the max subtraction matters
                }
                x[r.nextInt(n + 1)] += 500; // would overflow e^x without it
                float[] v = x.clone();
                float[] ref = x.clone();
                VectorKernels.softmax(v, 1, n);
                ScalarKernels.softmax(ref, 1, n);
                assertThat(v[0]).isEqualTo(x[0]);
                double total = 0;
                for (int i = 1; i <= n; i++) {
                    assertThat((double) Math.abs(v[i] - ref[i])).as("n=%d i=%d", n, i)
                            .isLessThanOrEqualTo(1e-5 * Math.sqrt(n) * ref[i] + 1e-30);
                    total += v[i];
                }
                assertThat(total).isCloseTo(1.0, org.assertj.core.data.Offset.offset(1e-5 * Math.sqrt(n)));
            }
        });
    }

    @Test
    void siluSwigluAndAddMatchScalar() {
        Property.forAll("activations vs scalar", 5, r -> {
            for (int n : SIZES) {
                float[] g = KernelData.floats(r, n + 1);
                float[] u = KernelData.floats(r, n + 2);
                for (int i = 0; i < g.length; i++) {
                    g[i] *= 12; // both tails of the sigmoid
                }
                float[] out = new float[n];
                float[] ref = new float[n];
                VectorKernels.silu(g, 1, out, 0, n);
                ScalarKernels.silu(g, 1, ref, 0, n);
                for (int i = 0; i < n; i++) {
                    assertThat((double) Math.abs(out[i] - ref[i])).as("silu(%s)", g[1 + i])
                            .isLessThanOrEqualTo(4 * Math.ulp(ref[i]) + 1e-30);
                }
                VectorKernels.swiglu(g, 1, u, 2, out, 0, n);
                ScalarKernels.swiglu(g, 1, u, 2, ref, 0, n);
                for (int i = 0; i < n; i++) {
                    assertThat((double) Math.abs(out[i] - ref[i])).as("swiglu(%s, %s)", g[1 + i], u[2 + i])
                            .isLessThanOrEqualTo(5 * Math.ulp(ref[i]) + 1e-30);
                }
                VectorKernels.add(g, 1, u, 2, out, 0, n);
                ScalarKernels.add(g, 1, u, 2, ref, 0, n);
                for (int i = 0; i < n; i++) {
                    assertThat(out[i]).isEqualTo(ref[i]);
                }
            }
        });
    }

    @Test
    void ropeMatchesScalarAtArbitraryPositions() {
        Property.forAll("rope vs scalar", 5, r -> {
            for (int headDim : new int[] {2, 6, 18, 34, 64, 130}) {
                int heads = 1 + r.nextInt(5);
                double theta = r.nextBoolean() ? 10000 : 1_000_000;
                Rope rope = new Rope(headDim, theta, null);
                for (long position : new long[] {0, 1, 17, r.nextInt(40_000)}) {
                    float[] x = KernelData.floats(r, heads * headDim + 3);
                    float[] v = x.clone();
                    float[] ref = x.clone();
                    rope.apply(v, 3, heads, position);
                    ScalarKernels.rope(ref, 3, heads, headDim, theta, position);
                    for (int i = 0; i < 3; i++) {
                        assertThat(v[i]).isEqualTo(x[i]);
                    }
                    for (int h = 0; h < heads; h++) {
                        for (int i = 0; i < headDim; i++) {
                            int at = 3 + h * headDim + i;
                            int pair = i < headDim / 2 ? at + headDim / 2 : at - headDim / 2;
                            double tol = 2e-6 * (Math.abs(x[at]) + Math.abs(x[pair]));
                            assertThat((double) Math.abs(v[at] - ref[at]))
                                    .as("head dim %d head %d i %d position %d", headDim, h, i, position)
                                    .isLessThanOrEqualTo(tol);
                        }
                    }
                }
            }
        });
    }

    @Test
    void ropeAtPositionZeroIsIdentity() {
        SplittableRandom r = new SplittableRandom(3);
        float[] x = KernelData.floats(r, 3 * 34);
        float[] v = x.clone();
        new Rope(34, 10000, null).apply(v, 0, 3, 0);
        assertThat(v).containsExactly(x);
    }
}
