package dev.strata.engine.kernel;

import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.engine.model.DType;
import dev.strata.testing.Property;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Paged attention against a naive double-precision attention over contiguous K and V arrays. The
 * blocks sit in shuffled slots of one arena whose unused bytes (the tail of the last block, other
 * layers are random too) hold random bytes, NaNs included: reading any of them would show.
 */
class AttentionTest {
    private static final Arena ARENA = Arena.ofShared();
    private static final KernelPool POOL = new KernelPool(2);
    private static final Kernels KERNELS = new Kernels(POOL);

    @AfterAll
    static void close() {
        POOL.close();
        ARENA.close();
    }

    /** A sequence's KV, contiguous ([layer][token][kvHead][dim]) and paged. */
    record Fixture(float[][] k, float[][] v, PagedKv paged) {
    }

    static Fixture fixture(Arena memory, SplittableRandom r, KvGeometry g, int tokens, int layer) {
        DType dt = PagedKv.elementType(g.dtype());
        int perToken = g.kvHeads() * g.headDim();
        float[][] k = new float[g.layers()][];
        float[][] v = new float[g.layers()][];
        for (int l = 0; l < g.layers(); l++) {
            k[l] = KernelData.rounded(dt, KernelData.floats(r, tokens * perToken));
            v[l] = KernelData.rounded(dt, KernelData.floats(r, tokens * perToken));
        }
        int blocks = (tokens + g.blockTokens() - 1) / g.blockTokens();
        int slots = blocks + 3;
        MemorySegment arena = memory.allocate((long) slots * g.bytesPerBlock(), 64);
        for (long i = 0; i < arena.byteSize(); i++) {
            arena.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256));
        }
        List<Integer> order = new ArrayList<>();
        for (int s = 0; s < slots; s++) {
            order.add(s);
        }
        Collections.shuffle(order, new java.util.Random(r.nextLong()));
        List<MemorySegment> segments = new ArrayList<>();
        long part = (long) g.blockTokens() * perToken; // elements of K (or V) of one layer of a block
        for (int b = 0; b < blocks; b++) {
            MemorySegment block = arena.asSlice((long) order.get(b) * g.bytesPerBlock(), g.bytesPerBlock());
            segments.add(block);
            for (int t = b * g.blockTokens(); t < Math.min(tokens, (b + 1) * g.blockTokens()); t++) {
                int within = t - b * g.blockTokens();
                for (int l = 0; l < g.layers(); l++) {
                    for (int e = 0; e < perToken; e++) {
                        KernelData.store(dt, block, 2 * l * part + (long) within * perToken + e, k[l][t * perToken + e]);
                        KernelData.store(dt, block, (2L * l + 1) * part + (long) within * perToken + e,
                                v[l][t * perToken + e]);
                    }
                }
            }
        }
        int last = tokens - (blocks - 1) * g.blockTokens();
        return new Fixture(k, v, new PagedKv(g, layer, segments, last));
    }

    /** Naive attention in double over contiguous arrays of one layer. */
    static double[] naive(float[] q, int heads, KvGeometry g, float[] k, float[] v, int tokens) {
        int d = g.headDim();
        int group = heads / g.kvHeads();
        double[] out = new double[heads * d];
        for (int h = 0; h < heads; h++) {
            int kvh = h / group;
            double[] s = new double[tokens];
            double max = Double.NEGATIVE_INFINITY;
            for (int t = 0; t < tokens; t++) {
                for (int i = 0; i < d; i++) {
                    s[t] += (double) q[h * d + i] * k[(t * g.kvHeads() + kvh) * d + i];
                }
                s[t] /= Math.sqrt(d);
                max = Math.max(max, s[t]);
            }
            double total = 0;
            for (int t = 0; t < tokens; t++) {
                s[t] = Math.exp(s[t] - max);
                total += s[t];
            }
            for (int t = 0; t < tokens; t++) {
                for (int i = 0; i < d; i++) {
                    out[h * d + i] += s[t] / total * v[(t * g.kvHeads() + kvh) * d + i];
                }
            }
        }
        return out;
    }

    @Test
    void pagedAttentionMatchesNaiveReference() {
        Property.forAll("paged attention vs naive", 2, r -> {
            for (KvDtype dtype : new KvDtype[] {KvDtype.FP32, KvDtype.BF16, KvDtype.FP16}) {
                for (int blockTokens : new int[] {16, 13}) {
                    for (int[] hk : new int[][] {{8, 2}, {4, 4}}) {
                        for (int headDim : new int[] {64, 20}) {
                            for (int tokens : new int[] {1, 13, 16, 29, 100}) {
                                int heads = hk[0];
                                KvGeometry g = new KvGeometry(2, hk[1], headDim, dtype, blockTokens);
                                int layer = r.nextInt(2);
                                Fixture f = fixture(ARENA, r, g, tokens, layer);
                                float[] q = KernelData.floats(r, heads * headDim + 1);
                                for (int i = 0; i < q.length; i++) {
                                    q[i] *= 3; // peaked and flat score rows both occur
                                }
                                float[] out = new float[heads * headDim + 2];
                                float[] scalar = new float[heads * headDim];
                                KERNELS.attention(q, 1, heads, f.paged(), out, 2);
                                ScalarKernels.attention(q, 1, heads, f.paged(), scalar, 0);
                                float[] q0 = java.util.Arrays.copyOfRange(q, 1, q.length);
                                double[] ref = naive(q0, heads, g, f.k()[layer], f.v()[layer], tokens);
                                double tol = 1e-5 * Math.sqrt(tokens + headDim);
                                String what = dtype + " block " + blockTokens + " heads " + heads + "/" + hk[1]
                                        + " dim " + headDim + " tokens " + tokens + " layer " + layer;
                                assertThat(out[0]).isZero();
                                assertThat(out[1]).isZero();
                                for (int i = 0; i < heads * headDim; i++) {
                                    assertThat(Math.abs(out[2 + i] - ref[i])).as("%s element %d", what, i)
                                            .isLessThanOrEqualTo(tol);
                                    assertThat(Math.abs(scalar[i] - ref[i])).as("scalar %s element %d", what, i)
                                            .isLessThanOrEqualTo(1e-6);
                                }
                            }
                        }
                    }
                }
            }
        });
    }

    @Test
    void oneTokenAttendsToItsOwnValue() {
        SplittableRandom r = new SplittableRandom(5);
        KvGeometry g = new KvGeometry(1, 2, 17, KvDtype.FP32, 16);
        Fixture f = fixture(ARENA, r, g, 1, 0);
        float[] q = KernelData.floats(r, 4 * 17);
        float[] out = new float[4 * 17];
        KERNELS.attention(q, 0, 4, f.paged(), out, 0);
        for (int h = 0; h < 4; h++) {
            for (int i = 0; i < 17; i++) {
                assertThat(out[h * 17 + i]).isEqualTo(f.v()[0][(h / 2) * 17 + i]);
            }
        }
    }

    @Test
    void misuseIsRefusedWithTheValues() {
        KvGeometry g = new KvGeometry(2, 2, 8, KvDtype.BF16, 16);
        MemorySegment block = ARENA.allocate(g.bytesPerBlock());
        assertThatThrownBy(() -> new PagedKv(g, 0, List.of(block), 0)).hasMessageContaining("holds 0 tokens");
        assertThatThrownBy(() -> new PagedKv(g, 2, List.of(block), 1)).hasMessageContaining("layer 2");
        assertThatThrownBy(() -> new PagedKv(g, 0, List.of(block.asSlice(0, 100)), 1)).hasMessageContaining("100 bytes");
        assertThatThrownBy(() -> new PagedKv(new KvGeometry(1, 1, 8, KvDtype.INT8, 16), 0, List.of(block), 1))
                .hasMessageContaining("int8");
        PagedKv kv = new PagedKv(g, 0, List.of(block), 3);
        assertThatThrownBy(() -> KERNELS.attention(new float[48], 0, 3, kv, new float[48], 0))
                .hasMessageContaining("3 query heads");
    }
}
