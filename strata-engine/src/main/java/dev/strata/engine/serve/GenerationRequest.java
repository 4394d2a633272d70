package dev.strata.engine.serve;

import dev.strata.engine.constrain.SchemaGrammar;
import dev.strata.engine.sample.Sampler;
import dev.strata.engine.sample.SamplingParams;
import java.util.List;
import java.util.Objects;

/**
 * One generation as the server parsed it: the prompt's token ids and the request's sampling and
 * stopping parameters (temperature, top-k, top-p, seed, penalties, stop strings and stop token
 * ids, max tokens; see {@link SamplingParams}). The generator adds the model's end-of-sequence ids
 * to the stop token ids. Immutable; any thread.
 *
 * @param prompt      prompt token ids, at least one
 * @param sampling    how tokens are chosen and when generation stops
 * @param topLogprobs {@link #NO_LOGPROBS}, or the number of most likely alternatives, in
 *                    [0, {@link Sampler#MAX_TOP_LOGPROBS}], to report with each generated token's
 *                    log-probability ({@link TextSink#logprobs})
 * @param grammar     what the output must be (JSON, a schema's value, a tool call), decoded under
 *                    that constraint; null for free text
 */
public record GenerationRequest(int[] prompt, SamplingParams sampling, int topLogprobs, SchemaGrammar grammar) {
    /** {@link #topLogprobs} of a request that wants no log-probabilities. */
    public static final int NO_LOGPROBS = -1;

    public GenerationRequest {
        if (prompt == null || prompt.length == 0) {
            throw new IllegalArgumentException("a generation needs at least one prompt token");
        }
        Objects.requireNonNull(sampling, "sampling params");
        if (topLogprobs < NO_LOGPROBS || topLogprobs > Sampler.MAX_TOP_LOGPROBS) {
            throw new IllegalArgumentException("top_logprobs must be in [0, " + Sampler.MAX_TOP_LOGPROBS + "] (or "
                    + NO_LOGPROBS + " for none), got " + topLogprobs);
        }
        prompt = prompt.clone();
    }

    /** A request of free text. */
    public GenerationRequest(int[] prompt, SamplingParams sampling, int topLogprobs) {
        this(prompt, sampling, topLogprobs, null);
    }

    /** A request of free text without log-probabilities. */
    public GenerationRequest(int[] prompt, SamplingParams sampling) {
        this(prompt, sampling, NO_LOGPROBS);
    }

    /** True when each generated token's log-probability is to be reported. */
    public boolean wantsLogprobs() {
        return topLogprobs != NO_LOGPROBS;
    }

    /** A greedy request of at most {@code maxTokens} tokens without stop strings. */
    public static GenerationRequest greedy(int[] prompt, int maxTokens) {
        return new GenerationRequest(prompt, SamplingParams.greedy(maxTokens, List.of()));
    }

    /** The most tokens to generate. */
    public int maxTokens() {
        return sampling.maxTokens();
    }

    /** The prompt's token ids (a copy). */
    @Override
    public int[] prompt() {
        return prompt.clone();
    }
}
