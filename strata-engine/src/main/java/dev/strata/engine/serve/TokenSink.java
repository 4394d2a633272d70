package dev.strata.engine.serve;

/**
 * Receives one generation's output. A generator calls it from its own worker thread, in order:
 * {@link #started} once, {@link #text} zero or more times, then exactly one of {@link #finished}
 * or {@link #failed}. Implementations must not block for long: they hold up the generator.
 */
public interface TokenSink {
    /** The prompt has been run; {@code promptTokens} of it, {@code reusedTokens} of them from cached KV blocks. */
    default void started(int promptTokens, int reusedTokens) {
    }

    /** New text that is final (complete UTF-8 characters, not part of a possible stop string); may be empty. */
    void text(String delta);

    /** The generation ended normally or by cancellation; {@code completionTokens} were generated. */
    void finished(FinishReason reason, int promptTokens, int completionTokens);

    /** The generation failed (for example the KV cache could not hold it); nothing more follows. */
    void failed(RuntimeException error);
}
