package dev.strata.engine.serve;

import dev.strata.engine.sample.SamplingParams;
import java.util.List;
import java.util.Objects;

/**
 * One generation as the server parsed it: the prompt's token ids and the request's sampling and
 * stopping parameters (temperature, top-k, top-p, seed, penalties, stop strings and stop token
 * ids, max tokens; see {@link SamplingParams}). The generator adds the model's end-of-sequence ids
 * to the stop token ids. Immutable; any thread.
 *
 * @param prompt   prompt token ids, at least one
 * @param sampling how tokens are chosen and when generation stops
 */
public record GenerationRequest(int[] prompt, SamplingParams sampling) {
    public GenerationRequest {
        if (prompt == null || prompt.length == 0) {
            throw new IllegalArgumentException("a generation needs at least one prompt token");
        }
        Objects.requireNonNull(sampling, "sampling params");
        prompt = prompt.clone();
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
