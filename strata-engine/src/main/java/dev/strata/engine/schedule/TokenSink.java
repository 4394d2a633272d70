package dev.strata.engine.schedule;

import dev.strata.engine.sample.FinishReason;

/**
 * Receives a request's generated tokens and its end. Called on the scheduler's thread, in order:
 * {@link #started} once when its prompt has first been run (not for a request that ends before),
 * {@link #token} once per generated token, then exactly one of {@link #finished} and
 * {@link #failed}. A sink that throws fails its own request (it is then told {@link #failed}, if
 * that is not the call that threw), never another. A sink must be
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

    /**
     * The request's own work threw {@code error} (its prefill, resume or decode, the KV manager
     * working for it, its chooser or this sink): it ended without a finish reason, its KV blocks
     * are already released, and the scheduler's other requests go on.
     */
    void failed(long request, RuntimeException error);
}
