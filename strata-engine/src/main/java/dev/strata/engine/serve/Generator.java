package dev.strata.engine.serve;

import dev.strata.memory.metrics.PrometheusText;

/**
 * The seam between the HTTP server and whatever runs the model: takes generation requests and
 * streams their output to a {@link TextSink}. {@link ContinuousBatchingGenerator} runs them on the
 * continuous-batching scheduler.
 *
 * <p>Threads: {@link #submit} and {@link Handle#cancel} may be called from any thread.
 */
public interface Generator extends AutoCloseable {

    /** A submitted generation. */
    interface Handle {
        /**
         * Asks the generation to stop: a queued one never starts, a running one stops after its
         * current step and releases its KV blocks. The sink then gets
         * {@code finished(CANCELLED, ...)} unless it had already finished. Idempotent; any thread.
         */
        void cancel();
    }

    /**
     * Queues {@code request}; its output goes to {@code sink}.
     *
     * @throws IllegalArgumentException when the request asks for something this generator cannot do
     *         (the message names the field and the value)
     * @throws dev.strata.engine.model.ModelFileChangedException when the model's weights may no longer
     *         be read (a mapped file changed; the message names it)
     */
    Handle submit(GenerationRequest request, TextSink sink);

    /** Requests waiting to start. */
    int queueLength();

    /**
     * Appends the engine's memory metrics to {@code out} (the KV manager's, the expert pager's when
     * there is one, and the peer families of {@link ServeEngine#writePeerMetrics}), as last
     * refreshed on the thread that drives the engine: the KV manager is single-threaded, so other
     * threads never call it directly. Any thread; {@code out} is the caller's.
     */
    void writeEngineMetrics(PrometheusText out);

    /** Stops the worker; queued requests are cancelled. */
    @Override
    void close();
}
