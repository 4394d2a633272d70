package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A tiny MoE computed in scalar Java from the bytes the pager hands out: paged (every k, both
 * scopes, both policies; grouped by the planner and one token per group, and in one group where
 * the batch fits) against all experts resident (read from the masters). Outputs must be identical
 * to the bit.
 */
class MoeReferenceTest {

    static final int LAYERS = 3;
    static final int EXPERTS = 10;
    static final int TOP_K = 3;
    static final int HIDDEN = 13;  // d
    static final int FFN = 7;      // h
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    // expert image: up [FFN x HIDDEN], down [HIDDEN x FFN], scale [FFN], floats
    static final ExpertLayout LAYOUT = ExpertLayout.of("up", 4L * FFN * HIDDEN, "down", 4L * HIDDEN * FFN, "scale", 4L * FFN);
    static final int UP = 0;
    static final int DOWN = 1;
    static final int SCALE = 2;

    /** Where a layer's expert weights are read from. */
    interface Weights {
        /** Makes the experts of {@code tokens} available; returns a lookup (expert, tensor) → segment. */
        Lookup prepare(int layer, int[][] routed, int[] tokens);
    }

    interface Lookup {
        MemorySegment tensor(int expert, int tensor);
    }

    @Test
    void pagedOutputsAreBitIdenticalToAllResidentAtEveryK() {
        SplittableRandom random = new SplittableRandom(77);
        float[][][] router = new float[LAYERS][EXPERTS][HIDDEN]; // [layer][expert][d]
        for (float[][] layer : router) {
            for (float[] row : layer) {
                for (int i = 0; i < HIDDEN; i++) {
                    row[i] = (float) random.nextGaussian();
                }
            }
        }
        int steps = 4;
        float[][][] inputs = new float[steps][][]; // [step][token][d], batch sizes vary
        for (int s = 0; s < steps; s++) {
            inputs[s] = new float[1 + random.nextInt(9)][HIDDEN];
            for (float[] x : inputs[s]) {
                for (int i = 0; i < HIDDEN; i++) {
                    x[i] = (float) random.nextGaussian();
                }
            }
        }
        try (ExpertFixture f = new ExpertFixture(LAYOUT, LAYERS, EXPERTS, 4L * LAYERS * EXPERTS * ExpertFixture.slotBytes(LAYOUT),
                78)) {
            writeWeights(f.masters, random);
            Weights resident = (layer, routed, tokens) -> (e, t) -> LAYOUT.slice(f.masters.view(layer, e), t);
            float[][][] expected = new float[steps][][];
            for (int s = 0; s < steps; s++) {
                expected[s] = forward(router, inputs[s], resident, Grouping.ALL, null);
            }
            int compared = 0;
            for (SlotScope scope : SlotScope.values()) {
                for (int k = TOP_K; k <= EXPERTS; k++) {
                    for (Grouping grouping : Grouping.values()) {
                        for (ExpertPolicy policy : List.of(new LruExpertPolicy(), new LfuExpertPolicy(5))) {
                            try (ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(TOP_K).slotsPerLayer(k)
                                    .scope(scope).policy(policy).build()) {
                                Weights paged = (layer, routed, tokens) -> {
                                    int[] map = pager.page(layer, routed, tokens);
                                    return (e, t) -> pager.tensor(layer, map[e], t);
                                };
                                int ran = 0;
                                for (int s = 0; s < steps; s++) {
                                    float[][] out = forward(router, inputs[s], paged, grouping, pager);
                                    if (out == null) {
                                        continue; // one group cannot run this batch at this k
                                    }
                                    for (int t = 0; t < out.length; t++) {
                                        for (int i = 0; i < HIDDEN; i++) {
                                            assertThat(Float.floatToRawIntBits(out[t][i]))
                                                    .as("%s k=%d %s %s step %d token %d dim %d", scope, k, grouping, policy.name(), s, t, i)
                                                    .isEqualTo(Float.floatToRawIntBits(expected[s][t][i]));
                                        }
                                    }
                                    compared++;
                                    ran++;
                                }
                                pager.checkInvariants();
                                if (ran > 0) {
                                    assertThat(pager.stats().misses()).isPositive();
                                }
                            }
                        }
                    }
                }
            }
            assertThat(compared).isGreaterThan(2 * (EXPERTS - TOP_K + 1) * 2 * steps);
        }
    }

    /** How the tokens of a batch are split per layer. */
    enum Grouping {
        /** The planner's groups. */
        PLANNED,
        /** One token per group. */
        SINGLE,
        /** All tokens in one group (only where the batch's union fits). */
        ALL
    }

    /**
     * Runs the layers over a batch; per layer, tokens are grouped as {@code grouping} says and
     * results kept in token order. Returns null when {@code grouping} is ALL and a layer's union
     * exceeds the pager's capacity (one group cannot run it).
     */
    static float[][] forward(float[][][] router, float[][] input, Weights weights, Grouping grouping, ExpertPager pager) {
        float[][] h = copy(input);
        for (int layer = 0; layer < LAYERS; layer++) {
            int[][] routed = route(router[layer], h);
            float[][] gate = gates(router[layer], h, routed);
            if (grouping == Grouping.ALL && pager != null && pager.plan(layer, routed).count() > 1) {
                return null;
            }
            int[][] groups = switch (grouping) {
                case PLANNED -> pager != null ? pager.plan(layer, routed).groups() : all(h.length);
                case SINGLE -> singles(h.length);
                case ALL -> all(h.length);
            };
            float[][] out = new float[h.length][];
            for (int[] group : groups) {
                Lookup lookup = weights.prepare(layer, routed, group);
                for (int t : group) {
                    float[] y = h[t].clone();
                    for (int j = 0; j < TOP_K; j++) {
                        float[] e = expert(lookup, routed[t][j], h[t]);
                        for (int i = 0; i < HIDDEN; i++) {
                            y[i] += gate[t][j] * e[i];
                        }
                    }
                    out[t] = y;
                }
            }
            h = out;
        }
        return h;
    }

    /** down · (scale ⊙ relu(up · x)), scalar, fixed summation order. */
    static float[] expert(Lookup w, int e, float[] x) {
        MemorySegment up = w.tensor(e, UP);
        MemorySegment down = w.tensor(e, DOWN);
        MemorySegment scale = w.tensor(e, SCALE);
        float[] a = new float[FFN];
        for (int r = 0; r < FFN; r++) {
            float s = 0;
            for (int c = 0; c < HIDDEN; c++) {
                s += up.getAtIndex(F, (long) r * HIDDEN + c) * x[c];
            }
            a[r] = Math.max(0, s) * scale.getAtIndex(F, r);
        }
        float[] y = new float[HIDDEN];
        for (int r = 0; r < HIDDEN; r++) {
            float s = 0;
            for (int c = 0; c < FFN; c++) {
                s += down.getAtIndex(F, (long) r * FFN + c) * a[c];
            }
            y[r] = s;
        }
        return y;
    }

    /** Top-K experts of each token by router logit (ties: lower id), best first. */
    static int[][] route(float[][] router, float[][] h) {
        int[][] routed = new int[h.length][TOP_K];
        for (int t = 0; t < h.length; t++) {
            float[] logits = logits(router, h[t]);
            boolean[] taken = new boolean[EXPERTS];
            for (int j = 0; j < TOP_K; j++) {
                int best = -1;
                for (int e = 0; e < EXPERTS; e++) {
                    if (!taken[e] && (best < 0 || logits[e] > logits[best])) {
                        best = e;
                    }
                }
                taken[best] = true;
                routed[t][j] = best;
            }
        }
        return routed;
    }

    /** Softmax over the chosen experts' logits. */
    static float[][] gates(float[][] router, float[][] h, int[][] routed) {
        float[][] g = new float[h.length][TOP_K];
        for (int t = 0; t < h.length; t++) {
            float[] logits = logits(router, h[t]);
            float max = logits[routed[t][0]];
            float sum = 0;
            for (int j = 0; j < TOP_K; j++) {
                g[t][j] = (float) Math.exp(logits[routed[t][j]] - max);
                sum += g[t][j];
            }
            for (int j = 0; j < TOP_K; j++) {
                g[t][j] /= sum;
            }
        }
        return g;
    }

    static float[] logits(float[][] router, float[] x) {
        float[] l = new float[EXPERTS];
        for (int e = 0; e < EXPERTS; e++) {
            float s = 0;
            for (int i = 0; i < HIDDEN; i++) {
                s += router[e][i] * x[i];
            }
            l[e] = s;
        }
        return l;
    }

    static void writeWeights(ExpertMasters masters, SplittableRandom random) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment image = arena.allocate(LAYOUT.bytes(), 16);
            for (int l = 0; l < LAYERS; l++) {
                for (int e = 0; e < EXPERTS; e++) {
                    for (long i = 0; i < LAYOUT.bytes() / 4; i++) {
                        image.setAtIndex(F, i, (float) (random.nextGaussian() * 0.5));
                    }
                    masters.write(l, e, image);
                }
            }
        }
    }

    static int[][] all(int n) {
        int[] g = new int[n];
        for (int i = 0; i < n; i++) {
            g[i] = i;
        }
        return new int[][] {g};
    }

    static int[][] singles(int n) {
        int[][] g = new int[n][];
        for (int i = 0; i < n; i++) {
            g[i] = new int[] {i};
        }
        return g;
    }

    static float[][] copy(float[][] x) {
        float[][] c = new float[x.length][];
        for (int i = 0; i < x.length; i++) {
            c[i] = x[i].clone();
        }
        return c;
    }
}
