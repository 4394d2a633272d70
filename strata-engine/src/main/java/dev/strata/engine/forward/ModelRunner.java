package dev.strata.engine.forward;

import dev.strata.cache.expert.ExpertLayout;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.AllocationStatus;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvSequence;
import dev.strata.cache.kv.LoadOutcome;
import dev.strata.cache.kv.PrefixMatch;
import dev.strata.cache.kv.TokenSelection;
import dev.strata.cache.split.RecomputeMeter;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelWeights;
import dev.strata.memory.Tier;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A decoder-only transformer (Qwen3-MoE, Mixtral, OLMoE, Llama, Qwen3) run over a KV manager and
 * optionally an expert pager: the sequence and expert lifecycle around the {@link ForwardPass}. A
 * sequence is opened on the KV manager ({@link #newSequence}), runs its prompt ({@link
 * Sequence#prefill}), then one token per decode step, either alone ({@link Sequence#decode}) or with
 * others in one pass ({@link #decodeBatch}: the weights are read once for the whole batch, attention
 * runs per sequence over its own KV); it can be preempted and resumed, and is closed to release its
 * blocks. The static helpers size and fill what a runner is built over: the KV geometry of a model
 * ({@link #kvGeometry}), its MoE layers ({@link #moeLayers}, {@link #moeLayerCount}), the image of
 * one expert ({@link #expertLayout}) and the expert masters in a HOST (or any) tier
 * ({@link #loadMasters}).
 *
 * <p>Memory it does not own:
 * <ul>
 *   <li>KV: the sequence's blocks come from a {@link KvBlockManager} whose layout keeps each block
 *       contiguous in the canonical order ({@code StridedKvLayout.blockMajor(geometry, slots, kvArena)},
 *       or a resizable {@code TierSlotKvLayout} of DEVICE allocations); the forward pass writes each
 *       token's K and V (after q/k norm and RoPE, as FP32) into the slot the manager hands out,
 *       attends through {@link dev.strata.engine.kernel.PagedKv} over the sequence's blocks, and the
 *       runner commits every full block under its prefix key, so a later prompt sharing the prefix
 *       loads those blocks ({@code match}/{@code load}) instead of recomputing them. The last prompt
 *       token is always computed, so the logits of the prompt exist even when every block of it is
 *       cached.</li>
 *   <li>Experts: with an {@link ExpertPager} (over masters made by {@link #loadMasters}), each MoE
 *       layer pages the routed experts of the batch and reads each expert's gate/up/down from the
 *       slot its {@code expert_map} names. When the batch's routed union exceeds the layer's
 *       capacity, the batch runs in the token groups of {@link ExpertPager#plan}. Without a pager
 *       the experts are read from the model's weight tensors.</li>
 * </ul>
 *
 * <p>Memory it owns: the forward pass's activations (sized for one row, grown to the largest
 * batch or prompt seen, then reused), and per sequence its tokens, its KV block views and its
 * {@code [vocab]} logits array. A decode step allocates no activation array (see
 * {@link ForwardPass} for the measured bytes per step): the logits {@link Sequence#decode} and
 * {@link #decodeBatch} return are the sequence's own array, overwritten by its next step.
 *
 * <p>Determinism: each token's outputs are computed in the same order whatever the batch (one
 * prompt's rows or several sequences' decode rows), its grouping, the thread count or where the
 * weights and KV blocks came from. So the logits are bit-identical paged or not, at any expert cap,
 * cold or with a prefix hit, at any kernel thread count.
 *
 * <p>Threads: one thread drives a runner and its sequences (the KV manager's and pager's driving
 * thread), every method of both classes included; the static helpers may be called from any
 * thread. The kernels fan out over their pool.
 */
public final class ModelRunner {
    /** Expert image tensors, in the order of {@link #expertLayout}. */
    public static final int GATE = 0;
    public static final int UP = 1;
    public static final int DOWN = 2;

    private final ModelConfig c;
    private final KvBlockManager kv;
    private final KvGeometry geometry;
    private final ForwardPass forward;
    private final ForwardPass.Batch batch = new ForwardPass.Batch(); // the spans of the call being run, reused
    private float[][] batchLogits = new float[0][]; // what decodeBatch returned last: [batch] the sequences' logits arrays
    private RoutingObserver routingObserver; // null: routing not reported (the default)
    private RecomputeMeter recomputeMeter; // null: prefill timings not reported (the default)

    /**
     * @param weights the model
     * @param kernels kernels on their pool
     * @param kv      KV manager over {@code StridedKvLayout.blockMajor(kvGeometry(...), slots, kvArena)}
     * @param kvArena the arena that layout was made over
     * @param pager   the expert pager over {@link #loadMasters} of this model, or null (experts read in place)
     */
    public ModelRunner(ModelWeights weights, Kernels kernels, KvBlockManager kv, MemorySegment kvArena, ExpertPager pager) {
        this(weights, kernels, kv, pager);
        long need = (long) kv.layout().slots() * geometry.bytesPerBlock();
        if (kvArena.byteSize() < need) {
            throw new IllegalArgumentException("KV arena of " + kvArena.byteSize() + " bytes is smaller than the "
                    + kv.layout().slots() + " block-major slots of the manager's layout (" + need + " bytes)");
        }
    }

    /**
     * A runner reading each KV block through the manager's layout, which must keep a block
     * contiguous in the canonical order (FP32): {@code StridedKvLayout.blockMajor}, or a
     * {@code TierSlotKvLayout} whose slots are DEVICE allocations (resizable: a sequence looks its
     * blocks' memory up again at every step, so the slots may change between steps).
     *
     * @throws IllegalArgumentException if the geometry is not the model's or a block is not one segment
     */
    public ModelRunner(ModelWeights weights, Kernels kernels, KvBlockManager kv, ExpertPager pager) {
        Objects.requireNonNull(weights, "weights");
        this.c = weights.config();
        Objects.requireNonNull(kernels, "kernels");
        this.kv = Objects.requireNonNull(kv, "kv manager");
        this.geometry = kv.layout().geometry();
        KvGeometry want = kvGeometry(c, geometry.blockTokens());
        if (!geometry.equals(want)) {
            throw new IllegalArgumentException("the KV manager's geometry " + geometry + " is not the model's " + want);
        }
        List<MemorySegment> first = new ArrayList<>(2);
        kv.layout().segments(0, TokenSelection.all(geometry.blockTokens()), first);
        if (first.size() != 1 || first.get(0).byteSize() != geometry.bytesPerBlock()) {
            throw new IllegalArgumentException("the KV manager's layout " + kv.layout() + " does not keep a block in one "
                    + "contiguous segment of " + geometry.bytesPerBlock() + " bytes (it gives " + first.size() + " segments)");
        }
        int moeCount = moeLayerCount(c);
        if (pager != null && (pager.layers() != moeCount || pager.experts() != c.numExperts())) {
            throw new IllegalArgumentException("expert pager has " + pager.layers() + " layers of " + pager.experts()
                    + " experts; the model has " + moeCount + " MoE layers of " + c.numExperts());
        }
        this.forward = new ForwardPass(weights, kernels, geometry, pager, moeLayers(c));
    }

    /** The KV geometry of a model: all layers, its KV heads and head width, FP32, {@code blockTokens} per block. */
    public static KvGeometry kvGeometry(ModelConfig c, int blockTokens) {
        return new KvGeometry(c.numHiddenLayers(), c.numKeyValueHeads(), c.headDim(), KvDtype.FP32, blockTokens);
    }

    /** For each layer, its index among the MoE layers (the pager's layer), or -1 when dense. */
    public static int[] moeLayers(ModelConfig c) {
        int[] index = new int[c.numHiddenLayers()];
        int n = 0;
        for (int l = 0; l < index.length; l++) {
            index[l] = c.isMoeLayer(l) ? n++ : -1;
        }
        return index;
    }

    /** How many layers of {@code c} are MoE layers (the pager's layer count). */
    public static int moeLayerCount(ModelConfig c) {
        int n = 0;
        for (int l = 0; l < c.numHiddenLayers(); l++) {
            if (c.isMoeLayer(l)) {
                n++;
            }
        }
        return n;
    }

    /** One expert as a pager image: gate, up, down, in the model's dtype. */
    public static ExpertLayout expertLayout(ModelConfig c) {
        long w = (long) c.expertIntermediateSize() * c.hiddenSize() * c.torchDtype().bytes();
        return ExpertLayout.of("gate_proj.weight", w, "up_proj.weight", w, "down_proj.weight", w);
    }

    /** Allocates masters in {@code tier} and writes every expert of every MoE layer into them. */
    public static ExpertMasters loadMasters(ModelWeights weights, Tier tier) {
        ModelConfig c = weights.config();
        int[] index = moeLayers(c);
        int layers = moeLayerCount(c);
        if (layers == 0) {
            throw new IllegalArgumentException("model " + c.family() + " has no MoE layer, so no expert masters");
        }
        ExpertMasters masters = ExpertMasters.allocate(tier, expertLayout(c), layers, c.numExperts());
        for (int l = 0; l < index.length; l++) {
            if (index[l] < 0) {
                continue;
            }
            for (int e = 0; e < c.numExperts(); e++) {
                ModelWeights.Mlp m = weights.expert(l, e).mlp();
                masters.write(index[l], e, List.of(m.gate().data(), m.up().data(), m.down().data()));
            }
        }
        return masters;
    }

    /** The forward pass this runner drives (for tests in this package). */
    ForwardPass forwardPass() {
        return forward;
    }

    public ModelConfig config() {
        return c;
    }

    /** MoE layer runs so far whose batch exceeded the pager's capacity and ran in several token groups. */
    public long groupedLayerRuns() {
        return forward.groupedLayerRuns();
    }

    /**
     * Sets the observer told the routed experts of every token at every MoE layer, or null (the
     * default) for none. Runner's thread only.
     */
    public void routingObserver(RoutingObserver observer) {
        this.routingObserver = observer;
        forward.routingObserver(observer);
    }

    /**
     * Sets the meter told the tokens and wall time of every prefill's computed part (what
     * recomputing a KV block costs), or null (the default) for none. Runner's thread only.
     */
    public void recomputeMeter(RecomputeMeter meter) {
        this.recomputeMeter = meter;
    }

    /** The observer told the routing, or null. Runner's thread only. */
    public RoutingObserver routingObserver() {
        return routingObserver;
    }

    /** A new, empty sequence. */
    public Sequence newSequence() {
        return new Sequence(kv.newSequence());
    }

    /**
     * One sequence's state: its tokens, its KV blocks (and views of them) and its logits array.
     * Driven by the runner's thread; close it to release its blocks (committed ones stay cached for
     * later prefix hits).
     */
    public final class Sequence implements AutoCloseable {
        private final KvSequence seq;
        private final KvBlockViews blocks = new KvBlockViews(kv.layout());
        private final float[] logits = new float[c.vocabSize()]; // [vocab] after the last computed token
        private int[] tokens = new int[64]; // tokens so far, [0, length)
        private int length;
        private int computed; // tokens whose KV is in the sequence's slots, [0, computed): length, except after resumeForDecode until the next decode
        private int reused; // prompt tokens whose KV came from the cache
        private boolean closed;

        private Sequence(KvSequence seq) {
            this.seq = seq;
        }

        /** Tokens in the sequence. */
        public int length() {
            return length;
        }

        /** KV blocks the sequence holds now. */
        public int blockCount() {
            return seq.blockCount();
        }

        /** Whether the sequence's KV was given up by {@link #preempt} and not yet {@link #resume}d. */
        public boolean preempted() {
            return seq.state() == KvSequence.State.PREEMPTED;
        }

        /**
         * Gives the sequence KV slots for its first {@code totalTokens} tokens (at least its
         * length), so that a following {@link #decode} finds them; the expected outcomes of a full
         * cache are returned, not thrown.
         */
        public AllocationStatus reserve(int totalTokens) {
            if (closed || seq.state() != KvSequence.State.RUNNING) {
                throw new IllegalStateException("sequence " + seq.id() + " is not running (closed " + closed + ", "
                        + seq.state() + "); cannot reserve " + totalTokens + " tokens");
            }
            return kv.allocateTo(seq, Math.max(totalTokens, seq.tokens()));
        }

        /**
         * Swaps the sequence's KV out ({@link KvBlockManager#preempt}): committed blocks are offloaded
         * when the manager has a store (else dropped), their slots freed; the tokens stay here.
         */
        public void preempt() {
            if (closed || length == 0 || preempted()) {
                throw new IllegalStateException("only a running sequence after its prefill can be preempted (closed "
                        + closed + ", " + length + " tokens, " + seq.state() + ")");
            }
            kv.preempt(seq);
        }

        /**
         * Stages the preempted sequence's stored KV blocks toward the device ahead of its
         * {@link #resume} ({@link KvBlockManager#stageForResume}): their store copies (HOST or DISK)
         * are read into HOST staging buffers asynchronously, needing no KV slot, so a scheduler
         * calls it for the preempted sequence it will resume next while others run; the resume then
         * copies the staged blocks into their slots instead of reading them from the store. Bounded
         * by the manager's resume staging buffers; may be repeated (blocks offloaded since are
         * staged then); closing or resuming the sequence before the reads land is safe.
         *
         * @return blocks whose staging this call started
         * @throws IllegalStateException if the sequence is closed or not preempted
         */
        public int stageForResume() {
            if (closed || !preempted()) {
                throw new IllegalStateException("only a preempted sequence can be staged for its resume (closed " + closed + ", "
                        + seq.state() + ")");
            }
            return kv.stageForResume(seq);
        }

        /**
         * Resumes a preempted sequence: loads whatever of its committed blocks is still cached,
         * staged ({@link #stageForResume}) or stored, then recomputes the rest of its tokens (at
         * least the last).
         *
         * @return the logits after its last token ({@code [vocab]}: the sequence's own array, valid
         *         until its next step), or null when the KV cache has no room for all its tokens (the
         *         sequence is then preempted again, holding nothing)
         */
        public float[] resume() {
            int loaded = Math.min(loadForResume(), length - 1); // the last is always computed: its logits are returned
            if (loaded < 0) {
                return null;
            }
            step(loaded, length - loaded, false);
            return logits;
        }

        /**
         * Resumes a preempted sequence whose next token is already chosen (a decoding sequence: the
         * logits after its last token were used before the preemption): loads whatever of its
         * committed blocks is still cached, staged ({@link #stageForResume}) or stored, and computes
         * nothing. The tokens whose KV did not come back (at least the tail after its last full
         * block, unless the sequence ends on a block boundary) are computed by its next
         * {@link #decode} or {@link ModelRunner#decodeBatch}, in the same pass as the new token. So
         * a resume costs no forward pass of its own, where {@link #resume} spends one to recompute
         * logits the caller already had.
         *
         * @return false when the KV cache has no room for all its tokens (the sequence is then
         *         preempted again, holding nothing)
         */
        public boolean resumeForDecode() {
            int loaded = loadForResume();
            if (loaded < 0) {
                return false;
            }
            computed = Math.min(loaded, length);
            return true;
        }

        /**
         * Loads the preempted sequence's blocks back and gives it slots for all its tokens; returns
         * the tokens whose KV came back, or -1 when there was no room (the sequence is preempted
         * again, holding nothing).
         *
         * @throws IllegalStateException if the sequence is closed or not preempted
         */
        private int loadForResume() {
            if (closed || !preempted()) {
                throw new IllegalStateException("sequence " + seq.id() + " is not preempted (" + seq.state() + ")");
            }
            kv.resume(seq).join();
            kv.poll();
            int loaded = seq.tokens(); // whole committed blocks
            if (kv.allocateTo(seq, Math.max(length, seq.tokens())) != AllocationStatus.ALLOCATED) {
                kv.preempt(seq);
                return -1;
            }
            return loaded;
        }

        /** Prompt tokens whose KV the prefill loaded from cached blocks instead of computing. */
        public int reusedTokens() {
            return reused;
        }

        /**
         * Runs the prompt: loads its cached prefix (whole blocks, never the last token), computes
         * the rest as one batch and commits its full blocks.
         *
         * @param everyPosition return the logits of every computed position, else of the last only
         * @return {@code [positions][vocab]}: the computed positions in order (the last is the prompt's
         *         last); with {@code everyPosition} new arrays, else the sequence's own logits array,
         *         valid until its next step
         */
        public float[][] prefill(int[] prompt, boolean everyPosition) {
            AllocationStatus status = beginPrefill(prompt);
            if (status != AllocationStatus.ALLOCATED) {
                throw new IllegalStateException("KV manager could not give sequence " + seq.id() + " slots for "
                        + prompt.length + " tokens: " + status + " (" + kv.freeSlots() + " free slots)");
            }
            return timedPrefill(prompt.length, everyPosition);
        }

        /**
         * {@link #prefill}, except that a KV cache without room now ({@link AllocationStatus#WAIT} or
         * {@link AllocationStatus#NO_SPACE}) returns null instead of throwing; the sequence is then
         * spent and must be closed.
         */
        public float[][] prefillIfRoom(int[] prompt, boolean everyPosition) {
            if (beginPrefill(prompt) != AllocationStatus.ALLOCATED) {
                return null;
            }
            return timedPrefill(prompt.length, everyPosition);
        }

        /**
         * Computes the prompt's tokens after the reused prefix, telling the recompute meter how many
         * and how long they took.
         */
        private float[][] timedPrefill(int promptLength, boolean everyPosition) {
            RecomputeMeter meter = recomputeMeter;
            long start = System.nanoTime();
            int n = promptLength - reused;
            float[][] every = step(reused, n, everyPosition);
            long nanos = System.nanoTime() - start;
            kv.recordPrefill(n, nanos); // what the KV manager weighs a slow load against
            if (meter != null) {
                meter.recordPrefill(n, nanos);
            }
            return everyPosition ? every : new float[][] {logits};
        }

        /** Appends the prompt, loads its cached prefix and allocates slots for all of it. */
        private AllocationStatus beginPrefill(int[] prompt) {
            if (closed || length != 0) {
                throw new IllegalStateException("prefill needs a fresh open sequence; this one holds " + length + " tokens");
            }
            if (prompt.length == 0) {
                throw new IllegalArgumentException("a prompt needs at least one token");
            }
            append(prompt, prompt.length);
            PrefixMatch match = kv.worthLoading(kv.match(prompt, prompt.length - 1)); // a block slower to load than to recompute is recomputed
            if (match.blocks() > 0) {
                LoadOutcome outcome = kv.load(match, seq).join();
                kv.poll();
                reused = Math.min(seq.tokens(), outcome.loadedBlocks() * geometry.blockTokens());
            }
            return kv.allocateTo(seq, prompt.length);
        }

        /**
         * Appends {@code token} and returns the logits after it ({@code [vocab]}: the sequence's own
         * array, overwritten by its next step; copy it to keep it). The first decode after
         * {@link #resumeForDecode} also computes the tokens whose KV did not come back, in the same
         * pass. A call that throws appends
         * nothing (see {@link #decodeBatch} on what a failed pass leaves), so the same token may be
         * decoded again.
         */
        public float[] decode(int token) {
            if (closed || length == 0) {
                throw new IllegalStateException("decode needs an open sequence after its prefill");
            }
            checkToken(token);
            append(token);
            try {
                step(computed, length - computed, false); // one token, more after resumeForDecode
            } catch (RuntimeException | Error e) {
                length--; // the token was not decoded: the sequence is as before the call
                throw e;
            }
            return logits;
        }

        private void append(int[] more, int n) {
            for (int i = 0; i < n; i++) {
                checkToken(more[i]);
            }
            if (length + n > tokens.length) {
                tokens = Arrays.copyOf(tokens, Math.max(length + n, tokens.length * 2));
            }
            System.arraycopy(more, 0, tokens, length, n);
            length += n;
        }

        /** Appends one token, already checked. */
        private void append(int token) {
            if (length == tokens.length) {
                tokens = Arrays.copyOf(tokens, tokens.length * 2);
            }
            tokens[length++] = token;
        }

        /**
         * Runs tokens {@code [start, start + n)} alone: the last one's logits into {@link #logits}.
         *
         * @return with {@code everyPosition}, the logits of every computed position (new arrays), else null
         */
        private float[][] step(int start, int n, boolean everyPosition) {
            AllocationStatus status = kv.allocateTo(seq, start + n);
            if (status != AllocationStatus.ALLOCATED) {
                throw new IllegalStateException("KV manager could not give sequence " + seq.id() + " slots for "
                        + (start + n) + " tokens: " + status + " (" + kv.freeSlots() + " free slots)");
            }
            batch.clear();
            addTo(batch, start, n);
            float[][] every;
            try {
                every = forward.forward(batch, everyPosition);
            } finally {
                batch.clear();
            }
            kv.commit(seq, tokens, start + n);
            computed = start + n;
            return every;
        }

        /** Adds this sequence's tokens {@code [start, start + n)} to {@code b} as one span, its block views synced. */
        private void addTo(ForwardPass.Batch b, int start, int n) {
            blocks.sync(seq);
            b.add(tokens, start, n, blocks, logits);
        }

        /** Slots for the first {@code total} tokens (a no-op when reserved already), or an exception naming the status. */
        private void requireSlotsFor(int total) {
            AllocationStatus status = kv.allocateTo(seq, Math.max(total, seq.tokens()));
            if (status != AllocationStatus.ALLOCATED) {
                throw new IllegalStateException("KV manager could not give sequence " + seq.id() + " slots for "
                        + total + " tokens: " + status + " (" + kv.freeSlots() + " free slots); reserve them first");
            }
        }

        private ModelRunner runner() {
            return ModelRunner.this;
        }

        /** Releases the sequence's blocks; committed ones stay cached. Idempotent. */
        @Override
        public void close() {
            if (!closed) {
                closed = true;
                kv.release(seq);
            }
        }
    }

    /**
     * Decodes one token for each of several sequences in one forward pass: appends {@code tokens[i]}
     * to {@code sequences.get(i)} and returns the logits after it ({@code [batch][vocab]}: the outer
     * array is the runner's, each row the sequence's own logits array, all valid until the next
     * call; copy what must be kept). A sequence resumed with {@link Sequence#resumeForDecode} and
     * not decoded since brings the tokens its resume did not load as well, as one span of rows
     * ending with its new token. Every
     * weight matrix is read once for the whole batch (a matmul over the batch's rows; MoE experts
     * over the tokens routed to them, in the token groups of the pager's plan), while attention runs
     * per sequence over its own paged KV. Each sequence's logits are bit-identical to its own
     * {@link Sequence#decode} (see the class comment). The sequences must be distinct, running and
     * prefilled, and hold KV slots for their next token already ({@link Sequence#reserve}); a
     * sequence without them fails the call before anything is computed.
     *
     * <p>A call that throws (a view of a block, a kernel, an expert page-in or a commit failed)
     * appends nothing: every sequence keeps the tokens it had before the call and the slots it
     * reserved, so each may decode the same token again, alone or in another batch. What the
     * failed pass wrote into the KV slots of the new position (past each sequence's tokens) is
     * overwritten when that token is decoded again; a block the pass committed before the failure
     * holds exactly the KV that decoding the token again writes (the outputs are deterministic), so
     * its key stays true.
     */
    public float[][] decodeBatch(List<Sequence> sequences, int[] tokens) {
        if (sequences.size() != tokens.length) {
            throw new IllegalArgumentException(sequences.size() + " sequences but " + tokens.length + " tokens");
        }
        for (int i = 0; i < sequences.size(); i++) {
            Sequence s = sequences.get(i);
            if (s.runner() != this) {
                throw new IllegalArgumentException("sequence " + i + " belongs to another runner");
            }
            for (int j = 0; j < i; j++) {
                if (sequences.get(j) == s) {
                    throw new IllegalArgumentException("sequence " + s.seq.id() + " appears twice in the batch (at " + j
                            + " and " + i + ")");
                }
            }
            checkToken(tokens[i]);
            if (s.closed || s.length == 0 || s.preempted()) {
                throw new IllegalStateException("sequence " + s.seq.id() + " cannot decode: it needs to be open, prefilled and"
                        + " running (closed " + s.closed + ", " + s.length + " tokens, " + s.seq.state() + ")");
            }
        }
        int count = sequences.size();
        for (int i = 0; i < count; i++) {
            Sequence s = sequences.get(i);
            s.requireSlotsFor(s.length + 1);
        }
        if (batchLogits.length != count) {
            batchLogits = new float[count][];
        }
        batch.clear();
        int appended = 0; // sequences [0, appended) hold their new token
        try {
            for (int i = 0; i < count; i++) {
                Sequence s = sequences.get(i);
                s.append(tokens[i]);
                appended++;
                s.addTo(batch, s.computed, s.length - s.computed); // one token, more after resumeForDecode
                batchLogits[i] = s.logits;
            }
            if (count > 0) {
                forward.forward(batch, false);
            }
            for (int i = 0; i < count; i++) {
                Sequence s = sequences.get(i);
                kv.commit(s.seq, s.tokens, s.length);
                s.computed = s.length;
            }
        } catch (RuntimeException | Error e) {
            for (int i = 0; i < appended; i++) {
                sequences.get(i).length--; // not decoded: each sequence is as before the call
            }
            throw e;
        } finally {
            batch.clear();
        }
        return batchLogits;
    }

    private void checkToken(int token) {
        if (token < 0 || token >= c.vocabSize()) {
            throw new IllegalArgumentException("token " + token + " is outside the vocabulary [0, " + c.vocabSize() + ")");
        }
    }

}
