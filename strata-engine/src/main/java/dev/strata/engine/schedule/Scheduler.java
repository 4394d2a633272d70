package dev.strata.engine.schedule;

import dev.strata.cache.kv.AllocationStatus;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.routing.RoutingPhase;
import dev.strata.cache.routing.RoutingTraceHeader;
import dev.strata.cache.routing.RoutingTraceWriter;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.forward.RoutingObserver;
import dev.strata.engine.model.ModelConfig;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;

/**
 * Continuous batching over one {@link ModelRunner}: requests wait in a queue, are admitted while
 * the KV cache has room, and every {@link #step} gives each running sequence one forward pass.
 *
 * <p>Design:
 * <ul>
 *   <li><b>A step</b> first retires cancelled requests, then admits: requests preempted earlier
 *       first (oldest admission first), then new ones in arrival order, stopping at the first that
 *       does not fit (no overtaking, so no request starves). An admitted request runs its prefill
 *       at once (the whole prompt as one chunk; the runner has no chunked prefill) and emits its
 *       first token. Then every sequence already running decodes one token, in admission order.
 *       Each sequence is run by its own runner calls, so its tokens and logits are bit-identical to
 *       running it alone (the runner's per-token determinism); matmuls are not batched across
 *       sequences.</li>
 *   <li><b>Admission</b> of a request needing {@code b} blocks (its tokens plus the next one):
 *       {@code held + b + floor ≤ slots}, where {@code held} counts the blocks the running
 *       sequences hold (a shared prefix block is counted once per holder, so this errs on the safe
 *       side), {@code slots} is the manager's slot count (every block no running sequence holds is
 *       free or evictable) and {@code floor} is the optional admission floor (e.g. MV-WSA's
 *       {@code SplitProblem.floorBlocks}), read every step. When nothing runs, the floor is
 *       ignored so that a request that fits the cache always makes progress. A prefill or resume that
 *       finds no slots yet (a write-back manager evicts only after the offload lands) leaves the
 *       request first in line for the next step. A request whose
 *       prompt plus maximum new tokens exceeds the slots ends at once with
 *       {@link FinishReason#TOO_LONG}.</li>
 *   <li><b>Preemption</b>: when a running sequence cannot get the block for its next token
 *       ({@link AllocationStatus#NO_SPACE}), the most recently admitted running sequence (possibly
 *       itself) is preempted, by swap or by recompute ({@link PreemptionMode}), until the block is
 *       had. {@link AllocationStatus#WAIT} (offloads in flight) skips the sequence for this step.
 *       A preempted request is re-admitted like any other, ahead of new ones; a recomputed one is
 *       re-prefilled from its prompt and generated tokens, whose last logits are the ones its next
 *       decode would have given, so its next token is chosen from them.</li>
 *   <li><b>Routing</b>: with a {@link RoutingTraceWriter}, every forward call (prefill, decode or
 *       resume) becomes one trace step of its tokens' routed experts (prefill phase for prefills
 *       and resumes, decode for decodes); a request start precedes a request's first prefill, and
 *       a burst start begins every scheduler step that runs anything.</li>
 * </ul>
 *
 * <p>Threads: {@link #submit} and {@link #cancel} from any thread; {@link #step},
 * {@link #runUntilIdle} and {@link #close} only on one scheduler thread, which must also be the
 * runner's and the KV manager's driving thread; sinks and the chooser are called on it.
 *
 * <p>Invariants after every step: each live request is in exactly one of waiting, running or
 * preempted; running sequences hold KV, preempted and waiting ones hold none (a swapped sequence's
 * blocks are offloaded or dropped); a finished or cancelled request holds nothing and its sink has
 * been told {@code finished} exactly once.
 */
public final class Scheduler implements AutoCloseable {
    private final ModelRunner runner;
    private final KvBlockManager kv;
    private final TokenChooser chooser;
    private final PreemptionMode mode;
    private final IntSupplier floorBlocks;
    private final int[] stopTokens; // sorted
    private final RoutingTraceWriter trace; // null: routing not recorded
    private final int blockTokens;

    private final ConcurrentLinkedQueue<Request> inbox = new ConcurrentLinkedQueue<>();
    private final ConcurrentHashMap<Long, Request> live = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong(1);

    private final ArrayDeque<Request> waiting = new ArrayDeque<>(); // arrival order, never run
    private final List<Request> preempted = new ArrayList<>(); // admission order
    private final List<Request> running = new ArrayList<>(); // admission order
    private long admissions; // admission counter: a request's order among admitted ones
    private long steps;
    private long preemptions;
    private long resumes;
    private int peakRunning;
    private boolean burstOpen; // the current step has written its burst start

    private int[] traceIds = new int[256]; // ids of the current forward call, layer-major
    private int traceCount;

    private Scheduler(Builder b) {
        this.runner = b.runner;
        this.kv = b.kv;
        this.chooser = b.chooser;
        this.mode = b.mode;
        this.floorBlocks = b.floorBlocks;
        this.stopTokens = b.stopTokens.clone();
        Arrays.sort(stopTokens);
        this.trace = b.trace;
        this.blockTokens = kv.layout().geometry().blockTokens();
        if (trace != null) {
            ModelConfig c = runner.config();
            int moe = (int) Arrays.stream(ModelRunner.moeLayers(c)).filter(i -> i >= 0).count();
            RoutingTraceHeader h = trace.header();
            if (h.layers() != moe || h.experts() != c.numExperts() || h.topK() != c.numExpertsPerTok()) {
                throw new IllegalArgumentException("routing trace header " + h + " does not fit the model's " + moe
                        + " MoE layers of " + c.numExperts() + " experts, top-" + c.numExpertsPerTok());
            }
            RoutingObserver observer = (layer, token, topK) -> {
                if (traceCount + topK.length > traceIds.length) {
                    traceIds = Arrays.copyOf(traceIds, Math.max(traceIds.length * 2, traceCount + topK.length));
                }
                System.arraycopy(topK, 0, traceIds, traceCount, topK.length);
                traceCount += topK.length;
            };
            runner.routingObserver(observer);
        }
    }

    /** A builder over {@code runner} and the KV manager it was made with. */
    public static Builder builder(ModelRunner runner, KvBlockManager kv) {
        return new Builder(runner, kv);
    }

    /**
     * Queues a request; any thread.
     *
     * @param session      session id recorded with the request in a routing trace
     * @param prompt       prompt tokens (copied), at least one
     * @param maxNewTokens tokens to generate at most, at least one
     * @return the request's id, for {@link #cancel} and the sink's calls
     */
    public long submit(long session, int[] prompt, int maxNewTokens, TokenSink sink) {
        Objects.requireNonNull(sink, "sink");
        if (prompt == null || prompt.length == 0) {
            throw new IllegalArgumentException("a request needs at least one prompt token");
        }
        if (maxNewTokens < 1) {
            throw new IllegalArgumentException("max new tokens must be at least 1, got " + maxNewTokens);
        }
        int vocab = runner.config().vocabSize();
        for (int t : prompt) {
            if (t < 0 || t >= vocab) {
                throw new IllegalArgumentException("prompt token " + t + " is outside the vocabulary [0, " + vocab + ")");
            }
        }
        Request r = new Request(nextId.getAndIncrement(), session, prompt.clone(), maxNewTokens, sink);
        live.put(r.id, r);
        inbox.add(r);
        return r.id;
    }

    /** {@link #submit(long, int[], int, TokenSink)} with the request's own id as its session. */
    public long submit(int[] prompt, int maxNewTokens, TokenSink sink) {
        return submit(-1, prompt, maxNewTokens, sink);
    }

    /**
     * Asks for request {@code id} to end; any thread. It is retired (blocks released, sink told
     * {@link FinishReason#CANCELLED}) at the start of the next step.
     *
     * @return false when no live request has that id (unknown or already finished)
     */
    public boolean cancel(long id) {
        Request r = live.get(id);
        if (r == null) {
            return false;
        }
        r.cancelled = true;
        return true;
    }

    /**
     * One scheduler step: retire cancelled requests, admit what fits, one forward pass per running
     * sequence. Scheduler thread only.
     *
     * @return whether requests remain (waiting, running or preempted)
     */
    public boolean step() {
        steps++;
        burstOpen = false;
        drainInbox();
        retireCancelled();
        admit();
        decodeRunning();
        peakRunning = Math.max(peakRunning, running.size());
        return !idle();
    }

    /** Steps until no request remains. Scheduler thread only. */
    public void runUntilIdle() {
        while (step()) {
            // a step emits a token, admits, preempts, or (offloads in flight) polls the manager
        }
    }

    /** Whether no request is queued, running or preempted (submissions not yet seen by a step aside). */
    public boolean idle() {
        return waiting.isEmpty() && running.isEmpty() && preempted.isEmpty() && inbox.isEmpty();
    }

    public int runningCount() {
        return running.size();
    }

    public int waitingCount() {
        return waiting.size() + inbox.size();
    }

    public int preemptedCount() {
        return preempted.size();
    }

    /** Steps run so far. */
    public long steps() {
        return steps;
    }

    /** Sequences preempted so far. */
    public long preemptions() {
        return preemptions;
    }

    /** Preempted sequences re-admitted so far. */
    public long resumes() {
        return resumes;
    }

    /** The most sequences running together after any step. */
    public int peakRunning() {
        return peakRunning;
    }

    /** KV blocks the running sequences hold (a shared block once per holder). */
    public int heldBlocks() {
        int held = 0;
        for (Request r : running) {
            held += r.seq.blockCount();
        }
        return held;
    }

    private void drainInbox() {
        for (Request r; (r = inbox.poll()) != null; ) {
            if (blocksFor(r.prompt.length + r.maxNew) > kv.slotCount()) {
                finish(r, FinishReason.TOO_LONG);
            } else {
                waiting.add(r);
            }
        }
    }

    private void retireCancelled() {
        for (List<Request> list : List.of(running, preempted)) {
            for (int i = list.size() - 1; i >= 0; i--) {
                Request r = list.get(i);
                if (r.cancelled) {
                    list.remove(i);
                    finish(r, FinishReason.CANCELLED);
                }
            }
        }
        waiting.removeIf(r -> {
            if (r.cancelled) {
                finish(r, FinishReason.CANCELLED);
                return true;
            }
            return false;
        });
    }

    private void admit() {
        while (true) {
            boolean resuming = !preempted.isEmpty();
            Request r = resuming ? preempted.get(0) : waiting.peek();
            if (r == null) {
                return;
            }
            int need = blocksFor(r.contextLength() + 1);
            int floor = running.isEmpty() ? 0 : Math.max(0, floorBlocks.getAsInt());
            if ((long) heldBlocks() + need + floor > kv.slotCount()) {
                return;
            }
            if (resuming && r.seq != null) {
                openBurst();
                float[] logits = forward(RoutingPhase.PREFILL, () -> r.seq.resume());
                if (logits == null) {
                    return; // the cache could not hold it after all; it stays first among the preempted
                }
                preempted.remove(0);
                resumes++;
                r.ranInStep = steps;
                enterRunning(r);
                continue;
            }
            openBurst();
            if (!r.started) {
                r.started = true;
                if (trace != null) {
                    trace.startRequest(r.session < 0 ? r.id : r.session, r.id);
                }
            }
            ModelRunner.Sequence seq = runner.newSequence();
            int[] context = r.context();
            float[] logits = forward(RoutingPhase.PREFILL, () -> {
                float[][] out = seq.prefillIfRoom(context, false);
                return out == null ? null : out[0];
            });
            if (logits == null) {
                seq.close(); // slots not free yet (offloads in flight): it stays first in line
                kv.poll();
                return;
            }
            if (resuming) {
                preempted.remove(0);
                resumes++;
            } else {
                waiting.poll();
            }
            r.seq = seq;
            r.ranInStep = steps;
            enterRunning(r);
            emit(r, logits);
        }
    }

    private void enterRunning(Request r) {
        r.order = admissions++;
        running.add(r);
    }

    private void decodeRunning() {
        for (Request r : new ArrayList<>(running)) {
            if (r.seq == null || r.ranInStep == steps || !running.contains(r)) {
                continue;
            }
            if (!reserveNext(r)) {
                continue;
            }
            openBurst();
            int last = r.generated[r.count - 1];
            float[] logits = forward(RoutingPhase.DECODE, () -> r.seq.decode(last));
            r.ranInStep = steps;
            emit(r, logits);
        }
    }

    /** Gets {@code r} the block for its next token, preempting the latest admitted as needed; false when it cannot run now. */
    private boolean reserveNext(Request r) {
        while (true) {
            AllocationStatus status = r.seq.reserve(r.seq.length() + 1);
            switch (status) {
                case ALLOCATED -> {
                    return true;
                }
                case WAIT -> {
                    kv.poll();
                    return false;
                }
                case NO_SPACE -> {
                    Request victim = running.get(running.size() - 1);
                    preempt(victim);
                    if (victim == r) {
                        return false;
                    }
                }
            }
        }
    }

    private void preempt(Request victim) {
        running.remove(victim);
        preemptions++;
        if (mode == PreemptionMode.SWAP) {
            victim.seq.preempt();
        } else {
            victim.seq.close();
            victim.seq = null;
        }
        int at = 0;
        while (at < preempted.size() && preempted.get(at).order < victim.order) {
            at++;
        }
        preempted.add(at, victim);
    }

    private void emit(Request r, float[] logits) {
        int token = chooser.choose(r.id, logits);
        r.generated[r.count++] = token;
        r.sink.token(r.id, token, logits);
        if (Arrays.binarySearch(stopTokens, token) >= 0) {
            running.remove(r);
            finish(r, FinishReason.STOP);
        } else if (r.count == r.maxNew) {
            running.remove(r);
            finish(r, FinishReason.LENGTH);
        }
    }

    private void finish(Request r, FinishReason reason) {
        if (r.seq != null) {
            r.seq.close();
            r.seq = null;
        }
        live.remove(r.id);
        r.sink.finished(r.id, reason);
    }

    private void openBurst() {
        if (!burstOpen) {
            burstOpen = true;
            if (trace != null) {
                trace.startBurst();
            }
        }
    }

    private interface Forward {
        float[] run();
    }

    /** Runs one forward call and records its routing as one trace step. */
    private float[] forward(RoutingPhase phase, Forward call) {
        traceCount = 0;
        float[] logits = call.run();
        if (trace != null && traceCount > 0) {
            int perToken = trace.header().idsPerToken();
            trace.step(phase, traceCount / perToken, Arrays.copyOf(traceIds, traceCount));
        }
        traceCount = 0;
        return logits;
    }

    private int blocksFor(long tokens) {
        return (int) ((tokens + blockTokens - 1) / blockTokens);
    }

    /** Cancels every request, releasing its blocks, and detaches the routing observer. The trace writer stays open. */
    @Override
    public void close() {
        drainInbox();
        for (Request r : live.values()) {
            r.cancelled = true;
        }
        retireCancelled();
        if (trace != null) {
            runner.routingObserver(null);
        }
    }

    /** One request: its tokens so far and where it is. Scheduler thread, except {@link #cancelled}. */
    private static final class Request {
        final long id;
        final long session; // -1: the request's id
        final int[] prompt;
        final int maxNew;
        final TokenSink sink;
        final int[] generated; // [maxNew], [0, count) emitted
        int count;
        volatile boolean cancelled;
        ModelRunner.Sequence seq; // null while waiting or preempted by recompute
        long order; // admission order among running and preempted
        long ranInStep; // the step that last ran a forward pass for it
        boolean started; // its request start has been recorded

        Request(long id, long session, int[] prompt, int maxNew, TokenSink sink) {
            this.id = id;
            this.session = session;
            this.prompt = prompt;
            this.maxNew = maxNew;
            this.sink = sink;
            this.generated = new int[maxNew];
        }

        int contextLength() {
            return seq != null ? seq.length() : prompt.length + count;
        }

        int[] context() {
            int[] c = Arrays.copyOf(prompt, prompt.length + count);
            System.arraycopy(generated, 0, c, prompt.length, count);
            return c;
        }
    }

    /** Settings of a {@link Scheduler}. */
    public static final class Builder {
        private final ModelRunner runner;
        private final KvBlockManager kv;
        private TokenChooser chooser = TokenChooser.GREEDY;
        private PreemptionMode mode = PreemptionMode.SWAP;
        private IntSupplier floorBlocks = () -> 0;
        private int[] stopTokens = new int[0];
        private RoutingTraceWriter trace;

        private Builder(ModelRunner runner, KvBlockManager kv) {
            this.runner = Objects.requireNonNull(runner, "runner");
            this.kv = Objects.requireNonNull(kv, "kv manager");
        }

        /** How the next token is chosen; greedy by default. */
        public Builder chooser(TokenChooser chooser) {
            this.chooser = Objects.requireNonNull(chooser, "chooser");
            return this;
        }

        /** How sequences are preempted; {@link PreemptionMode#SWAP} by default. */
        public Builder preemption(PreemptionMode mode) {
            this.mode = Objects.requireNonNull(mode, "preemption mode");
            return this;
        }

        /** KV blocks admission keeps free for the running sequences (read every step); 0 by default. */
        public Builder admissionFloor(IntSupplier floorBlocks) {
            this.floorBlocks = Objects.requireNonNull(floorBlocks, "admission floor");
            return this;
        }

        /** Tokens that end a request when generated (the token is still passed to the sink). */
        public Builder stopTokens(int... tokens) {
            this.stopTokens = tokens.clone();
            return this;
        }

        /** Records routing decisions into {@code writer} (owned by the caller); its header must fit the model. */
        public Builder routingTrace(RoutingTraceWriter writer) {
            this.trace = writer;
            return this;
        }

        public Scheduler build() {
            return new Scheduler(this);
        }
    }
}
