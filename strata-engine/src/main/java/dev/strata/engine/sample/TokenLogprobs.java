package dev.strata.engine.sample;

/**
 * The log-probability of one generated token and of the most likely alternatives at its position,
 * as {@link Sampler#logprobsOfLast} computed them (see there for the distribution). Log-probabilities
 * are natural logarithms, ≤ 0, never NaN; a token of probability 0 (a masked logit) is reported as
 * {@link #FLOOR}, as the OpenAI API does, since JSON has no infinity.
 *
 * <p>Immutable after construction (the arrays are the caller's to keep unchanged); any thread.
 *
 * @param token       the generated token id
 * @param logprob     its log-probability
 * @param topIds      {@code [top]} the ids of the most likely tokens, most likely first (ties to the lower id)
 * @param topLogprobs {@code [top]} their log-probabilities, same order
 */
public record TokenLogprobs(int token, double logprob, int[] topIds, double[] topLogprobs) {
    /** The log-probability reported for a token of probability 0. */
    public static final double FLOOR = -9999.0;

    public TokenLogprobs {
        if (topIds == null || topLogprobs == null || topIds.length != topLogprobs.length) {
            throw new IllegalArgumentException("topIds and topLogprobs must be arrays of one length, got "
                    + (topIds == null ? "null" : topIds.length) + " and " + (topLogprobs == null ? "null" : topLogprobs.length));
        }
    }

    /** The number of alternatives listed. */
    public int top() {
        return topIds.length;
    }
}
