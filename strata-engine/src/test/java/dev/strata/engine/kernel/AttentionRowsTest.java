package dev.strata.engine.kernel;

import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.engine.model.DType;
import dev.strata.testing.Property;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The block-wise attention kernel reduces every score and output element in the order of a
 * per-token dot and a per-token fused multiply-add (kept here as the reference), bit for bit; a
 * multi-row call gives each row the bits of a one-row call, at 1 to 4 threads, rows of different
 * lengths (a causal prefill) and different sequences (a decode batch) mixed.
 */
class AttentionRowsTest {
    private static final Arena ARENA = Arena.ofShared();

    @AfterAll
    static void close() {
        ARENA.close();
    }

    /** The per-token formulation: one canonical dot per (head, token), then per token {@code out = fma(V, p, out)}. */
    static void perToken(float[] q, int qOff, int heads, PagedKv kv, float[] out, int outOff) {
        KvGeometry g = kv.geometry();
        int d = g.headDim();
        int group = heads / g.kvHeads();
        DType dt = kv.elementType();
        int tokens = kv.tokens();
        float scale = (float) (1.0 / Math.sqrt(d));
        float[] s = new float[tokens];
        for (int h = 0; h < heads; h++) {
            int kvh = h / group;
            for (int t = 0; t < tokens; t++) {
                s[t] = VectorKernels.dot(dt, kv.block(t), kv.keyIndex(t, kvh), q, qOff + h * d, d) * scale;
            }
            float total = VectorKernels.expShifted(s, 0, tokens, VectorKernels.max(s, 0, tokens));
            int o = outOff + h * d;
            java.util.Arrays.fill(out, o, o + d, 0f);
            for (int t = 0; t < tokens; t++) {
                for (int i = 0; i < d; i++) {
                    out[o + i] = Math.fma(FloatLoads.load(dt, kv.block(t), kv.valueIndex(t, kvh) + i), s[t], out[o + i]);
                }
            }
            for (int i = 0; i < d; i++) {
                out[o + i] = out[o + i] / total;
            }
        }
    }

    @Test
    void blockKernelEqualsPerTokenOrderAndRowsEqualSingleCalls() {
        Property.forAll("attention rows vs per token", 4, r -> {
            KvDtype[] dtypes = {KvDtype.FP32, KvDtype.BF16, KvDtype.FP16};
            int[][] headShapes = {{8, 2}, {4, 4}, {6, 1}};
            KvDtype dtype = dtypes[r.nextInt(dtypes.length)];
            int[] hk = headShapes[r.nextInt(headShapes.length)];
            int heads = hk[0];
            int headDim = new int[] {64, 20, 9}[r.nextInt(3)];
            int blockTokens = new int[] {16, 13, 5}[r.nextInt(3)];
            KvGeometry g = new KvGeometry(2, hk[1], headDim, dtype, blockTokens);
            int layer = r.nextInt(2);
            // two sequences: rows 0..p-1 are a causal prefill of the first, the rest decode rows of the second
            int tokensA = 1 + r.nextInt(70);
            int tokensB = 1 + r.nextInt(40);
            AttentionTest.Fixture a = AttentionTest.fixture(ARENA, r, g, tokensA, layer);
            AttentionTest.Fixture b = AttentionTest.fixture(ARENA, r, g, tokensB, layer);
            int rows = tokensA + 1;
            PagedKv[] views = new PagedKv[rows];
            for (int i = 0; i < tokensA; i++) {
                views[i] = upTo(a.paged(), i + 1);
            }
            views[tokensA] = b.paged();
            int width = heads * headDim;
            float[] q = KernelData.floats(r, rows * width + 3);
            for (int i = 0; i < q.length; i++) {
                q[i] *= 3;
            }
            float[] expected = new float[rows * width];
            for (int i = 0; i < rows; i++) {
                perToken(q, 3 + i * width, heads, views[i], expected, i * width);
            }
            for (int threads = 1; threads <= 4; threads++) {
                try (KernelPool pool = new KernelPool(threads)) {
                    Kernels k = new Kernels(pool);
                    float[] many = new float[rows * width + 1];
                    k.attention(q, 3, heads, views, rows, many, 1);
                    float[] one = new float[rows * width];
                    for (int i = 0; i < rows; i++) {
                        k.attention(q, 3 + i * width, heads, views[i], one, i * width);
                    }
                    String what = dtype + " heads " + heads + "/" + hk[1] + " dim " + headDim + " block " + blockTokens
                            + " tokens " + tokensA + "+" + tokensB + " threads " + threads;
                    assertThat(many[0]).isZero();
                    assertThat(bits(one)).as("one-row calls vs per-token order, %s", what).isEqualTo(bits(expected));
                    assertThat(bits(java.util.Arrays.copyOfRange(many, 1, many.length)))
                            .as("multi-row call vs one-row calls, %s", what).isEqualTo(bits(one));
                }
            }
        });
    }

    @Test
    void misuseIsRefusedNamingTheValues() {
        KvGeometry g = new KvGeometry(2, 2, 8, KvDtype.FP32, 16);
        KvGeometry other = new KvGeometry(2, 2, 8, KvDtype.FP32, 8);
        PagedKv a = new PagedKv(g, 0, List.of(ARENA.allocate(g.bytesPerBlock())), 3);
        PagedKv b = new PagedKv(other, 0, List.of(ARENA.allocate(other.bytesPerBlock())), 3);
        PagedKv c = new PagedKv(g, 1, List.of(ARENA.allocate(g.bytesPerBlock())), 3);
        try (KernelPool pool = new KernelPool(2)) {
            Kernels k = new Kernels(pool);
            assertThatThrownBy(() -> k.attention(new float[32], 0, 2, new PagedKv[] {a}, 2, new float[32], 0))
                    .hasMessageContaining("2 query rows but 1 KV views");
            assertThatThrownBy(() -> k.attention(new float[32], 0, 2, new PagedKv[] {a, b}, 2, new float[32], 0))
                    .hasMessageContaining("row 1");
            assertThatThrownBy(() -> k.attention(new float[32], 0, 2, new PagedKv[] {a, c}, 2, new float[32], 0))
                    .hasMessageContaining("layer 1");
            assertThatThrownBy(() -> k.attention(new float[32], 0, 3, new PagedKv[] {a}, 1, new float[32], 0))
                    .hasMessageContaining("3 query heads");
        }
    }

    private static PagedKv upTo(PagedKv all, int tokens) {
        int bt = all.geometry().blockTokens();
        return new PagedKv(all.geometry(), all.layer(), all.blocks().subList(0, (tokens - 1) / bt + 1), (tokens - 1) % bt + 1);
    }

    private static int[] bits(float[] v) {
        int[] b = new int[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = Float.floatToRawIntBits(v[i]);
        }
        return b;
    }
}
