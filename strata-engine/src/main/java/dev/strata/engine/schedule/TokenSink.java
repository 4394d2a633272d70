package dev.strata.engine.schedule;

/**
 * Receives a request's generated tokens and its end. Called on the scheduler's thread, in order:
 * {@link #token} once per generated token, then {@link #finished} exactly once. A sink must be
 * quick (it holds up every running sequence) and must not call {@link Scheduler#step}.
 */
public interface TokenSink {
    /**
     * @param request the request's id
     * @param token   the generated token
     * @param logits  {@code [vocab]} the logits it was chosen from; valid only during the call
     */
    void token(long request, int token, float[] logits);

    /** The request ended; its KV blocks are already released. */
    void finished(long request, FinishReason reason);
}
