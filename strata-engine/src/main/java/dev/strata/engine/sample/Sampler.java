package dev.strata.engine.sample;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Picks the next token of one request from a row of logits.
 *
 * <p>Design note: the order of operations is fixed so that a seeded request is reproducible.
 * Only ids {@code [0, validVocab)} are ever considered: rows beyond the tokenizer's vocabulary
 * (padding of the embedding matrix) are never returned, whatever their logits.
 * <ol>
 *   <li><b>Penalties</b> (only when non-zero): {@code l[t] - frequency * n[t] - presence * (n[t] > 0)},
 *       where {@code n[t]} counts how often this sampler returned {@code t}; computed in float on a
 *       scratch copy, the caller's logits are never modified.</li>
 *   <li><b>Greedy</b> when temperature is 0: the largest logit, ties to the lowest id. No random
 *       number is drawn.</li>
 *   <li><b>Top-k</b> (when {@code 0 < k < validVocab}): the k ids with the largest logits, ties at
 *       the boundary to the lower id, chosen with a bounded min-heap in O(V log k). Ordering by
 *       logit equals ordering by probability, so this is done before scaling.</li>
 *   <li><b>Temperature</b>: each remaining candidate gets the weight
 *       {@code exp(((double) l[t] - lmax) / T)} in double, {@code lmax} the largest logit (always
 *       a candidate); the weights are the softmax probabilities up to their sum {@code W}.</li>
 *   <li><b>Top-p</b> (when p &lt; 1): the candidates are taken in the order (logit descending, id
 *       ascending) by popping a max-heap built in O(c) over the c candidates, accumulating weights,
 *       until the accumulated weight is ≥ {@code p * W}; at least one token is kept. Only the
 *       tokens in the nucleus are ever popped, so the cost is O(c + m log c) for m kept.</li>
 *   <li><b>Draw</b>: one {@code u = random.nextDouble() * S}, S the sum of the kept weights; the
 *       kept candidates are walked in a fixed order, accumulating weights in double, and the first
 *       whose running sum exceeds u is returned (the last kept one if rounding leaves none). The
 *       order is the nucleus order (probability descending, id ascending) when top-p applied,
 *       otherwise ascending id.</li>
 * </ol>
 * The random source is a {@link SplittableRandom} created once per sampler from the request's
 * seed (or from a fresh seed when none was given); one {@code nextDouble()} is drawn per
 * non-greedy token.
 *
 * <p>Log-probabilities ({@link #logprobsOfLast}), only when a request asks for them, are those of the
 * distribution the token was drawn from before truncation: {@code softmax(l / T)} over all valid
 * ids, {@code l} the logits after penalties (step 1) and {@code T} the temperature, or 1 when
 * greedy (the model's own distribution; the greedy choice is its most likely token). Top-k and
 * top-p are not applied to them, so every token has a finite log-probability and a truncated
 * distribution is not misreported as certain. They are computed stably in double as
 * {@code (l[t] - lmax) / T - log(sum_u exp((l[u] - lmax) / T))}.
 *
 * <p>Memory: all scratch (candidate ids, weights, penalty copy and counts) is allocated once in
 * the constructor, sized to {@code validVocab}; {@link #sample} allocates nothing.
 *
 * <p>Threads: one request's sampler, used by one thread at a time (it holds the random state and
 * scratch).
 */
public final class Sampler {
    private final SamplingParams params;
    private final int validVocab;          // ids [0, validVocab) may be returned
    private final SplittableRandom random;
    private final int[] cand;              // [validVocab] candidate ids
    private final double[] weight;         // [validVocab] weight of cand[i] (unnormalised probability)
    private final float[] penalized;       // [validVocab] logits after penalties; null without penalties
    private final int[] counts;            // [validVocab] times each id was returned; null without penalties
    private final int[] seen;              // [validVocab] distinct ids returned, in first-seen order; null without penalties
    private int seenCount;
    private long sampled;                  // tokens returned so far
    private int lastToken = -1;            // the token the last sample returned

    /**
     * A sampler for one request over logit rows whose first {@code validVocab} entries are the
     * tokenizer's ids.
     */
    public Sampler(SamplingParams params, int validVocab) {
        if (params == null) {
            throw new IllegalArgumentException("sampling params must not be null");
        }
        if (validVocab < 1) {
            throw new IllegalArgumentException("validVocab must be >= 1, got " + validVocab);
        }
        this.params = params;
        this.validVocab = validVocab;
        this.random = params.seed().isPresent() ? new SplittableRandom(params.seed().getAsLong()) : new SplittableRandom();
        this.cand = new int[validVocab];
        this.weight = new double[validVocab];
        if (params.hasPenalties()) {
            penalized = new float[validVocab];
            counts = new int[validVocab];
            seen = new int[validVocab];
        } else {
            penalized = null;
            counts = null;
            seen = null;
        }
    }

    /** The parameters this sampler applies. */
    public SamplingParams params() {
        return params;
    }

    /** The number of tokens returned so far. */
    public long sampled() {
        return sampled;
    }

    /** Picks the next token from {@code logits[0 .. validVocab)}; see {@link #sample(float[], int)}. */
    public int sample(float[] logits) {
        return sample(logits, 0);
    }

    /**
     * Picks the next token from {@code logits[offset .. offset + validVocab)} (a row of a batch's
     * logits; entries beyond {@code validVocab} are padding and ignored). Logits must be finite or
     * negative infinity (a masked token); at least one must be finite. A NaN logit is rejected
     * when sampling with a temperature and skipped by greedy decoding.
     *
     * @return a token id in {@code [0, validVocab)}
     */
    public int sample(float[] logits, int offset) {
        if (offset < 0 || logits.length - offset < validVocab) {
            throw new IllegalArgumentException("logits row at offset " + offset + " of an array of " + logits.length
                    + " floats is shorter than validVocab " + validVocab);
        }
        float[] l = logits;
        int base = offset;
        if (penalized != null) {
            applyPenalties(logits, offset);
            l = penalized;
            base = 0;
        }
        int token = params.isGreedy() ? argmax(l, base) : sampleScaled(l, base);
        record(token);
        return token;
    }

    /** The most alternatives {@link #logprobsOfLast} lists, as in the OpenAI API. */
    public static final int MAX_TOP_LOGPROBS = 20;

    /**
     * The log-probability of the token the last {@link #sample} returned and of the {@code top}
     * most likely tokens (ties to the lower id), from the same row: call it right after that
     * sample, with the same {@code logits} and {@code offset}, before the next. The distribution
     * is described in the class note. Allocates only the returned arrays; O(V · top).
     *
     * @param top alternatives to list, in [0, {@value #MAX_TOP_LOGPROBS}]
     * @throws IllegalStateException when nothing was sampled yet
     */
    public TokenLogprobs logprobsOfLast(float[] logits, int offset, int top) {
        if (lastToken < 0) {
            throw new IllegalStateException("no token sampled yet: logprobs are of the last sampled token");
        }
        if (top < 0 || top > MAX_TOP_LOGPROBS) {
            throw new IllegalArgumentException("top must be in [0, " + MAX_TOP_LOGPROBS + "], got " + top);
        }
        if (offset < 0 || logits.length - offset < validVocab) {
            throw new IllegalArgumentException("logits row at offset " + offset + " of an array of " + logits.length
                    + " floats is shorter than validVocab " + validVocab);
        }
        float[] l = logits;
        int base = offset;
        if (penalized != null) { // still the penalized copy of this row: record() changed only the counts
            l = penalized;
            base = 0;
        }
        double t = params.isGreedy() ? 1.0 : params.temperature();
        float lmax = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < validVocab; i++) {
            float v = l[base + i];
            if (v > lmax) { // NaN never compares greater
                lmax = v;
            }
        }
        double sum = 0;
        for (int i = 0; i < validVocab; i++) {
            float v = l[base + i];
            if (v > Float.NEGATIVE_INFINITY) { // skips masked ids and NaN
                sum += Math.exp(((double) v - lmax) / t);
            }
        }
        double logZ = Math.log(sum); // sum >= 1: the maximum contributes exp(0)
        int[] ids = new int[top];
        double[] lps = new double[top];
        int filled = 0;
        for (int i = 0; i < validVocab && top > 0; i++) {
            float v = l[base + i];
            if (!(v > Float.NEGATIVE_INFINITY)) {
                continue;
            }
            if (filled == top && !(v > l[base + ids[top - 1]])) {
                continue; // not better than the worst kept (ties keep the lower id, seen first)
            }
            int at = filled < top ? filled++ : top - 1;
            while (at > 0 && v > l[base + ids[at - 1]]) {
                ids[at] = ids[at - 1];
                at--;
            }
            ids[at] = i;
        }
        int[] topIds = java.util.Arrays.copyOf(ids, filled);
        double[] topLps = java.util.Arrays.copyOf(lps, filled);
        for (int i = 0; i < filled; i++) {
            topLps[i] = logprob(l[base + topIds[i]], lmax, t, logZ);
        }
        return new TokenLogprobs(lastToken, logprob(l[base + lastToken], lmax, t, logZ), topIds, topLps);
    }

    /** {@code (v - lmax) / t - logZ}, at most 0, or {@link TokenLogprobs#FLOOR} for a masked (or NaN) logit. */
    private static double logprob(float v, float lmax, double t, double logZ) {
        if (!(v > Float.NEGATIVE_INFINITY)) {
            return TokenLogprobs.FLOOR;
        }
        return Math.max(TokenLogprobs.FLOOR, Math.min(0.0, ((double) v - lmax) / t - logZ));
    }

    private void applyPenalties(float[] logits, int offset) {
        System.arraycopy(logits, offset, penalized, 0, validVocab);
        float presence = (float) params.presencePenalty();
        float frequency = (float) params.frequencyPenalty();
        for (int i = 0; i < seenCount; i++) {
            int t = seen[i];
            penalized[t] = penalized[t] - frequency * counts[t] - presence;
        }
    }

    private void record(int token) {
        lastToken = token;
        sampled++;
        if (counts != null) {
            if (counts[token]++ == 0) {
                seen[seenCount++] = token;
            }
        }
    }

    private int argmax(float[] l, int base) {
        int best = -1;
        float bestValue = Float.NEGATIVE_INFINITY;
        for (int t = 0; t < validVocab; t++) {
            float v = l[base + t];
            if (v > bestValue || best < 0 && v == bestValue) {
                best = t;
                bestValue = v;
            }
        }
        checkFinite(best, bestValue);
        return best;
    }

    private void checkFinite(int best, float bestValue) {
        if (best < 0 || bestValue == Float.NEGATIVE_INFINITY || Float.isNaN(bestValue) || bestValue == Float.POSITIVE_INFINITY) {
            throw new IllegalArgumentException("logits must contain a finite value and no NaN or +Infinity; the largest of "
                    + validVocab + " is " + bestValue + (best >= 0 ? " at id " + best : ""));
        }
    }

    private int sampleScaled(float[] l, int base) {
        int k = params.topK();
        int c;
        if (k > 0 && k < validVocab) {
            selectTopK(l, base, k);
            c = k;
        } else {
            for (int t = 0; t < validVocab; t++) {
                cand[t] = t;
            }
            c = validVocab;
        }
        boolean nucleus = params.topP() < 1.0;
        if (!nucleus && c < validVocab) {
            Arrays.sort(cand, 0, c); // draw order: ascending id
        }
        float lmax = Float.NEGATIVE_INFINITY;
        int argmax = -1;
        for (int i = 0; i < c; i++) {
            float v = l[base + cand[i]];
            if (v > lmax || argmax < 0 && v == lmax) {
                lmax = v;
                argmax = cand[i];
            }
            if (Float.isNaN(v)) {
                throw new IllegalArgumentException("logit of id " + cand[i] + " is NaN");
            }
        }
        checkFinite(argmax, lmax);
        double temperature = params.temperature();
        double total = 0;
        for (int i = 0; i < c; i++) {
            double w = Math.exp(((double) l[base + cand[i]] - lmax) / temperature);
            weight[i] = w;
            total += w;
        }
        if (!nucleus) {
            return draw(0, c, total, +1);
        }
        // Top-p: heapify (logit desc, id asc) and pop into the tail until the mass reaches p * total.
        for (int i = c / 2 - 1; i >= 0; i--) {
            siftDownMax(l, base, i, c);
        }
        double target = params.topP() * total;
        double kept = 0;
        int end = c; // popped candidates occupy [end, c), best at c - 1
        while (end > 0) {
            end--;
            swap(0, end);
            kept += weight[end];
            siftDownMax(l, base, 0, end);
            if (kept >= target) {
                break;
            }
        }
        return draw(c - 1, end - 1, kept, -1);
    }

    /** Walks cand[from], cand[from + step], ... (exclusive {@code to}) and returns the drawn id. */
    private int draw(int from, int to, double mass, int step) {
        double u = random.nextDouble() * mass;
        double running = 0;
        int last = from;
        for (int i = from; i != to; i += step) {
            running += weight[i];
            last = i;
            if (running > u) {
                return cand[i];
            }
        }
        return cand[last];
    }

    /** True when id a with logit la ranks before id b with logit lb: larger logit, then lower id. */
    private static boolean ranksBefore(float la, int a, float lb, int b) {
        return la > lb || la == lb && a < b;
    }

    /** Fills cand[0, k) with the k best ids using a min-heap whose root is the worst kept id. */
    private void selectTopK(float[] l, int base, int k) {
        for (int t = 0; t < k; t++) {
            cand[t] = t;
        }
        for (int i = k / 2 - 1; i >= 0; i--) {
            siftDownMin(l, base, i, k);
        }
        for (int t = k; t < validVocab; t++) {
            int root = cand[0];
            if (ranksBefore(l[base + t], t, l[base + root], root)) {
                cand[0] = t;
                siftDownMin(l, base, 0, k);
            }
        }
    }

    /** Min-heap on rank: the parent ranks after (is worse than) its children. */
    private void siftDownMin(float[] l, int base, int i, int n) {
        while (true) {
            int child = 2 * i + 1;
            if (child >= n) {
                return;
            }
            int right = child + 1;
            if (right < n && ranksBefore(l[base + cand[child]], cand[child], l[base + cand[right]], cand[right])) {
                child = right; // the worse of the two children
            }
            if (ranksBefore(l[base + cand[child]], cand[child], l[base + cand[i]], cand[i])) {
                return;
            }
            int tmp = cand[i];
            cand[i] = cand[child];
            cand[child] = tmp;
            i = child;
        }
    }

    /** Max-heap on rank over cand and weight together: the parent ranks before its children. */
    private void siftDownMax(float[] l, int base, int i, int n) {
        while (true) {
            int child = 2 * i + 1;
            if (child >= n) {
                return;
            }
            int right = child + 1;
            if (right < n && ranksBefore(l[base + cand[right]], cand[right], l[base + cand[child]], cand[child])) {
                child = right;
            }
            if (!ranksBefore(l[base + cand[child]], cand[child], l[base + cand[i]], cand[i])) {
                return;
            }
            swap(i, child);
            i = child;
        }
    }

    private void swap(int i, int j) {
        int t = cand[i];
        cand[i] = cand[j];
        cand[j] = t;
        double w = weight[i];
        weight[i] = weight[j];
        weight[j] = w;
    }
}
