package dev.strata.engine.serve;

import dev.strata.memory.metrics.PrometheusText;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Counters and latency histograms of a serving process, written as Prometheus families
 * {@code strata_serve_*} through {@link PrometheusText}.
 * TTFT is from submission to the first generated token; TPOT is the gap between consecutive
 * generated tokens of one request; tokens/s is generated tokens over the time since the first
 * request. The scheduler's state (running and preempted sequences, preemptions, decode batches
 * and the tokens they decoded) is published by the generator's worker after every step.
 *
 * <p>Threads: every method from any thread (atomics; a render is not a consistent snapshot across
 * families, each counter is).
 */
public final class ServeMetrics {
    /** Histogram bucket upper bounds in seconds, ascending. */
    private static final double[] BUCKETS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong(); // answered 4xx/5xx before generating
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong cancelled = new AtomicLong();
    private final AtomicLong tokens = new AtomicLong();
    private final AtomicLong firstNanos = new AtomicLong(); // System.nanoTime of the first request, 0 before
    private final Histogram ttft = new Histogram();
    private final Histogram tpot = new Histogram();
    private volatile SchedulerGauges gauges = new SchedulerGauges(0, 0, 0, 0, 0);

    /** The scheduler's state as last published. */
    private record SchedulerGauges(int running, int preempted, long preemptions, long decodeBatches, long decodedTokens) {
    }

    /** A request arrived at a generation endpoint. */
    public void request() {
        requests.incrementAndGet();
        firstNanos.compareAndSet(0, System.nanoTime());
    }

    /** A request was answered with an error status. */
    public void rejected() {
        rejected.incrementAndGet();
    }

    void firstToken(long nanos) {
        ttft.record(nanos);
    }

    void nextToken(long nanos) {
        tpot.record(nanos);
    }

    void completed(int generated) {
        completed.incrementAndGet();
        tokens.addAndGet(generated);
    }

    /**
     * Publishes the scheduler's state: sequences running and preempted now, and the running totals
     * of preemptions, decode forward calls and the tokens they decoded.
     */
    public void scheduler(int running, int preempted, long preemptions, long decodeBatches, long decodedTokens) {
        gauges = new SchedulerGauges(running, preempted, preemptions, decodeBatches, decodedTokens);
    }

    void failed() {
        failed.incrementAndGet();
    }

    void cancelled() {
        cancelled.incrementAndGet();
    }

    public long requests() {
        return requests.get();
    }

    public long cancelledCount() {
        return cancelled.get();
    }

    public long tokensGenerated() {
        return tokens.get();
    }

    /** The exposition of these metrics plus {@code queueLength}; ends with a newline. */
    public String toPrometheus(int queueLength) {
        PrometheusText out = new PrometheusText();
        writeTo(out, queueLength);
        return out.toString();
    }

    /** Appends the {@code strata_serve_*} families, with {@code queueLength} as the queue's gauge, to {@code out}. */
    public void writeTo(PrometheusText out, int queueLength) {
        counter(out, "strata_serve_requests_total", "Requests received at the generation endpoints", requests.get());
        counter(out, "strata_serve_rejected_total", "Requests answered with an error status", rejected.get());
        counter(out, "strata_serve_completed_total", "Generations that ended (stop, length or cancel)", completed.get());
        counter(out, "strata_serve_failed_total", "Generations that failed", failed.get());
        counter(out, "strata_serve_cancelled_total", "Generations cancelled (client gone)", cancelled.get());
        counter(out, "strata_serve_tokens_generated_total", "Tokens generated", tokens.get());
        long start = firstNanos.get();
        double secs = start == 0 ? 0 : (System.nanoTime() - start) / 1e9;
        gauge(out, "strata_serve_tokens_per_second", "Tokens generated per second since the first request",
                secs == 0 ? 0 : tokens.get() / secs);
        gauge(out, "strata_serve_queue_length", "Requests waiting to start", queueLength);
        SchedulerGauges g = gauges;
        gauge(out, "strata_serve_running", "Sequences in the running batch", g.running());
        gauge(out, "strata_serve_preempted", "Sequences preempted and waiting to resume", g.preempted());
        counter(out, "strata_serve_preemptions_total", "Sequences preempted to free KV blocks", g.preemptions());
        counter(out, "strata_serve_decode_batches_total", "Decode forward passes (one per scheduler step when batched)",
                g.decodeBatches());
        counter(out, "strata_serve_decoded_tokens_total", "Tokens decoded by those passes (their mean batch size is the ratio)",
                g.decodedTokens());
        ttft.writeTo(out, "strata_serve_ttft_seconds", "Time from submission to the first generated token");
        tpot.writeTo(out, "strata_serve_time_per_output_token_seconds", "Time between consecutive generated tokens");
    }

    private static void counter(PrometheusText out, String name, String help, long v) {
        out.family(name, PrometheusText.Type.COUNTER, help).sample(name, v);
    }

    private static void gauge(PrometheusText out, String name, String help, double v) {
        out.family(name, PrometheusText.Type.GAUGE, help).sample(name, v);
    }

    /** A cumulative-bucket histogram of durations. */
    private static final class Histogram {
        private final AtomicLongArray counts = new AtomicLongArray(BUCKETS.length + 1); // per bucket, last is +Inf
        private final AtomicLong sumNanos = new AtomicLong();

        void record(long nanos) {
            double secs = nanos / 1e9;
            int b = 0;
            while (b < BUCKETS.length && secs > BUCKETS[b]) {
                b++;
            }
            counts.incrementAndGet(b);
            sumNanos.addAndGet(nanos);
        }

        void writeTo(PrometheusText out, String name, String help) {
            long[] perBucket = new long[BUCKETS.length + 1];
            for (int b = 0; b < perBucket.length; b++) {
                perBucket[b] = counts.get(b);
            }
            out.family(name, PrometheusText.Type.HISTOGRAM, help).histogram(name, BUCKETS, perBucket, sumNanos.get() / 1e9);
        }
    }
}
