package dev.strata.engine.serve;

import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.sample.TokenLogprobs;

/**
 * Receives one generation's output as text (the scheduler's {@code TokenSink} receives its tokens;
 * the generator turns those into this text). A generator calls it from its own worker thread, in order:
 * {@link #started} once, {@link #text} (and, when the request asked for them, {@link #logprobs})
 * zero or more times, then exactly one of {@link #finished}
 * or {@link #failed}. Implementations must not block for long: they hold up the generator.
 */
public interface TextSink {
    /** The prompt has been run; {@code promptTokens} of it, {@code reusedTokens} of them from cached KV blocks. */
    default void started(int promptTokens, int reusedTokens) {
    }

    /**
     * The log-probabilities of one generated token, called (only when the request asked for them)
     * before the {@link #text} that carries its text, in token order; never for a stop token,
     * whose text is not returned. The tokens of a stop string are reported although their text is not.
     */
    default void logprobs(TokenLogprobs token) {
    }

    /** New text that is final (complete UTF-8 characters, not part of a possible stop string); may be empty. */
    void text(String delta);

    /**
     * The generation ended normally ({@link FinishReason#STOP}, {@link FinishReason#LENGTH}) or by
     * cancellation ({@link FinishReason#CANCELLED}); {@code completionTokens} were generated.
     */
    void finished(FinishReason reason, int promptTokens, int completionTokens);

    /** The generation failed (for example the KV cache could not hold it); nothing more follows. */
    void failed(RuntimeException error);
}
