package dev.strata.engine.schedule;

import dev.strata.cache.kv.AllocationStatus;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.routing.RoutingPhase;
import dev.strata.cache.routing.RoutingTraceHeader;
import dev.strata.cache.routing.RoutingTraceWriter;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.forward.RoutingObserver;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.sample.FinishReason;

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
 *       first token. Then every sequence already running decodes one token: first each gets the KV
 *       block for it (preempting as below), then all of them run as one batch
 *       ({@link ModelRunner#decodeBatch}: every weight matrix read once per step for the whole
 *       batch, attention per sequence over its own KV), and their tokens are chosen in admission
 *       order. With {@link Builder#batchedDecode batchedDecode(false)} each sequence runs its own
 *       decode call instead. Either way a sequence's tokens and logits are bit-identical to running
 *       it alone (the runner's per-row determinism).</li>
 *   <li><b>Choosing and ending</b>: a request's next token is chosen by its own
 *       {@link TokenChooser} (given at submit; the scheduler's by default). It ends with
 *       {@link FinishReason#LENGTH} at its maximum of new tokens, {@link FinishReason#STOP} at a
 *       stop token of the scheduler's or when {@link #stop} was called for it (a sink that found a
 *       stop string calls it from {@code token}, and the request ends right after that token),
 *       and {@link FinishReason#CANCELLED} when cancelled.</li>
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
 *       had. {@link AllocationStatus#WAIT} (transfers in flight will free slots) skips the
 *       sequence for this step; a step in which nothing could run (no admission, token, preemption
 *       or end) while transfers are in flight then parks until one of them ends or a request is
 *       submitted, cancelled or stopped, at most {@link #TRANSFER_WAIT_NANOS}, instead of stepping
 *       again at once.
 *       A preempted request is re-admitted like any other, ahead of new ones. At the end of every
 *       step the swapped requests that resume first ({@link Builder#resumeLookahead}, 1 by default)
 *       have their stored KV blocks staged toward the device (HOST staging buffers filled from HOST
 *       or DISK while the others run), so their resume copies staged blocks instead of loading
 *       them. A swapped request's resume only loads its KV back ({@link ModelRunner.Sequence#resumeForDecode}):
 *       its next token is already chosen, so the tokens whose KV did not come back (the tail after
 *       its last full block) are computed by its next decode, in the same pass as that token. A
 *       recomputed one is
 *       re-prefilled from its prompt and generated tokens, whose last logits are the ones its next
 *       decode would have given, so its next token is chosen from them.</li>
 *   <li><b>Failure</b> is one request's where its work can be told apart: an exception from its
 *       admission (opening its sequence, prefill or resume), from reserving its next block, from
 *       preempting it, from its own decode call, from its chooser or from its sink fails that
 *       request alone: its sequence is closed (its blocks released), it leaves the scheduler, and
 *       its sink is told {@link TokenSink#failed}; the step goes on with the others. A batched
 *       decode that throws appends nothing to any sequence ({@link ModelRunner#decodeBatch}), so
 *       the step decodes the batch's sequences again one by one: the ones whose own call throws
 *       fail, the others emit the tokens the batch would have given them (the runner's per-row
 *       determinism), so a failure takes no other request's tokens with it. When every request's
 *       work fails, each fails on its own with its sequence closed. Only what belongs to no request
 *       (the routing trace's writes, the KV manager's own polling) is thrown from {@link #step};
 *       the scheduler is then to be {@link #close closed}, which closes every sequence.</li>
 *   <li><b>Routing</b>: with a {@link RoutingTraceWriter}, every forward call (prefill or decode)
 *       becomes one trace step of its tokens' routed experts (prefill phase for prefills, decode for
 *       decodes, whose tokens include those a resumed sequence computes with its first decode after
 *       the resume; a batched decode is one step of the batch's tokens, in
 *       admission order; a batched decode that failed records nothing, and the one-by-one calls that
 *       follow it a step each); a request start precedes a request's first prefill, and a burst
 *       start begins every scheduler step that runs anything.</li>
 * </ul>
 *
 * <p>Threads: {@link #submit}, {@link #cancel}, {@link #stop} and the counters' getters
 * ({@link #steps}, {@link #preemptions}, {@link #resumes}, {@link #peakRunning},
 * {@link #decodeBatches}, {@link #decodedTokens}) from any thread; {@link #step},
 * {@link #runUntilIdle} and {@link #close} only on one scheduler thread, which must also be the
 * runner's and the KV manager's driving thread; sinks and the chooser are called on it.
 *
 * <p>Invariants after every step: each live request is in exactly one of waiting, running or
 * preempted; running sequences hold KV, preempted and waiting ones hold none (a swapped sequence's
 * blocks are offloaded or dropped); a finished, cancelled or failed request holds nothing and its
 * sink has been told {@code finished} or {@code failed} exactly once. A request owns its sequence
 * from the moment it is opened, so every sequence is closed by the request's end or by
 * {@link #close}, whatever threw in between.
 */
public final class Scheduler implements AutoCloseable {
    /** Longest park of a step in which every request waited for slots that transfers in flight will free. */
    static final long TRANSFER_WAIT_NANOS = 1_000_000;

    private final ModelRunner runner;
    private final KvBlockManager kv;
    private final TokenChooser chooser;
    private final PreemptionMode mode;
    private final IntSupplier floorBlocks;
    private final int[] stopTokens; // sorted
    private final RoutingTraceWriter trace; // null: routing not recorded
    private final int blockTokens;
    private final boolean batchedDecode;
    private final int resumeLookahead; // preempted requests, first in resume order, whose KV is staged ahead of their resume
    private final RoutingObserver previousObserver; // the runner's observer before the trace's was chained after it; null: none

    private final ConcurrentLinkedQueue<Request> inbox = new ConcurrentLinkedQueue<>();
    private final ConcurrentHashMap<Long, Request> live = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong(1);

    private final ArrayDeque<Request> waiting = new ArrayDeque<>(); // arrival order, never run
    private final List<Request> preempted = new ArrayList<>(); // admission order
    private final List<Request> running = new ArrayList<>(); // admission order
    private long admissions; // admission counter: a request's order among admitted ones
    private volatile long steps; // written on the scheduler thread only; volatile for readers elsewhere
    private volatile long preemptions;
    private volatile long resumes;
    private volatile int peakRunning;
    private volatile long decodeBatches; // decode forward calls (one per step when batched)
    private volatile long decodedTokens; // tokens those calls decoded
    private volatile long failures; // requests failed by their own work
    private boolean burstOpen; // the current step has written its burst start
    private boolean progressed; // the current step admitted, resumed, emitted, preempted or ended a request
    private volatile boolean nudged; // a request was submitted, cancelled or stopped since the step began: do not park

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
        this.batchedDecode = b.batchedDecode;
        this.resumeLookahead = b.resumeLookahead;
        if (trace != null) {
            ModelConfig c = runner.config();
            int moe = ModelRunner.moeLayerCount(c);
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
            this.previousObserver = runner.routingObserver();
            runner.routingObserver(previousObserver == null ? observer : previousObserver.andThen(observer));
        } else {
            this.previousObserver = null;
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
        return submit(session, prompt, maxNewTokens, chooser, sink);
    }

    /**
     * {@link #submit(long, int[], int, TokenSink)} with the request's own {@code chooser} (a
     * sampler with its own parameters and seed), called on the scheduler thread for each of its
     * tokens.
     */
    public long submit(long session, int[] prompt, int maxNewTokens, TokenChooser chooser, TokenSink sink) {
        Objects.requireNonNull(sink, "sink");
        Objects.requireNonNull(chooser, "chooser");
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
        Request r = new Request(nextId.getAndIncrement(), session, prompt.clone(), maxNewTokens, chooser, sink);
        live.put(r.id, r);
        inbox.add(r);
        nudge();
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
        nudge();
        return true;
    }

    /** Any thread: ends a step's park for transfers, so that the next step sees what changed. */
    private void nudge() {
        nudged = true;
        kv.wakeTransferWait();
    }

    /**
     * Asks for request {@code id} to end with {@link FinishReason#STOP}; any thread. Called from
     * the request's sink during {@code token} (on the scheduler thread), the request ends right
     * after that token; otherwise it is retired at the start of the next step.
     *
     * @return false when no live request has that id
     */
    public boolean stop(long id) {
        Request r = live.get(id);
        if (r == null) {
            return false;
        }
        r.stopRequested = true;
        nudge();
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
        progressed = false;
        nudged = false; // before the inbox is read: a request submitted from now on ends the park below
        drainInbox();
        retireCancelled();
        admit();
        decodeRunning();
        stageNextResumes();
        peakRunning = Math.max(peakRunning, running.size());
        boolean more = !idle();
        if (more && !progressed && !kv.transfersIdle()) {
            // every request waits for slots that transfers in flight will give back: park until one ends, a request
            // is submitted, cancelled or stopped, or a moment passes, instead of stepping again at once
            kv.awaitTransfer(TRANSFER_WAIT_NANOS, () -> nudged);
        }
        return more;
    }

    /** Steps until no request remains. Scheduler thread only. */
    public void runUntilIdle() {
        while (step()) {
            // a step emits a token, admits, preempts, or (transfers in flight) waits for one to end
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

    /** Decode forward calls so far: one per step that decoded anything when batched, one per token otherwise. */
    public long decodeBatches() {
        return decodeBatches;
    }

    /** Tokens decoded by those calls (prefills and resumes excluded). */
    public long decodedTokens() {
        return decodedTokens;
    }

    /** Requests that failed so far (their own admission, decode, chooser or sink threw). */
    public long failures() {
        return failures;
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
                } else if (r.stopRequested) {
                    list.remove(i);
                    finish(r, FinishReason.STOP);
                }
            }
        }
        waiting.removeIf(r -> {
            if (r.cancelled || r.stopRequested) {
                finish(r, r.cancelled ? FinishReason.CANCELLED : FinishReason.STOP);
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
                // its next token is chosen: the resume loads its KV back and computes nothing; the
                // tokens whose KV did not come back are computed with that token in its next decode
                boolean resumed;
                try {
                    resumed = r.seq.resumeForDecode();
                } catch (RuntimeException e) {
                    fail(r, e); // its sequence is closed; the next in line is tried
                    continue;
                }
                if (!resumed) {
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
            float[] logits;
            try {
                r.seq = runner.newSequence(); // the request owns it from now on: its end or close() closes it
                ModelRunner.Sequence seq = r.seq;
                int[] context = r.context();
                logits = forward(RoutingPhase.PREFILL, () -> {
                    float[][] out = seq.prefillIfRoom(context, false);
                    return out == null ? null : out[0];
                });
            } catch (RunFailed e) {
                fail(r, e.getCause());
                continue;
            } catch (RuntimeException e) { // opening the sequence
                fail(r, e);
                continue;
            }
            if (logits == null) {
                r.seq.close(); // slots not free yet (offloads in flight): it stays first in line
                r.seq = null;
                kv.poll();
                return;
            }
            if (resuming) {
                preempted.remove(0);
                resumes++;
            } else {
                waiting.poll();
            }
            r.ranInStep = steps;
            enterRunning(r);
            if (!r.reported) {
                r.reported = true;
                try {
                    r.sink.started(r.id, r.prompt.length, r.seq.reusedTokens());
                } catch (RuntimeException e) {
                    fail(r, e);
                    continue;
                }
            }
            emit(r, logits);
        }
    }

    /**
     * Lookahead for the requests this scheduler resumes next: with swap preemption, the first
     * {@link Builder#resumeLookahead} requests of the preempted queue (the order {@link #admit}
     * resumes them in) have their stored KV blocks staged toward the device
     * ({@link ModelRunner.Sequence#stageForResume}) while the others run, so their resume copies
     * staged blocks instead of reading them from HOST or DISK. Repeated every step: blocks whose
     * offload landed since are staged then; the manager bounds what staging holds. A staging call
     * that throws fails its request alone.
     */
    private void stageNextResumes() {
        if (mode != PreemptionMode.SWAP) {
            return;
        }
        for (int i = 0, staged = 0; i < preempted.size() && staged < resumeLookahead; ) {
            Request r = preempted.get(i);
            if (r.seq == null || !r.seq.preempted()) {
                i++;
                continue;
            }
            try {
                r.seq.stageForResume();
            } catch (RuntimeException e) {
                fail(r, e); // leaves the preempted queue: the next request takes index i
                continue;
            }
            staged++;
            i++;
        }
    }

    private void enterRunning(Request r) {
        r.order = admissions++;
        running.add(r);
        progressed = true;
    }

    private void decodeRunning() {
        if (!batchedDecode) {
            for (Request r : new ArrayList<>(running)) {
                if (r.seq == null || r.ranInStep == steps || !running.contains(r)) {
                    continue;
                }
                if (reserveNext(r)) {
                    decodeAlone(r);
                }
            }
            return;
        }
        // every sequence gets its next token's block first (a preemption may take a reserved one's)
        List<Request> ready = new ArrayList<>(running.size());
        for (Request r : new ArrayList<>(running)) {
            if (r.seq == null || r.ranInStep == steps || !running.contains(r)) {
                continue;
            }
            if (reserveNext(r)) {
                ready.add(r);
            }
        }
        ready.removeIf(r -> !running.contains(r)); // preempted or failed after its reservation
        if (ready.isEmpty()) {
            return;
        }
        if (ready.size() == 1) {
            decodeAlone(ready.get(0));
            return;
        }
        List<ModelRunner.Sequence> seqs = new ArrayList<>(ready.size());
        int[] last = new int[ready.size()];
        for (int i = 0; i < ready.size(); i++) {
            Request r = ready.get(i);
            seqs.add(r.seq);
            last[i] = r.generated[r.count - 1];
        }
        openBurst();
        float[][] logits;
        try {
            logits = forwardBatch(RoutingPhase.DECODE, () -> runner.decodeBatch(seqs, last));
        } catch (RunFailed e) {
            // the batch appended nothing: each sequence decodes alone, and only those whose own call throws fail
            for (Request r : ready) {
                if (running.contains(r)) {
                    decodeAlone(r);
                }
            }
            return;
        }
        decodeBatches++;
        decodedTokens += ready.size();
        for (int i = 0; i < ready.size(); i++) {
            Request r = ready.get(i);
            r.ranInStep = steps;
            emit(r, logits[i]);
        }
    }

    /**
     * Gets {@code r} (running) the block for its next token as {@link #reserveOrPreempt} does; a
     * reservation that throws fails {@code r} alone.
     *
     * @return whether {@code r} can decode now
     */
    private boolean reserveNext(Request r) {
        try {
            return reserveOrPreempt(r);
        } catch (RuntimeException e) {
            fail(r, e);
            return false;
        }
    }

    /** Decodes {@code r}'s next token by its own forward call and emits it; a call that throws fails {@code r} alone. */
    private void decodeAlone(Request r) {
        openBurst();
        int last = r.generated[r.count - 1];
        float[] logits;
        try {
            logits = forward(RoutingPhase.DECODE, () -> r.seq.decode(last));
        } catch (RunFailed e) {
            fail(r, e.getCause());
            return;
        }
        r.ranInStep = steps;
        decodeBatches++;
        decodedTokens++;
        emit(r, logits);
    }

    /** Gets {@code r} the block for its next token, preempting the latest admitted as needed; false when it cannot run now. */
    private boolean reserveOrPreempt(Request r) {
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

    /** Preempts {@code victim} (running); a preemption that throws fails the victim, which frees its blocks just the same. */
    private void preempt(Request victim) {
        progressed = true;
        running.remove(victim);
        preemptions++;
        try {
            if (mode == PreemptionMode.SWAP) {
                victim.seq.preempt();
            } else {
                victim.seq.close();
                victim.seq = null;
            }
        } catch (RuntimeException e) {
            fail(victim, e);
            return;
        }
        int at = 0;
        while (at < preempted.size() && preempted.get(at).order < victim.order) {
            at++;
        }
        preempted.add(at, victim);
    }

    /** Chooses {@code r}'s next token from {@code logits} and hands it to its sink; a chooser or sink that throws fails {@code r}. */
    private void emit(Request r, float[] logits) {
        progressed = true;
        int token;
        try {
            token = r.chooser.choose(r.id, logits);
            r.generated[r.count++] = token;
            r.sink.token(r.id, token, logits);
        } catch (RuntimeException e) {
            fail(r, e);
            return;
        }
        if (r.stopRequested || Arrays.binarySearch(stopTokens, token) >= 0) {
            running.remove(r);
            finish(r, FinishReason.STOP);
        } else if (r.count == r.maxNew) {
            running.remove(r);
            finish(r, FinishReason.LENGTH);
        }
    }

    private void finish(Request r, FinishReason reason) {
        progressed = true;
        RuntimeException closeFailure = closeSequence(r);
        live.remove(r.id);
        r.sink.finished(r.id, reason);
        if (closeFailure != null) {
            throw closeFailure; // the manager could not release its blocks: nothing this step can repair
        }
    }

    /**
     * Ends {@code r} because its own work threw {@code error}: it leaves whichever list holds it,
     * its sequence is closed and its sink told {@code failed}. A sink that throws then is ignored
     * (the request is over and holds nothing; nobody is left to tell).
     */
    private void fail(Request r, RuntimeException error) {
        progressed = true;
        running.remove(r);
        preempted.remove(r);
        waiting.remove(r);
        failures++;
        RuntimeException closeFailure = closeSequence(r);
        if (closeFailure != null) {
            error.addSuppressed(closeFailure);
        }
        live.remove(r.id);
        try {
            r.sink.failed(r.id, error);
        } catch (RuntimeException e) {
            error.addSuppressed(e);
        }
    }

    /** Closes {@code r}'s sequence, if it has one; returns what the close threw, or null. */
    private static RuntimeException closeSequence(Request r) {
        ModelRunner.Sequence seq = r.seq;
        if (seq == null) {
            return null;
        }
        r.seq = null;
        try {
            seq.close();
            return null;
        } catch (RuntimeException e) {
            return e;
        }
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

    private interface BatchForward {
        float[][] run();
    }

    /** Runs one forward call and records its routing as one trace step. */
    private float[] forward(RoutingPhase phase, Forward call) {
        float[][] out = forwardBatch(phase, () -> {
            float[] logits = call.run();
            return logits == null ? null : new float[][] {logits};
        });
        return out == null ? null : out[0];
    }

    /**
     * Runs one forward call of one or more sequences and records its routing as one trace step.
     *
     * @throws RunFailed wrapping what the call threw (it records nothing); a failed trace write is
     *                   thrown as it is (it belongs to no request)
     */
    private float[][] forwardBatch(RoutingPhase phase, BatchForward call) {
        traceCount = 0;
        float[][] logits;
        try {
            logits = call.run();
        } catch (RuntimeException e) {
            traceCount = 0; // the failed call's partial routing is no step
            throw new RunFailed(e);
        }
        if (trace != null && traceCount > 0) {
            int perToken = trace.header().idsPerToken();
            trace.step(phase, traceCount / perToken, Arrays.copyOf(traceIds, traceCount));
        }
        traceCount = 0;
        return logits;
    }

    /** What a forward call of the runner threw, told apart from the trace's own failures. Scheduler thread. */
    private static final class RunFailed extends RuntimeException {
        RunFailed(RuntimeException cause) {
            super(cause.getMessage(), cause, false, false);
        }

        @Override
        public synchronized RuntimeException getCause() {
            return (RuntimeException) super.getCause();
        }
    }

    private int blocksFor(long tokens) {
        return (int) ((tokens + blockTokens - 1) / blockTokens);
    }

    /**
     * Cancels every request, releasing its blocks, and detaches the trace's routing observer (the
     * runner keeps the observer it had before). The trace writer stays open. Also after a step
     * threw: every request still held ends, each sequence closed even when another's close or sink
     * throws (the first such failure is thrown at the end, the others suppressed in it).
     */
    @Override
    public void close() {
        List<Request> all = new ArrayList<>(running);
        all.addAll(preempted);
        all.addAll(waiting);
        running.clear();
        preempted.clear();
        waiting.clear();
        RuntimeException failure = null;
        try {
            drainInbox();
        } catch (RuntimeException e) {
            failure = e;
        }
        all.addAll(waiting);
        waiting.clear();
        for (Request r : all) {
            try {
                finish(r, FinishReason.CANCELLED);
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (trace != null) {
            runner.routingObserver(previousObserver); // the observer the runner had before this scheduler
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** One request: its tokens so far and where it is. Scheduler thread, except {@link #cancelled}. */
    private static final class Request {
        final long id;
        final long session; // -1: the request's id
        final int[] prompt;
        final int maxNew;
        final TokenChooser chooser;
        final TokenSink sink;
        final int[] generated; // [maxNew], [0, count) emitted
        int count;
        volatile boolean cancelled;
        volatile boolean stopRequested;
        boolean reported; // the sink has been told started
        ModelRunner.Sequence seq; // null while waiting or preempted by recompute
        long order; // admission order among running and preempted
        long ranInStep; // the step that last ran a forward pass for it
        boolean started; // its request start has been recorded

        Request(long id, long session, int[] prompt, int maxNew, TokenChooser chooser, TokenSink sink) {
            this.id = id;
            this.session = session;
            this.prompt = prompt;
            this.maxNew = maxNew;
            this.chooser = chooser;
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
        private boolean batchedDecode = true;
        private int resumeLookahead = 1;

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

        /**
         * Whether the running sequences decode as one batch per step (the default) or each by its
         * own decode call (the outputs are the same bits either way; per-sequence calls read the
         * weights once per sequence).
         */
        public Builder batchedDecode(boolean batched) {
            this.batchedDecode = batched;
            return this;
        }

        /**
         * With swap preemption, how many preempted requests, first in the order they resume, have
         * their KV blocks staged toward the device ahead of their resume
         * ({@link ModelRunner.Sequence#stageForResume}); 1 by default, 0 turns staging off.
         *
         * @throws IllegalArgumentException if {@code requests} is negative
         */
        public Builder resumeLookahead(int requests) {
            if (requests < 0) {
                throw new IllegalArgumentException("resume lookahead must not be negative, got " + requests);
            }
            this.resumeLookahead = requests;
            return this;
        }

        public Scheduler build() {
            return new Scheduler(this);
        }
    }
}
