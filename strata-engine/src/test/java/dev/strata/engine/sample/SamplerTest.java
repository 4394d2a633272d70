package dev.strata.engine.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class SamplerTest {

    /** Random logits; every fourth vocabulary draws from a few values so that ties are common. */
    private static float[] logits(SplittableRandom r, int rowLength, int validVocab) {
        float[] l = new float[rowLength];
        boolean ties = r.nextInt(4) == 0;
        for (int i = 0; i < rowLength; i++) {
            l[i] = ties ? r.nextInt(4) * 0.5f : (float) (r.nextGaussian() * 3);
        }
        for (int i = validVocab; i < rowLength; i++) {
            l[i] = 1000f + r.nextInt(10); // padding rows: larger than any real logit
        }
        return l;
    }

    /** Ids in rank order: logit descending, id ascending. */
    private static Integer[] ranked(float[] l, int validVocab) {
        Integer[] ids = IntStream.range(0, validVocab).boxed().toArray(Integer[]::new);
        Arrays.sort(ids, Comparator.<Integer>comparingDouble(i -> -l[i]).thenComparingInt(i -> i));
        return ids;
    }

    private static int referenceArgmax(float[] l, int validVocab) {
        int best = 0;
        for (int i = 1; i < validVocab; i++) {
            if (l[i] > l[best]) {
                best = i;
            }
        }
        return best;
    }

    @Test
    void greedyPicksArgmaxWithTiesToLowestIdAndNeverPadding() {
        float[] row = {1f, 3f, 3f, 2f, 50f, 50f}; // ids 4 and 5 are padding
        Sampler s = new Sampler(SamplingParams.greedy(8, List.of()), 4);
        assertThat(s.sample(row)).isEqualTo(1);
        float[] batch = new float[13];
        System.arraycopy(row, 0, batch, 7, 6);
        assertThat(s.sample(batch, 7)).isEqualTo(1);
        assertThat(row).containsExactly(1f, 3f, 3f, 2f, 50f, 50f);
        Property.forAll("greedy", 300, r -> {
            int v = 1 + r.nextInt(200);
            float[] l = logits(r, v + r.nextInt(9), v);
            if (v > 1 && r.nextBoolean()) {
                l[r.nextInt(v)] = Float.NEGATIVE_INFINITY; // a masked token
            }
            assertThat(new Sampler(SamplingParams.greedy(1, List.of()), v).sample(l)).isEqualTo(referenceArgmax(l, v));
        });
    }

    @Test
    void topKOneTinyTopPAndNearZeroTemperatureEqualGreedy() {
        Property.forAll("greedy limits", 300, r -> {
            int v = 1 + r.nextInt(300);
            float[] l = logits(r, v + r.nextInt(5), v);
            int greedy = referenceArgmax(l, v);
            long seed = r.nextLong();
            SamplingParams.Builder b = SamplingParams.builder().seed(seed).temperature(0.1 + r.nextDouble() * 1.9);
            assertThat(new Sampler(b.topK(1).build(), v).sample(l)).as("top_k=1").isEqualTo(greedy);
            assertThat(new Sampler(b.topK(0).topP(1e-12).build(), v).sample(l)).as("top_p tiny").isEqualTo(greedy);
            long atMax = IntStream.range(0, v).filter(i -> l[i] == l[greedy]).count();
            int cold = new Sampler(SamplingParams.builder().seed(seed).temperature(1e-30).build(), v).sample(l);
            if (atMax == 1) {
                assertThat(cold).as("temperature -> 0").isEqualTo(greedy);
            } else {
                assertThat(l[cold]).as("temperature -> 0 with a tie at the maximum").isEqualTo(l[greedy]);
            }
        });
    }

    @Test
    void sameSeedSameTokensDifferentSeedsDiffer() {
        SplittableRandom r = new SplittableRandom(41);
        int v = 97;
        List<float[]> rows = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            float[] l = new float[v + 3];
            for (int j = 0; j < l.length; j++) {
                l[j] = (float) r.nextGaussian();
            }
            rows.add(l);
        }
        SamplingParams.Builder b = SamplingParams.builder().temperature(0.9).topK(40).topP(0.95);
        int[] a1 = run(new Sampler(b.seed(7).build(), v), rows);
        int[] a2 = run(new Sampler(b.seed(7).build(), v), rows);
        int[] c = run(new Sampler(b.seed(8).build(), v), rows);
        assertThat(a1).isEqualTo(a2);
        assertThat(c).isNotEqualTo(a1);
        // Penalties are part of the reproducible state too.
        SamplingParams.Builder pb = b.seed(9).presencePenalty(0.7).frequencyPenalty(0.3);
        assertThat(run(new Sampler(pb.build(), v), rows)).isEqualTo(run(new Sampler(pb.build(), v), rows));
    }

    private static int[] run(Sampler s, List<float[]> rows) {
        return rows.stream().mapToInt(s::sample).toArray();
    }

    /** The candidate set the documented rules give, with top-p mass widened by {@code slack} for float rounding. */
    private static Set<Integer> expectedSet(float[] l, int v, int k, double p, double t, double slack) {
        Integer[] order = ranked(l, v);
        int c = k > 0 && k < v ? k : v;
        double max = l[order[0]];
        double total = 0;
        for (int i = 0; i < c; i++) {
            total += Math.exp((l[order[i]] - max) / t);
        }
        Set<Integer> set = new HashSet<>();
        double kept = 0;
        for (int i = 0; i < c; i++) {
            set.add(order[i]);
            kept += Math.exp((l[order[i]] - max) / t);
            if (p < 1 && kept >= p * total * (1 - slack)) {
                break;
            }
        }
        // Tokens tied with the last kept one at the boundary rank after it by id, so they are out.
        return set;
    }

    @Test
    void topKAndTopPNeverReturnATokenOutsideTheirSets() {
        Property.forAll("top-k/top-p sets", 400, r -> {
            int v = 1 + r.nextInt(257);
            float[] l = logits(r, v + r.nextInt(7), v);
            int k = r.nextInt(4) == 0 ? 0 : 1 + r.nextInt(Math.min(v, 20) + 1);
            double p = r.nextInt(4) == 0 ? 1.0 : 0.05 + r.nextDouble() * 0.95;
            double t = 0.2 + r.nextDouble() * 1.8;
            Sampler s = new Sampler(SamplingParams.builder().seed(r.nextLong()).temperature(t).topK(k).topP(p).build(), v);
            Set<Integer> topK = expectedSet(l, v, k, 1.0, t, 0);
            Set<Integer> nucleus = expectedSet(l, v, k, p, t, 1e-12);
            for (int i = 0; i < 20; i++) {
                int token = s.sample(l);
                assertThat(token).isBetween(0, v - 1);
                assertThat(topK).as("top-k set (k=%d)", k).contains(token);
                assertThat(nucleus).as("nucleus (k=%d, p=%f, t=%f)", k, p, t).contains(token);
            }
        });
    }

    /**
     * Chi-square goodness of fit against the exact softmax probabilities. The threshold is the
     * 1 - 1e-4 quantile of the chi-square distribution with (categories - 1) degrees of freedom,
     * by the Wilson-Hilferty approximation; with a fixed seed the test is deterministic, and the
     * same statistic against a slightly wrong distribution (the temperature off by 10%) must exceed
     * it, so the test has the power to fail.
     */
    @Test
    void drawsFollowTheExactSoftmaxDistribution() {
        float[] l = {0.3f, -1.2f, 2.0f, 0.9f, 0.9f, -0.4f, 1.5f, -3.0f, 9f, 9f}; // ids 8, 9: padding
        int v = 8;
        int draws = 200_000;
        checkFit(l, v, 0.8, 0, 1.0, draws, 11);
        checkFit(l, v, 1.3, 5, 1.0, draws, 12);  // top-k: renormalised over the 5 best
        checkFit(l, v, 1.0, 0, 0.75, draws, 13); // top-p: renormalised over the nucleus
        checkFit(l, v, 0.7, 6, 0.9, draws, 14);
    }

    private static double[] exact(float[] l, int v, double t, int k, double p) {
        Set<Integer> kept = expectedSet(l, v, k, p, t, 0);
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < v; i++) {
            max = Math.max(max, l[i]);
        }
        double[] q = new double[v];
        double sum = 0;
        for (int i : kept) {
            q[i] = Math.exp((l[i] - max) / t);
            sum += q[i];
        }
        for (int i = 0; i < v; i++) {
            q[i] /= sum;
        }
        return q;
    }

    private static void checkFit(float[] l, int v, double t, int k, double p, int draws, long seed) {
        Sampler s = new Sampler(SamplingParams.builder().seed(seed).temperature(t).topK(k).topP(p).build(), v);
        long[] counts = new long[v];
        for (int i = 0; i < draws; i++) {
            counts[s.sample(l)]++;
        }
        double[] q = exact(l, v, t, k, p);
        double[] wrong = exact(l, v, t * 1.1, k, p);
        int categories = 0;
        for (int i = 0; i < v; i++) {
            if (q[i] == 0) {
                assertThat(counts[i]).as("id %d is outside the candidate set", i).isZero();
            } else {
                categories++;
            }
        }
        double threshold = chiSquareQuantile(categories - 1, 3.719); // z for 1 - 1e-4
        assertThat(chiSquare(counts, q, draws)).as("fit at t=%f k=%d p=%f", t, k, p).isLessThan(threshold);
        assertThat(chiSquare(counts, wrong, draws)).as("a wrong distribution is rejected").isGreaterThan(threshold);
    }

    private static double chiSquare(long[] counts, double[] q, int draws) {
        double x = 0;
        for (int i = 0; i < counts.length; i++) {
            if (q[i] > 0) {
                double e = q[i] * draws;
                x += (counts[i] - e) * (counts[i] - e) / e;
            }
        }
        return x;
    }

    /** Wilson-Hilferty: the chi-square quantile with {@code df} degrees of freedom at standard normal z. */
    private static double chiSquareQuantile(int df, double z) {
        double a = 2.0 / (9 * df);
        return df * Math.pow(1 - a + z * Math.sqrt(a), 3);
    }

    @Test
    void penaltiesLowerTokensAlreadyGenerated() {
        float[] l = {1.0f, 0.9f, -5f};
        Sampler freq = new Sampler(SamplingParams.builder().temperature(0).maxTokens(9).frequencyPenalty(0.2).build(), 3);
        // 0: 1.0 vs 0.9 -> 0; then 0.8 vs 0.9 -> 1; then 0.8 vs 0.7 -> 0; then 0.6 vs 0.7 -> 1
        assertThat(new int[] {freq.sample(l), freq.sample(l), freq.sample(l), freq.sample(l)}).containsExactly(0, 1, 0, 1);
        Sampler presence = new Sampler(SamplingParams.builder().temperature(0).presencePenalty(0.5).build(), 3);
        // 0; then 0.5 vs 0.9 -> 1; then 0.5 vs 0.4 -> 0, and stays 0 (presence counts once)
        assertThat(new int[] {presence.sample(l), presence.sample(l), presence.sample(l), presence.sample(l)})
                .containsExactly(0, 1, 0, 0);
        assertThat(l).containsExactly(1.0f, 0.9f, -5f);
        assertThat(presence.sampled()).isEqualTo(4);
    }

    /** Scratch is sized once: sampling a token allocates nothing on the heap (measured per thread). */
    @Test
    void samplingAllocatesNothingPerToken() {
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        SplittableRandom r = new SplittableRandom(5);
        int v = 1001;
        float[] l = new float[v + 7];
        for (int i = 0; i < l.length; i++) {
            l[i] = (float) r.nextGaussian();
        }
        Sampler[] samplers = {
            new Sampler(SamplingParams.greedy(10, List.of()), v),
            new Sampler(SamplingParams.builder().seed(1).temperature(0.8).topK(50).topP(0.9).presencePenalty(0.5).build(), v),
            new Sampler(SamplingParams.builder().seed(2).topP(0.5).build(), v),
            new Sampler(SamplingParams.builder().seed(3).topK(7).build(), v),
        };
        long tid = Thread.currentThread().threadId();
        for (Sampler s : samplers) {
            for (int i = 0; i < 200; i++) {
                s.sample(l); // warm up
            }
            long before = threads.getThreadAllocatedBytes(tid);
            int sum = 0;
            for (int i = 0; i < 2000; i++) {
                sum += s.sample(l);
            }
            long allocated = threads.getThreadAllocatedBytes(tid) - before;
            assertThat(sum).isNotNegative();
            assertThat(allocated).as("bytes allocated by 2000 tokens with %s", s.params()).isLessThan(2000);
        }
    }

    /** log softmax(l / t) of id {@code i} over the first {@code v} ids, naively in double with max subtraction. */
    private static double referenceLogprob(float[] l, int v, double t, int i) {
        double max = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < v; j++) {
            max = Math.max(max, l[j] / t);
        }
        double sum = 0;
        for (int j = 0; j < v; j++) {
            sum += Math.exp(l[j] / t - max);
        }
        return l[i] / t - max - Math.log(sum);
    }

    @Test
    void logprobsAreTheTemperedSoftmaxOfTheSampledRowWithTheMostLikelyFirst() {
        Property.forAll("logprobs", 200, r -> {
            int v = 1 + r.nextInt(120);
            float[] l = logits(r, v + r.nextInt(5), v);
            boolean greedy = r.nextBoolean();
            double t = greedy ? 0 : 0.1 + r.nextDouble() * 1.9;
            SamplingParams.Builder b = SamplingParams.builder().seed(r.nextLong()).temperature(t);
            if (!greedy && r.nextBoolean()) {
                b.topK(1 + r.nextInt(v)).topP(0.05 + r.nextDouble() * 0.95); // truncation does not change the reported distribution
            }
            Sampler s = new Sampler(b.build(), v);
            int token = s.sample(l);
            int top = r.nextInt(Sampler.MAX_TOP_LOGPROBS + 1);
            TokenLogprobs lp = s.logprobsOfLast(l, 0, top);
            double scale = greedy ? 1.0 : t;
            assertThat(lp.token()).isEqualTo(token);
            assertThat(lp.logprob()).isLessThanOrEqualTo(0.0).isCloseTo(referenceLogprob(l, v, scale, token), org.assertj.core.api.Assertions.within(1e-9));
            assertThat(lp.top()).isEqualTo(Math.min(top, v));
            Integer[] ranked = ranked(l, v);
            double mass = 0;
            for (int i = 0; i < lp.top(); i++) {
                assertThat(lp.topIds()[i]).as("rank %d", i).isEqualTo(ranked[i]);
                assertThat(lp.topLogprobs()[i]).isLessThanOrEqualTo(0.0)
                        .isCloseTo(referenceLogprob(l, v, scale, ranked[i]), org.assertj.core.api.Assertions.within(1e-9));
                mass += Math.exp(lp.topLogprobs()[i]);
            }
            assertThat(mass).isLessThanOrEqualTo(1.0 + 1e-12);
            if (greedy && top > 0) {
                assertThat(lp.topIds()[0]).isEqualTo(token);
                assertThat(lp.topLogprobs()[0]).isEqualTo(lp.logprob());
            }
        });
    }

    @Test
    void logprobsStayFiniteForHugeLogitsAndFloorMaskedOnes() {
        float[] l = {30000f, 29990f, Float.NEGATIVE_INFINITY, -30000f};
        Sampler s = new Sampler(SamplingParams.greedy(4, List.of()), 4);
        assertThat(s.sample(l)).isZero();
        TokenLogprobs lp = s.logprobsOfLast(l, 0, 4);
        assertThat(lp.logprob()).isCloseTo(-Math.log1p(Math.exp(-10)), org.assertj.core.api.Assertions.within(1e-12));
        assertThat(lp.topIds()).containsExactly(0, 1, 3);
        assertThat(lp.topLogprobs()[1]).isCloseTo(-10 - Math.log1p(Math.exp(-10)), org.assertj.core.api.Assertions.within(1e-9));
        assertThat(lp.topLogprobs()[2]).isEqualTo(TokenLogprobs.FLOOR); // exp(-60000) is 0 in double
    }

    @Test
    void logprobsUseThePenalizedRowTheTokenWasDrawnFrom() {
        float[] l = {2f, 1.5f, 0f};
        Sampler s = new Sampler(SamplingParams.builder().temperature(0).frequencyPenalty(2).build(), 3);
        assertThat(s.sample(l)).isZero();
        assertThat(s.sample(l)).as("id 0 penalized to 0").isEqualTo(1);
        TokenLogprobs lp = s.logprobsOfLast(l, 0, 2);
        float[] penalized = {0f, 1.5f, 0f};
        assertThat(lp.logprob()).isCloseTo(referenceLogprob(penalized, 3, 1, 1), org.assertj.core.api.Assertions.within(1e-12));
        assertThat(lp.topIds()).containsExactly(1, 0);
    }
}
