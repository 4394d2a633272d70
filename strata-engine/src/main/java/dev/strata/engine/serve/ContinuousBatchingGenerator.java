package dev.strata.engine.serve;

import dev.strata.cache.kv.KvManagerStats;
import dev.strata.cache.routing.RoutingTraceHeader;
import dev.strata.cache.routing.RoutingTraceWriter;
import dev.strata.cache.split.LiveSplit;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelFileChangedException;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.constrain.ConstrainedDecoder;
import dev.strata.engine.constrain.TokenVocabulary;
import dev.strata.engine.sample.Sampler;
import dev.strata.engine.sample.SamplingParams;
import dev.strata.engine.sample.StopChecker;
import dev.strata.engine.schedule.PreemptionMode;
import dev.strata.engine.schedule.Scheduler;
import dev.strata.engine.schedule.TokenChooser;
import dev.strata.engine.schedule.TokenSink;
import dev.strata.engine.tokenizer.BpeTokenizer;
import dev.strata.memory.log.Log;
import dev.strata.memory.metrics.PrometheusText;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A {@link Generator} over the continuous-batching {@link Scheduler}: requests join and leave the
 * running batch between steps, and each step decodes every running sequence in one batched
 * forward pass.
 *
 * <p>Design:
 * <ul>
 *   <li><b>One worker thread</b> owns the scheduler, and through it the runner, the KV manager and
 *       the pager. {@link #submit} validates a request and queues it; the worker hands queued
 *       requests to the scheduler before every step, steps while anything is waiting or running,
 *       and sleeps on the queue otherwise.</li>
 *   <li><b>Per request</b>: a {@link Sampler} with the request's {@link SamplingParams} is its
 *       {@link TokenChooser} (seeded, penalties counted over its own tokens; ids beyond the
 *       tokenizer's vocabulary are padding and never produced); a {@link StopChecker} turns its
 *       tokens into text, holds back what may begin a stop string, and ends it at a stop string
 *       or a stop token id (the request's and the model's end-of-sequence ids) through
 *       {@link Scheduler#stop}; the scheduler ends it at {@code max_tokens}. When the request
 *       asked for log-probabilities, its sampler computes them from the same logits row before
 *       the token's text is handed on ({@link TextSink#logprobs}).</li>
 *   <li><b>Cancellation</b> ({@link Handle#cancel}, any thread): a request not yet handed over
 *       never starts; a handed-over one is cancelled in the scheduler and retired, with its KV
 *       blocks released, at the start of the next step, while the others go on.</li>
 *   <li><b>Failure</b>: a sink that throws fails its own request only (it is cancelled in the
 *       scheduler and its sink told {@code failed}). A failure of one request's work in a step
 *       (its prefill, its decode, the KV manager or a tier working for it) fails that request only:
 *       the scheduler closes its sequence and tells its {@link TokenSink#failed}, and its client
 *       gets the error, while the other requests of the batch go on with the tokens they would have
 *       had without it. Only when a step itself throws (a failure no request can be blamed for,
 *       such as the routing trace's writes or a changed model file, below) does every request in
 *       the scheduler fail with that error; the scheduler is then closed (releasing every block)
 *       and a new one takes its place; queued requests are unaffected.</li>
 *   <li><b>Model files</b>: before every step the worker checks the weights ({@code WeightFiles.check}:
 *       nothing for copied weights, one {@code stat} per file for mapped ones), and {@link #submit}
 *       checks them too. A mapped file truncated or rewritten in place fails the step as above with a
 *       {@link ModelFileChangedException} naming the file, before any kernel reads the mapping (which
 *       would fault the process), and every later request is refused with it; the worker lives on.</li>
 *   <li><b>Metrics</b>: TTFT (submission to first token) and time per output token per request;
 *       after every step the scheduler's running, preempted and decode counters go to
 *       {@link ServeMetrics}; the KV manager's stats are snapshotted on the worker when a request
 *       ends, before its sink hears of it (so a client that reads {@code /metrics} once its reply
 *       has ended finds that request's KV counters there), after every step in which a request
 *       ended, every {@value #REFRESH_STEPS} steps, when the scheduler
 *       goes idle, and once more when the KV transfers the last requests started (write-through
 *       offloads, publishes into a shared pool) have ended: while they are in flight the idle
 *       worker applies their completions every {@value #SETTLE_POLL_MILLIS} ms, so an idle
 *       server's metrics are never stale.</li>
 *   <li><b>Expert/KV split</b>: with an engine that splits its DEVICE budget live
 *       ({@link ServeEngine#split}), the worker tells the split every request's prompt as it hands
 *       it over, and calls its barrier after every step (no forward pass runs between steps, so
 *       the split may resize both pools there) and once more when the scheduler goes idle (nothing
 *       holds a KV block then, so a refused KV shrink goes through).</li>
 * </ul>
 *
 * <p>Threads: {@link #submit}, {@link #queueLength}, {@link #writeEngineMetrics}, {@link Handle#cancel}
 * and {@link #close} from any thread; everything touching the scheduler's engine runs on the
 * worker, and sinks are called there.
 *
 * <p>Invariants: every submitted request's sink gets exactly one {@code finished} or
 * {@code failed}; a finished request holds no KV block.
 */
public final class ContinuousBatchingGenerator implements Generator {
    private static final int REFRESH_STEPS = 16;
    private static final long SETTLE_POLL_MILLIS = 5; // idle worker's poll period while KV transfers are in flight

    private final ServeEngine engine;
    private final BpeTokenizer tokenizer;
    private final Set<Integer> eos; // end-of-sequence ids: config.json's eos_token_id and the tokenizer's eos
    private final int validVocab; // ids a sampler may return: the tokenizer's, within the model's rows
    private final ServeMetrics metrics;
    private final PreemptionMode preemption;
    private final RoutingTraceWriter routingTrace; // null: routing not recorded; owned, closed after the worker stops
    private final LinkedBlockingQueue<Job> submitted = new LinkedBlockingQueue<>();
    private final Job wake = new Job(new int[0], null, GenerationRequest.NO_LOGPROBS, null, 0); // queued by close(): never started
    private final ConcurrentHashMap<Job, Boolean> inScheduler = new ConcurrentHashMap<>(); // handed over, not finished
    private final AtomicInteger queued = new AtomicInteger(); // submitted, neither started nor finished
    private final Thread worker;
    private volatile Scheduler scheduler; // replaced only by the worker, after a failed step
    private volatile boolean closed;
    private volatile KvManagerStats kvStats;
    private boolean statsStale; // a request ended since the last snapshot; worker only
    private volatile TokenVocabulary vocabulary; // built on the first constrained request

    /** A generator with swap preemption. */
    public ContinuousBatchingGenerator(ServeEngine engine, ServeMetrics metrics) {
        this(engine, metrics, PreemptionMode.SWAP);
    }

    /**
     * Starts the worker over {@code engine}, which this generator drives from now on (close the
     * generator before the engine).
     */
    public ContinuousBatchingGenerator(ServeEngine engine, ServeMetrics metrics, PreemptionMode preemption) {
        this(engine, metrics, preemption, null);
    }

    /**
     * As {@link #ContinuousBatchingGenerator(ServeEngine, ServeMetrics, PreemptionMode)}, also
     * recording every routing decision of the served requests into {@code routingTrace} (created or
     * replaced; the routing-trace format of {@code strata trace stats} and {@code strata plan-split}),
     * when it is not null.
     *
     * @throws IllegalArgumentException when a trace is asked of a dense model (it has no routing)
     */
    public ContinuousBatchingGenerator(ServeEngine engine, ServeMetrics metrics, PreemptionMode preemption, Path routingTrace) {
        this.engine = Objects.requireNonNull(engine, "engine");
        this.routingTrace = routingTrace == null ? null : openRoutingTrace(engine, routingTrace);
        this.metrics = Objects.requireNonNull(metrics, "metrics");
        this.preemption = Objects.requireNonNull(preemption, "preemption mode");
        this.tokenizer = engine.model().tokenizer();
        Set<Integer> ids = new LinkedHashSet<>(engine.model().config().eosTokenIds());
        String eosToken = engine.model().tokenizerConfig().eosToken();
        if (eosToken != null && tokenizer.id(eosToken) >= 0) {
            ids.add(tokenizer.id(eosToken));
        }
        this.eos = Set.copyOf(ids);
        this.validVocab = Math.min(tokenizer.size(), engine.model().config().vocabSize());
        this.scheduler = newScheduler();
        this.kvStats = engine.kv().stats(); // before the worker starts: this thread still owns the manager
        this.worker = Thread.ofPlatform().name("strata-generator").daemon(true).start(this::loop);
    }

    private Scheduler newScheduler() {
        Scheduler.Builder b = Scheduler.builder(engine.runner(), engine.kv()).preemption(preemption);
        if (routingTrace != null) {
            b.routingTrace(routingTrace);
        }
        return b.build();
    }

    private static RoutingTraceWriter openRoutingTrace(ServeEngine engine, Path file) {
        ModelConfig c = engine.model().config();
        if (!c.moe()) {
            throw new IllegalArgumentException("routing trace " + file + ": the model is dense (" + c.numExperts()
                    + " experts), so there is no routing to record");
        }
        int moeLayers = ModelRunner.moeLayerCount(c);
        Path name = engine.model().dir().toAbsolutePath().normalize().getFileName();
        return RoutingTraceWriter.create(file, new RoutingTraceHeader(moeLayers, c.numExperts(), c.numExpertsPerTok(),
                name == null ? "model" : name.toString()));
    }

    /** The end-of-sequence token ids (generation stops at any of them). */
    public Set<Integer> eosTokens() {
        return eos;
    }

    /** The most sequences that have run together in one step (of the current scheduler). */
    public int peakRunning() {
        return scheduler.peakRunning();
    }

    @Override
    public Handle submit(GenerationRequest request, TextSink sink) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(sink, "sink");
        int[] prompt = request.prompt();
        int vocab = engine.model().config().vocabSize();
        for (int i = 0; i < prompt.length; i++) {
            if (prompt[i] < 0 || prompt[i] >= vocab) {
                throw new IllegalArgumentException("prompt token " + i + " is " + prompt[i] + ", outside the vocabulary [0, "
                        + vocab + ")");
            }
        }
        int promptTokens = prompt.length;
        int total = promptTokens + request.maxTokens();
        if (total > engine.capacityTokens()) {
            throw new IllegalArgumentException("prompt tokens " + promptTokens + " + max_tokens " + request.maxTokens()
                    + " = " + total + " exceed the KV cache's " + engine.capacityTokens() + " tokens per sequence");
        }
        if (closed) {
            throw new IllegalStateException("the generator is closed");
        }
        engine.model().files().check(); // a changed mapped file: refused here, naming it
        SamplingParams params = withEos(request.sampling());
        Job job = new Job(prompt, params, request.topLogprobs(), sink, System.nanoTime());
        if (request.grammar() != null) { // on the submitting thread: the vocabulary is built once, off the worker
            job.decoder = new ConstrainedDecoder(request.grammar(), vocabulary(),
                    params.stopTokenIds().stream().mapToInt(Integer::intValue).toArray(), params.maxTokens());
        }
        queued.incrementAndGet();
        submitted.add(job);
        return job;
    }

    /** The tokenizer's vocabulary as constrained decoding walks it, built on first use. Any thread. */
    private TokenVocabulary vocabulary() {
        TokenVocabulary v = vocabulary;
        if (v == null) {
            synchronized (this) {
                v = vocabulary;
                if (v == null) {
                    v = TokenVocabulary.of(tokenizer, validVocab);
                    vocabulary = v;
                }
            }
        }
        return v;
    }

    private SamplingParams withEos(SamplingParams p) {
        Set<Integer> stops = new LinkedHashSet<>(p.stopTokenIds());
        stops.addAll(eos);
        return new SamplingParams(p.temperature(), p.topP(), p.topK(), p.maxTokens(), p.seed(), p.stop(),
                List.copyOf(stops), p.presencePenalty(), p.frequencyPenalty());
    }

    @Override
    public int queueLength() {
        return queued.get();
    }

    @Override
    public void writeEngineMetrics(PrometheusText out) {
        kvStats.writeTo(out);
        if (engine.pager() != null) {
            engine.pager().stats().writeTo(out); // pager stats: any thread
        }
        LiveSplit split = engine.split();
        if (split != null) {
            split.writeTo(out); // the split's snapshot: any thread
        }
        engine.writePeerMetrics(out); // peer stats: any thread
        engine.writeMemoryMetrics(out); // tier, link and store stats: any thread
    }

    @Override
    public void close() {
        closed = true;
        // wakes a waiting worker without an interrupt: an interrupt would close the routing trace's
        // file channel under a write in progress (FileChannel is interruptible)
        submitted.add(wake);
        try {
            worker.join(30_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        long steps = 0;
        boolean busy = false;
        boolean settling = false; // idle, but KV transfers of the last requests still in flight
        try {
            while (!closed) {
                handOver();
                Scheduler s = scheduler;
                if (s.idle()) {
                    if (busy) {
                        busy = false;
                        settling = true;
                        splitBarrier(s, true);
                        refreshKvStats();
                        publishGauges(s);
                    }
                    if (settling) { // offloads and publishes of the last requests end after them: apply them, then refresh
                        try {
                            engine.kv().poll();
                            if (engine.kv().transfersIdle()) {
                                settling = false;
                                refreshKvStats();
                            }
                        } catch (RuntimeException e) { // no request runs to fail: the worker lives on, the next step meets it
                            settling = false;
                            Log.error("serve", "applying KV transfers while idle failed", e);
                        }
                    }
                    Job next;
                    try {
                        next = settling ? submitted.poll(SETTLE_POLL_MILLIS, TimeUnit.MILLISECONDS) : submitted.poll(1, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        break;
                    }
                    if (next != null && next != wake) {
                        start(next);
                    }
                    continue;
                }
                busy = true;
                try {
                    engine.model().files().check(); // before any kernel reads a mapping that may have been truncated
                    s.step();
                } catch (RuntimeException e) {
                    failAll(s, e);
                }
                splitBarrier(scheduler, false);
                publishGauges(scheduler);
                if (++steps % REFRESH_STEPS == 0 || statsStale) {
                    statsStale = false;
                    refreshKvStats();
                }
            }
        } finally {
            shutDown();
        }
    }

    /**
     * Between steps (nothing computes): the live split's barrier, if the engine has a split. A split
     * that throws broke its contract: the requests in flight fail as after a failed step. Worker only.
     */
    private void splitBarrier(Scheduler s, boolean idle) {
        LiveSplit split = engine.split();
        if (split == null) {
            return;
        }
        try {
            if (idle) {
                split.atIdleBarrier();
            } else {
                split.atBarrier(s.heldBlocks());
            }
        } catch (RuntimeException e) {
            failAll(s, e);
        }
    }

    /** Hands every queued request to the scheduler. Worker only. */
    private void handOver() {
        for (Job j; (j = submitted.poll()) != null; ) {
            if (j != wake) {
                start(j);
            }
        }
    }

    private void start(Job job) {
        if (job.cancelled) {
            job.finishUnstarted(FinishReason.CANCELLED);
            return;
        }
        Scheduler s = scheduler;
        job.scheduler = s;
        try {
            job.sampler = new Sampler(job.params, validVocab);
            job.checker = new StopChecker(job.params, tokenizer.streamDecoder(true));
            inScheduler.put(job, Boolean.TRUE);
            job.id = s.submit(-1, job.prompt, job.params.maxTokens(), job, job);
            if (engine.split() != null) {
                engine.split().requestStarted(job.prompt); // the prompt's blocks are KV references
            }
        } catch (RuntimeException e) { // checked at submit already; never let one request stop the worker
            job.fail(e);
            return;
        }
        if (job.cancelled) {
            s.cancel(job.id); // cancelled while being handed over
        }
    }

    private void publishGauges(Scheduler s) {
        metrics.scheduler(s.runningCount(), s.preemptedCount(), s.preemptions(), s.decodeBatches(), s.decodedTokens());
    }

    /**
     * A step threw a failure of no single request: fails every request the scheduler holds,
     * releases their blocks, starts a fresh scheduler.
     */
    private void failAll(Scheduler s, RuntimeException error) {
        List<Job> failed = new ArrayList<>(inScheduler.keySet());
        for (Job j : failed) {
            j.fail(error);
        }
        try {
            s.close(); // cancels what it holds; the failed jobs' sinks ignore the cancellation
        } catch (RuntimeException suppressed) {
            error.addSuppressed(suppressed);
        }
        scheduler = newScheduler();
        refreshKvStats();
    }

    /** Snapshots the KV manager's stats for the metrics. Worker only (it owns the manager). */
    private void refreshKvStats() {
        kvStats = engine.kv().stats();
    }

    private void shutDown() {
        try {
            scheduler.close(); // every live request ends CANCELLED and releases its blocks
        } catch (RuntimeException e) {
            for (Job j : new ArrayList<>(inScheduler.keySet())) {
                j.fail(e);
            }
        }
        for (Job j; (j = submitted.poll()) != null; ) {
            if (j != wake) {
                j.finishUnstarted(FinishReason.CANCELLED);
            }
        }
        refreshKvStats();
        if (routingTrace != null) {
            routingTrace.close(); // after the scheduler: every step it recorded is in the file
        }
    }

    /**
     * One request: its handle, its chooser and its scheduler sink. Worker only, except
     * {@link #cancel} and the fields it reads.
     */
    private final class Job implements Handle, TokenChooser, TokenSink {
        final int[] prompt;
        final SamplingParams params;
        final int topLogprobs; // GenerationRequest.NO_LOGPROBS, or alternatives per token
        final TextSink sink;
        final long submittedNanos;
        volatile boolean cancelled;
        volatile Scheduler scheduler; // set when handed over
        volatile long id = -1; // the scheduler's id, once handed over
        Sampler sampler;
        StopChecker checker;
        ConstrainedDecoder decoder; // null: free text
        float[] row;                // the row the last token was drawn from (the masked one under a grammar)
        boolean started; // left the queue (started or finished)
        boolean done; // the sink got finished or failed
        long lastTokenNanos;

        Job(int[] prompt, SamplingParams params, int topLogprobs, TextSink sink, long submittedNanos) {
            this.prompt = prompt;
            this.params = params;
            this.topLogprobs = topLogprobs;
            this.sink = sink;
            this.submittedNanos = submittedNanos;
        }

        @Override
        public void cancel() {
            cancelled = true;
            Scheduler s = scheduler;
            long i = id;
            if (s != null && i >= 0) {
                s.cancel(i);
            }
        }

        @Override
        public int choose(long request, float[] logits) {
            row = logits;
            if (decoder == null) {
                return sampler.sample(logits);
            }
            if (params.isGreedy() && !params.hasPenalties() && topLogprobs == GenerationRequest.NO_LOGPROBS) {
                int best = 0; // the model's own choice, kept when the grammar allows it (no mask needed)
                for (int i = 1; i < validVocab; i++) {
                    if (logits[i] > logits[best]) {
                        best = i;
                    }
                }
                if (decoder.allows(best)) {
                    return best;
                }
            }
            row = decoder.mask(logits);
            return sampler.sample(row);
        }

        @Override
        public void started(long request, int promptTokens, int reusedTokens) {
            leaveQueue();
            try {
                sink.started(promptTokens, reusedTokens);
            } catch (RuntimeException e) {
                sinkFailed(request, e);
            }
        }

        /** The sink threw: this request alone fails; the scheduler retires it at the next step. */
        private void sinkFailed(long request, RuntimeException e) {
            fail(e);
            scheduler.cancel(request);
        }

        @Override
        public void token(long request, int token, float[] logits) {
            if (done) {
                return;
            }
            long now = System.nanoTime();
            if (checker.generated() == 0) {
                metrics.firstToken(now - submittedNanos);
            } else {
                metrics.nextToken(now - lastTokenNanos);
            }
            lastTokenNanos = now;
            if (decoder != null) {
                try {
                    decoder.accept(token);
                } catch (RuntimeException e) {
                    sinkFailed(request, e);
                    return;
                }
            }
            if (topLogprobs != GenerationRequest.NO_LOGPROBS && !checker.isStopToken(token)) {
                try {
                    sink.logprobs(sampler.logprobsOfLast(row != null ? row : logits, 0, topLogprobs));
                } catch (RuntimeException e) {
                    sinkFailed(request, e);
                    return;
                }
            }
            String text = checker.push(token);
            if (!text.isEmpty()) {
                try {
                    sink.text(text);
                } catch (RuntimeException e) {
                    sinkFailed(request, e);
                    return;
                }
            }
            if (checker.finishReason() == FinishReason.STOP) {
                scheduler.stop(request); // ends right after this token
            }
        }

        @Override
        public void finished(long request, FinishReason reason) {
            inScheduler.remove(this);
            statsStale = true;
            if (done) {
                return;
            }
            refreshKvStats(); // before the sink: whoever reads the metrics once the reply has ended finds this request in them
            leaveQueue();
            done = true;
            int generated = checker.generated();
            metrics.completed(generated);
            try {
                switch (reason) {
                    case STOP, LENGTH -> sink.finished(reason, prompt.length, generated);
                    case CANCELLED -> {
                        metrics.cancelled();
                        sink.finished(reason, prompt.length, generated);
                    }
                    case TOO_LONG -> {
                        metrics.failed();
                        sink.failed(new IllegalStateException("prompt tokens " + prompt.length + " + max_tokens "
                                + params.maxTokens() + " can never fit the KV cache's " + engine.capacityTokens() + " tokens"));
                    }
                }
            } catch (RuntimeException e) {
                // the request is over and its blocks released; a sink failing now has nobody left to tell
            }
        }

        /** Its own work in the scheduler threw: it fails alone; its blocks are already released. */
        @Override
        public void failed(long request, RuntimeException error) {
            statsStale = true;
            if (!done) {
                refreshKvStats(); // before the sink, as for a request that finished
            }
            fail(error);
        }

        /** Ends a request that never reached the scheduler. */
        void finishUnstarted(FinishReason reason) {
            if (done) {
                return;
            }
            leaveQueue();
            done = true;
            metrics.completed(0);
            if (reason == FinishReason.CANCELLED) {
                metrics.cancelled();
            }
            try {
                sink.finished(reason, prompt.length, 0);
            } catch (RuntimeException e) {
                // never started: nothing to release, nobody left to tell
            }
        }

        void fail(RuntimeException error) {
            inScheduler.remove(this);
            if (done) {
                return;
            }
            leaveQueue();
            done = true;
            metrics.failed();
            try {
                sink.failed(error);
            } catch (RuntimeException e) {
                error.addSuppressed(e); // nobody left to tell
            }
        }

        private void leaveQueue() {
            if (!started) {
                started = true;
                queued.decrementAndGet();
            }
        }
    }
}
