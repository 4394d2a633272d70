package dev.strata.engine.schedule;

import dev.strata.engine.sample.FinishReason;

/**
 * Receives a request's generated tokens and its end. Called on the scheduler's thread, in order:
 * {@link #started} once when its prompt has first been run (not for a request that ends before),
 * {@link #token} once per generated token, then {@link #finished} exactly once. A sink must be
 * quick (it holds up every running sequence) and must not call {@link Scheduler#step}; it may call
 * {@link Scheduler#stop} or {@link Scheduler#cancel} for its request.
 */
public interface TokenSink {
    /**
     * The request's prompt has been run for the first time.
     *
     * @param promptTokens the prompt's length
     * @param reusedTokens prompt tokens whose KV came from cached blocks instead of being computed
     */
    default void started(long request, int promptTokens, int reusedTokens) {
    }

    /**
     * @param request the request's id
     * @param token   the generated token
     * @param logits  {@code [vocab]} the logits it was chosen from; valid only during the call
     */
    void token(long request, int token, float[] logits);

    /** The request ended; its KV blocks are already released. */
    void finished(long request, FinishReason reason);
}
