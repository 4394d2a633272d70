package dev.strata.engine.serve;

import dev.strata.cache.kv.KvManagerStats;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.tokenizer.BpeTokenizer;
import dev.strata.engine.tokenizer.StreamDecoder;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@link Generator} that runs one request at a time, in FIFO order, on one worker thread over a
 * {@link ServeEngine}'s {@link ModelRunner}, with greedy decoding.
 *
 * <p>Design: requests wait in an unbounded queue; the worker prefills a request's prompt, then
 * decodes the argmax token (over the tokenizer's ids: vocabulary rows beyond them are padding) until the end-of-sequence token, {@code maxTokens}, a stop string, or a
 * cancel. Text goes through a {@link StreamDecoder} (never splits a UTF-8 character) and is held
 * back by up to the longest stop string minus one character, so text that turns out to begin a
 * stop string is never sent. The sequence is closed (its blocks released; full committed blocks
 * stay cached for prefix hits) however the request ends.
 *
 * <p>Threads: {@link #submit}, {@link #queueLength}, {@link Handle#cancel} and {@link #close} from
 * any thread; everything touching the runner, KV manager and pager runs on the worker.
 *
 * <p>Invariants: at most one sequence is open at a time; every submitted request's sink gets exactly
 * one {@code finished} or {@code failed}.
 */
public final class SerialGenerator implements Generator {
    private final ServeEngine engine;
    private final BpeTokenizer tokenizer;
    private final Set<Integer> eos; // end-of-sequence token ids: config.json's eos_token_id and the tokenizer's eos
    private final ServeMetrics metrics;
    private final LinkedBlockingQueue<Job> queue = new LinkedBlockingQueue<>();
    private final Thread worker;
    private volatile boolean closed;
    private volatile KvManagerStats kvStats; // refreshed by the worker after each request and every REFRESH_TOKENS tokens
    private static final int REFRESH_TOKENS = 32;

    public SerialGenerator(ServeEngine engine, ServeMetrics metrics) {
        this.engine = engine;
        this.tokenizer = engine.model().tokenizer();
        Set<Integer> ids = new HashSet<>(engine.model().config().eosTokenIds());
        String eosToken = engine.model().tokenizerConfig().eosToken();
        if (eosToken != null && tokenizer.id(eosToken) >= 0) {
            ids.add(tokenizer.id(eosToken));
        }
        this.eos = Set.copyOf(ids);
        this.metrics = metrics;
        this.kvStats = engine.kv().stats(); // before the worker starts: this thread still owns the manager
        this.worker = Thread.ofPlatform().name("strata-generator").daemon(true).start(this::loop);
    }

    /** The end-of-sequence token ids (generation stops at any of them). */
    public Set<Integer> eosTokens() {
        return eos;
    }

    @Override
    public Handle submit(GenerationRequest request, TokenSink sink) {
        if (request.temperature() > 0) {
            throw new IllegalArgumentException("temperature > 0 is not supported yet (got temperature " + request.temperature()
                    + "); only greedy decoding (temperature 0) is");
        }
        int total = request.prompt().length + request.maxTokens();
        if (total > engine.capacityTokens()) {
            throw new IllegalArgumentException("prompt tokens " + request.prompt().length + " + max_tokens " + request.maxTokens()
                    + " = " + total + " exceed the KV cache's " + engine.capacityTokens() + " tokens per sequence");
        }
        if (closed) {
            throw new IllegalStateException("the generator is closed");
        }
        Job job = new Job(request, sink, System.nanoTime());
        queue.add(job);
        return job;
    }

    @Override
    public int queueLength() {
        return queue.size();
    }

    @Override
    public String engineMetrics() {
        String kv = kvStats.toPrometheus();
        return engine.pager() == null ? kv : kv + engine.pager().stats().toPrometheus(); // pager stats: any thread
    }

    @Override
    public void close() {
        closed = true;
        worker.interrupt();
        try {
            worker.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Job j; (j = queue.poll()) != null; ) {
            j.sink.finished(FinishReason.CANCELLED, j.request.prompt().length, 0);
        }
    }

    private void loop() {
        while (!closed) {
            Job job;
            try {
                job = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            try {
                run(job);
            } catch (RuntimeException e) {
                metrics.failed();
                kvStats = engine.kv().stats();
                job.sink.failed(e);
            }
        }
    }

    private void run(Job job) {
        GenerationRequest r = job.request;
        int promptTokens = r.prompt().length;
        if (job.cancelled.get() || closed) {
            metrics.cancelled();
            metrics.completed(0);
            job.sink.finished(FinishReason.CANCELLED, promptTokens, 0);
            return;
        }
        StopMatcher stops = new StopMatcher(r.stop());
        StreamDecoder decoder = tokenizer.streamDecoder(true);
        int generated = 0;
        FinishReason reason;
        // offloads and publications of earlier requests land first, so that evicting their blocks never has to wait
        engine.kv().awaitIdle(30, TimeUnit.SECONDS);
        try (ModelRunner.Sequence seq = engine.runner().newSequence()) {
            float[] logits = seq.prefill(r.prompt(), false)[0];
            job.sink.started(promptTokens, seq.reusedTokens());
            long last = System.nanoTime();
            while (true) {
                int token = argmax(logits);
                generated++;
                long now = System.nanoTime();
                if (generated == 1) {
                    metrics.firstToken(now - job.submittedNanos);
                } else {
                    metrics.nextToken(now - last);
                }
                last = now;
                if (eos.contains(token)) {
                    reason = FinishReason.STOP;
                    break;
                }
                String ready = stops.push(decoder.push(token));
                if (!ready.isEmpty()) {
                    job.sink.text(ready);
                }
                if (stops.matched()) {
                    reason = FinishReason.STOP;
                    break;
                }
                if (generated >= r.maxTokens()) {
                    reason = FinishReason.LENGTH;
                    break;
                }
                if (job.cancelled.get() || closed) {
                    reason = FinishReason.CANCELLED;
                    break;
                }
                logits = seq.decode(token);
                if (generated % REFRESH_TOKENS == 0) {
                    kvStats = engine.kv().stats();
                }
            }
        }
        if (reason != FinishReason.CANCELLED) {
            String rest = stops.matched() ? "" : stops.push(decoder.finish());
            rest = stops.matched() ? "" : rest + stops.flush();
            if (!rest.isEmpty()) {
                job.sink.text(rest);
            }
        } else {
            metrics.cancelled();
        }
        kvStats = engine.kv().stats();
        metrics.completed(generated);
        job.sink.finished(reason, promptTokens, generated);
    }

    /** The largest logit's index among the tokenizer's ids (rows beyond are padding and never produced); ties to the lower. */
    private int argmax(float[] x) {
        int n = Math.min(x.length, tokenizer.size());
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (x[i] > x[best]) {
                best = i;
            }
        }
        return best;
    }

    /** A queued or running request. */
    private static final class Job implements Handle {
        final GenerationRequest request;
        final TokenSink sink;
        final long submittedNanos;
        final AtomicBoolean cancelled = new AtomicBoolean();

        Job(GenerationRequest request, TokenSink sink, long submittedNanos) {
            this.request = request;
            this.sink = sink;
            this.submittedNanos = submittedNanos;
        }

        @Override
        public void cancel() {
            cancelled.set(true);
        }
    }

    /**
     * Finds stop strings in the decoded text and holds back the tail that could still become one.
     * One generation's, on the worker thread.
     */
    static final class StopMatcher {
        private final List<String> stops;
        private final int holdBack; // longest stop string's length − 1, in chars
        private final StringBuilder text = new StringBuilder(); // all text so far (cut at a match)
        private int sent; // chars of text already handed out
        private boolean matched;

        StopMatcher(List<String> stops) {
            this.stops = stops.stream().filter(s -> !s.isEmpty()).toList();
            this.holdBack = this.stops.stream().mapToInt(String::length).max().orElse(1) - 1;
        }

        /** Adds {@code delta}; returns the text that is now safe to send. */
        String push(String delta) {
            if (matched) {
                return "";
            }
            int from = Math.max(0, text.length() - holdBack);
            text.append(delta);
            int cut = -1;
            int cutEnd = Integer.MAX_VALUE; // the stop that completes first wins, as if the text came char by char
            for (String s : stops) {
                int at = text.indexOf(s, from);
                if (at >= 0 && (at + s.length() < cutEnd || at + s.length() == cutEnd && at < cut)) {
                    cut = at;
                    cutEnd = at + s.length();
                }
            }
            if (cut >= 0) {
                matched = true;
                text.setLength(cut);
                return take(text.length());
            }
            return take(Math.max(sent, text.length() - holdBack));
        }

        /** The held-back tail, at the end of the generation. */
        String flush() {
            return matched ? "" : take(text.length());
        }

        boolean matched() {
            return matched;
        }

        private String take(int upTo) {
            if (upTo <= sent) {
                return "";
            }
            // never split a surrogate pair
            if (upTo < text.length() && Character.isHighSurrogate(text.charAt(upTo - 1))) {
                upTo--;
            }
            String s = text.substring(sent, upTo);
            sent = upTo;
            return s;
        }
    }
}
