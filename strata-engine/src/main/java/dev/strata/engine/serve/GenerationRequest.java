package dev.strata.engine.serve;

import java.util.List;

/**
 * One generation as the server parsed it: the prompt's token ids and the decoding fields of the
 * OpenAI request. Immutable; any thread.
 *
 * @param prompt      prompt token ids, at least one
 * @param maxTokens   the most tokens to generate, at least 1
 * @param temperature sampling temperature; 0 means greedy
 * @param topP        nucleus mass in (0, 1]
 * @param seed        sampling seed, or null when none was given
 * @param stop        stop strings: generation ends when the decoded text contains one (it is not returned)
 */
public record GenerationRequest(int[] prompt, int maxTokens, double temperature, double topP, Long seed, List<String> stop) {
    public GenerationRequest {
        if (prompt == null || prompt.length == 0) {
            throw new IllegalArgumentException("a generation needs at least one prompt token");
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens must be at least 1, got " + maxTokens);
        }
        prompt = prompt.clone();
        stop = stop == null ? List.of() : List.copyOf(stop);
    }

    /** A greedy request without stop strings. */
    public static GenerationRequest greedy(int[] prompt, int maxTokens) {
        return new GenerationRequest(prompt, maxTokens, 0, 1, null, List.of());
    }
}
