package dev.strata.engine.forward;

import dev.strata.cache.expert.ExpertLayout;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.TokenGroups;
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
import dev.strata.engine.kernel.PagedKv;
import dev.strata.engine.kernel.Rope;
import dev.strata.engine.kernel.RowStack;
import dev.strata.engine.kernel.VectorKernels;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelWeights;
import dev.strata.engine.model.QkNorm;
import dev.strata.engine.model.Tensor;
import dev.strata.memory.Tier;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The optimised forward pass of one decoder-only transformer (Qwen3-MoE, Mixtral, OLMoE, Llama,
 * Qwen3): a prefill of a sequence's prompt, then one token per decode step, either for one
 * sequence ({@link Sequence#decode}) or for several in one pass ({@link #decodeBatch}: the weights
 * are read once for the whole batch, attention runs per sequence over its own KV). Activations are
 * float; every matrix product, norm, activation and attention runs through {@link Kernels},
 * {@link VectorKernels} and {@link Rope}.
 *
 * <p>Memory it does not own:
 * <ul>
 *   <li>KV: the sequence's blocks come from a {@link KvBlockManager} whose layout keeps each block contiguous in the
 *       canonical order ({@code StridedKvLayout.blockMajor}, or a resizable
 *       {@code TierSlotKvLayout} of DEVICE allocations); the runner writes each
 *       token's K and V (after q/k norm and RoPE, as FP32) into the slot the manager hands out,
 *       attends through {@link PagedKv} over the sequence's blocks, and commits every full block
 *       under its prefix key, so a later prompt sharing the prefix loads those blocks
 *       ({@code match}/{@code load}) instead of recomputing them. The last prompt token is always
 *       computed, so the logits of the prompt exist even when every block of it is cached.</li>
 *   <li>Experts: with an {@link ExpertPager} (over masters made by {@link #loadMasters}), each MoE
 *       layer pages the routed experts of the batch and reads each expert's gate/up/down from the
 *       slot its {@code expert_map} names. When the batch's routed union exceeds the layer's
 *       capacity, the batch runs in the token groups of {@link ExpertPager#plan}. Without a pager
 *       the experts are read from the model's mapped tensors.</li>
 * </ul>
 *
 * <p>Determinism: each token's outputs are computed in the same order whatever the batch (one
 * prompt's rows or several sequences' decode rows), its grouping, the thread count or where the
 * weights and KV blocks came from (every matmul element is accumulated exactly as the matvec of its
 * row, attention reduces in a fixed order per row, the MoE sums its top-k experts in rank order
 * whichever batch each expert ran in). So the logits are bit-identical paged or not, at any expert cap, cold or
 * with a prefix hit, at any kernel thread count.
 *
 * <p>Threads: one thread drives a runner and its sequences (the KV manager's and pager's driving
 * thread); the kernels fan out over their pool.
 */
public final class ModelRunner {
    private static final ValueLayout.OfFloat KV_FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Expert image tensors, in the order of {@link #expertLayout}. */
    public static final int GATE = 0;
    public static final int UP = 1;
    public static final int DOWN = 2;

    private final ModelWeights weights;
    private final ModelConfig c;
    private final Kernels kernels;
    private final KvBlockManager kv;
    private final KvGeometry geometry;
    private final TokenSelection allTokens; // every token of a block: a block's KV is read whole
    private final ExpertPager pager; // null: experts read from the mapped weights
    private final int[] moeIndex; // [layers] index of the layer among MoE layers (pager layer), -1 when dense
    private final Rope rope;
    private final float eps;
    private long groupedLayerRuns; // MoE layer runs whose batch was split into more than one token group
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
     * {@code TierSlotKvLayout} whose slots are DEVICE allocations (resizable: the runner looks a
     * block's memory up at every step, so the slots may change between steps).
     *
     * @throws IllegalArgumentException if the geometry is not the model's or a block is not one segment
     */
    public ModelRunner(ModelWeights weights, Kernels kernels, KvBlockManager kv, ExpertPager pager) {
        this.weights = Objects.requireNonNull(weights, "weights");
        this.c = weights.config();
        this.kernels = Objects.requireNonNull(kernels, "kernels");
        this.kv = Objects.requireNonNull(kv, "kv manager");
        this.geometry = kv.layout().geometry();
        this.allTokens = TokenSelection.all(geometry.blockTokens());
        KvGeometry want = kvGeometry(c, geometry.blockTokens());
        if (!geometry.equals(want)) {
            throw new IllegalArgumentException("the KV manager's geometry " + geometry + " is not the model's " + want);
        }
        List<MemorySegment> first = new ArrayList<>(2);
        kv.layout().segments(0, allTokens, first);
        if (first.size() != 1 || first.get(0).byteSize() != geometry.bytesPerBlock()) {
            throw new IllegalArgumentException("the KV manager's layout " + kv.layout() + " does not keep a block in one "
                    + "contiguous segment of " + geometry.bytesPerBlock() + " bytes (it gives " + first.size() + " segments)");
        }
        this.moeIndex = moeLayers(c);
        int moeCount = (int) Arrays.stream(moeIndex).filter(i -> i >= 0).count();
        if (pager != null && (pager.layers() != moeCount || pager.experts() != c.numExperts())) {
            throw new IllegalArgumentException("expert pager has " + pager.layers() + " layers of " + pager.experts()
                    + " experts; the model has " + moeCount + " MoE layers of " + c.numExperts());
        }
        this.pager = pager;
        this.rope = new Rope(c.headDim(), c.ropeTheta(), c.ropeScaling());
        this.eps = (float) c.rmsNormEps();
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
        int layers = (int) Arrays.stream(index).filter(i -> i >= 0).count();
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

    public ModelConfig config() {
        return c;
    }

    /** MoE layer runs so far whose batch exceeded the pager's capacity and ran in several token groups. */
    public long groupedLayerRuns() {
        return groupedLayerRuns;
    }

    /**
     * Sets the observer told the routed experts of every token at every MoE layer, or null (the
     * default) for none. Runner's thread only.
     */
    public void routingObserver(RoutingObserver observer) {
        this.routingObserver = observer;
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
     * One sequence's state: its tokens and its KV blocks. Driven by the runner's thread; close it
     * to release its blocks (committed ones stay cached for later prefix hits).
     */
    public final class Sequence implements AutoCloseable {
        private final KvSequence seq;
        private int[] tokens = new int[64]; // tokens so far, [0, length)
        private int length;
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
         * Resumes a preempted sequence: loads whatever of its committed blocks is still cached or
         * stored, then recomputes the rest of its tokens (at least the last).
         *
         * @return the logits after its last token ({@code [vocab]}), or null when the KV cache has no
         *         room for all its tokens (the sequence is then preempted again, holding nothing)
         */
        public float[] resume() {
            if (closed || !preempted()) {
                throw new IllegalStateException("sequence " + seq.id() + " is not preempted (" + seq.state() + ")");
            }
            kv.resume(seq).join();
            kv.poll();
            int loaded = Math.min(seq.tokens(), length - 1); // tokens whose KV came back; the last is always computed
            if (kv.allocateTo(seq, Math.max(length, seq.tokens())) != AllocationStatus.ALLOCATED) {
                kv.preempt(seq);
                return null;
            }
            return step(loaded, length - loaded, false)[0];
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
         * @return {@code [positions][vocab]}: the computed positions in order (the last is the prompt's last)
         */
        public float[][] prefill(int[] prompt, boolean everyPosition) {
            AllocationStatus status = beginPrefill(prompt);
            if (status != AllocationStatus.ALLOCATED) {
                throw new IllegalStateException("KV manager could not give sequence " + seq.id() + " slots for "
                        + prompt.length + " tokens: " + status + " (" + kv.freeSlots() + " free slots)");
            }
            return timedPrefill(prompt.length - reused, everyPosition);
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
            return timedPrefill(prompt.length - reused, everyPosition);
        }

        /** Computes the prompt's {@code n} tokens after the reused prefix, telling the recompute meter how long they took. */
        private float[][] timedPrefill(int n, boolean everyPosition) {
            RecomputeMeter meter = recomputeMeter;
            long start = meter == null ? 0 : System.nanoTime();
            float[][] out = step(reused, n, everyPosition);
            if (meter != null) {
                meter.recordPrefill(n, System.nanoTime() - start);
            }
            return out;
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
            PrefixMatch match = kv.match(prompt, prompt.length - 1);
            if (match.blocks() > 0) {
                LoadOutcome outcome = kv.load(match, seq).join();
                kv.poll();
                reused = Math.min(seq.tokens(), outcome.loadedBlocks() * geometry.blockTokens());
            }
            return kv.allocateTo(seq, prompt.length);
        }

        /** Appends {@code token} and returns the logits after it ({@code [vocab]}). */
        public float[] decode(int token) {
            if (closed || length == 0) {
                throw new IllegalStateException("decode needs an open sequence after its prefill");
            }
            append(new int[] {token}, 1);
            return step(length - 1, 1, false)[0];
        }

        private void append(int[] more, int n) {
            for (int i = 0; i < n; i++) {
                if (more[i] < 0 || more[i] >= c.vocabSize()) {
                    throw new IllegalArgumentException("token " + more[i] + " is outside the vocabulary [0, " + c.vocabSize() + ")");
                }
            }
            if (length + n > tokens.length) {
                tokens = Arrays.copyOf(tokens, Math.max(length + n, tokens.length * 2));
            }
            System.arraycopy(more, 0, tokens, length, n);
            length += n;
        }

        private float[][] step(int start, int n, boolean everyPosition) {
            AllocationStatus status = kv.allocateTo(seq, start + n);
            if (status != AllocationStatus.ALLOCATED) {
                throw new IllegalStateException("KV manager could not give sequence " + seq.id() + " slots for "
                        + (start + n) + " tokens: " + status + " (" + kv.freeSlots() + " free slots)");
            }
            float[][] out = forward(List.of(new Span(tokens, start, n, blocks())), everyPosition);
            kv.commit(seq, tokens, start + n);
            return out;
        }

        /** Slots for the first {@code total} tokens (a no-op when reserved already), or an exception naming the status. */
        private void requireSlotsFor(int total) {
            AllocationStatus status = kv.allocateTo(seq, Math.max(total, seq.tokens()));
            if (status != AllocationStatus.ALLOCATED) {
                throw new IllegalStateException("KV manager could not give sequence " + seq.id() + " slots for "
                        + total + " tokens: " + status + " (" + kv.freeSlots() + " free slots); reserve them first");
            }
        }

        private List<MemorySegment> blocks() {
            List<MemorySegment> blocks = new ArrayList<>(seq.blockCount());
            for (int i = 0; i < seq.blockCount(); i++) {
                kv.layout().segments(seq.slot(i), allTokens, blocks); // one segment per block (checked at construction)
            }
            return blocks;
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
     * to {@code sequences.get(i)} and returns the logits after it ({@code [batch][vocab]}). Every
     * weight matrix is read once for the whole batch (a matmul over the batch's rows; MoE experts
     * over the tokens routed to them, in the token groups of the pager's plan), while attention runs
     * per sequence over its own paged KV. Each sequence's logits are bit-identical to its own
     * {@link Sequence#decode} (see the class comment). The sequences must be distinct, running and
     * prefilled, and hold KV slots for their next token already ({@link Sequence#reserve}); a
     * sequence without them fails the call before anything is computed.
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
            if (tokens[i] < 0 || tokens[i] >= c.vocabSize()) {
                throw new IllegalArgumentException("token " + tokens[i] + " is outside the vocabulary [0, " + c.vocabSize() + ")");
            }
            if (s.closed || s.length == 0 || s.preempted()) {
                throw new IllegalStateException("sequence " + s.seq.id() + " cannot decode: it needs to be open, prefilled and"
                        + " running (closed " + s.closed + ", " + s.length + " tokens, " + s.seq.state() + ")");
            }
        }
        if (sequences.isEmpty()) {
            return new float[0][];
        }
        for (Sequence s : sequences) {
            s.requireSlotsFor(s.length + 1);
        }
        for (int i = 0; i < sequences.size(); i++) {
            sequences.get(i).append(new int[] {tokens[i]}, 1);
        }
        List<Span> spans = new ArrayList<>(sequences.size());
        for (Sequence s : sequences) {
            spans.add(new Span(s.tokens, s.length - 1, 1, s.blocks()));
        }
        float[][] out = forward(spans, false);
        for (Sequence s : sequences) {
            kv.commit(s.seq, s.tokens, s.length);
        }
        return out;
    }

    /**
     * One sequence's rows of a forward batch: its tokens {@code [start, start + n)} over its KV
     * blocks (in token order, enough for {@code start + n} tokens).
     */
    private record Span(int[] tokens, int start, int n, List<MemorySegment> blocks) {
    }

    /**
     * Computes the rows of every span in one pass: each row's K and V written into its span's
     * blocks, attention per row over its span's KV up to it, every projection and expert as one
     * matmul over all rows. Returns, span by span, the logits of every computed position or of each
     * span's last.
     */
    private float[][] forward(List<Span> spans, boolean everyPosition) {
        int h = c.hiddenSize();
        int qDim = c.qDim();
        int kvDim = c.kvDim();
        int hd = c.headDim();
        int bt = geometry.blockTokens();
        int n = 0;
        for (Span s : spans) {
            n += s.n();
        }
        int[] rowSpan = new int[n]; // [n] the span of each row
        int[] rowPos = new int[n]; // [n] the row's position in its sequence
        for (int si = 0, i = 0; si < spans.size(); si++) {
            Span s = spans.get(si);
            for (int k = 0; k < s.n(); k++, i++) {
                rowSpan[i] = si;
                rowPos[i] = s.start() + k;
            }
        }
        float[] x = new float[n * h]; // [n, H] residual stream
        float[] xn = new float[n * h]; // [n, H] normed
        float[] q = new float[n * qDim]; // [n, heads × hd]
        float[] k = new float[n * kvDim]; // [n, kvHeads × hd]
        float[] v = new float[n * kvDim];
        float[] att = new float[n * qDim];
        float[] proj = new float[n * h];
        Tensor embed = weights.embedding();
        for (int i = 0; i < n; i++) {
            long row = (long) spans.get(rowSpan[i]).tokens()[rowPos[i]] * h;
            for (int j = 0; j < h; j++) {
                x[i * h + j] = embed.getFloat(row + j);
            }
        }
        float[][] ropeTables = new float[n][];
        for (int i = 0; i < n; i++) {
            ropeTables[i] = rope.table(rowPos[i]);
        }
        for (int l = 0; l < c.numHiddenLayers(); l++) {
            ModelWeights.Layer layer = weights.layer(l);
            ModelWeights.Attention a = layer.attention();
            normRows(x, layer.inputNorm(), xn, n, h);
            project(stack(a.q(), a.k(), a.v()), xn, n, new float[][] {q, k, v});
            addBias(q, a.qBias(), n, qDim);
            addBias(k, a.kBias(), n, kvDim);
            addBias(v, a.vBias(), n, kvDim);
            if (c.clipQkv() != null) {
                float clip = c.clipQkv().floatValue();
                clamp(q, clip);
                clamp(k, clip);
                clamp(v, clip);
            }
            if (c.qkNorm() == QkNorm.PER_HEAD) {
                normRows(q, a.qNorm(), q, n * c.numAttentionHeads(), hd);
                normRows(k, a.kNorm(), k, n * c.numKeyValueHeads(), hd);
            } else if (c.qkNorm() == QkNorm.FULL_WIDTH) {
                normRows(q, a.qNorm(), q, n, qDim);
                normRows(k, a.kNorm(), k, n, kvDim);
            }
            for (int i = 0; i < n; i++) {
                rope.apply(q, i * qDim, c.numAttentionHeads(), ropeTables[i]);
                rope.apply(k, i * kvDim, c.numKeyValueHeads(), ropeTables[i]);
            }
            for (int si = 0, i = 0; si < spans.size(); si++) {
                Span s = spans.get(si);
                PagedKv all = new PagedKv(geometry, l, s.blocks(), lastTokens(s.start() + s.n()));
                for (int r = 0; r < s.n(); r++, i++) {
                    int p = rowPos[i];
                    MemorySegment block = all.block(p);
                    for (int kh = 0; kh < c.numKeyValueHeads(); kh++) {
                        MemorySegment.copy(k, i * kvDim + kh * hd, block, KV_FLOAT, all.keyIndex(p, kh) * 4, hd);
                        MemorySegment.copy(v, i * kvDim + kh * hd, block, KV_FLOAT, all.valueIndex(p, kh) * 4, hd);
                    }
                }
            }
            PagedKv[] upTo = new PagedKv[n]; // [n] each row's KV up to and including it
            for (int i = 0; i < n; i++) {
                int p = rowPos[i];
                upTo[i] = new PagedKv(geometry, l, spans.get(rowSpan[i]).blocks().subList(0, p / bt + 1), p % bt + 1);
            }
            kernels.attention(q, 0, c.numAttentionHeads(), upTo, n, att, 0);
            project(a.o(), att, n, proj);
            addBias(proj, a.oBias(), n, h);
            VectorKernels.add(x, 0, proj, 0, x, 0, n * h);
            normRows(x, layer.postAttentionNorm(), xn, n, h);
            if (layer.moe()) {
                moe(l, layer, xn, proj, n);
            } else {
                denseMlp(layer.mlp(), xn, proj, n);
            }
            VectorKernels.add(x, 0, proj, 0, x, 0, n * h);
        }
        // the rows whose logits are returned, span by span
        int m = 0;
        for (Span s : spans) {
            m += everyPosition ? s.n() : 1;
        }
        int[] outRows = new int[m];
        for (int si = 0, i = 0, o = 0; si < spans.size(); si++) {
            int sn = spans.get(si).n();
            for (int r = 0; r < sn; r++, i++) {
                if (everyPosition || r == sn - 1) {
                    outRows[o++] = i;
                }
            }
        }
        float[] last = new float[m * h]; // [m, H] final-normed rows
        for (int o = 0; o < m; o++) {
            VectorKernels.rmsNorm(x, outRows[o] * h, weights.finalNorm().data(), weights.finalNorm().dtype(), eps, last, o * h, h);
        }
        int vocab = c.vocabSize();
        float[][] logits = new float[m][];
        if (m == 1 || (long) m * vocab > Integer.MAX_VALUE / 2) {
            for (int o = 0; o < m; o++) { // one row (or too many for one array): per-row matvec, the same bits
                logits[o] = new float[vocab];
                kernels.matvec(weights.lmHead(), last, o * h, logits[o], 0);
            }
            return logits;
        }
        float[] all = new float[m * vocab]; // [m, vocab]
        project(weights.lmHead(), last, m, all);
        for (int o = 0; o < m; o++) {
            logits[o] = Arrays.copyOfRange(all, o * vocab, (o + 1) * vocab);
        }
        return logits;
    }

    /** {@link #project(DType, MemorySegment, int, int, float[], int, float[])} with a 2-D weight tensor {@code [out, in]}. */
    private void project(Tensor w, float[] x, int n, float[] y) {
        project(w.dtype(), w.data(), Math.toIntExact(w.dim(0)), Math.toIntExact(w.dim(1)), x, n, y);
    }

    /**
     * {@code Y = X Wᵀ} for {@code n} rows of X ({@code [n, cols]}) into Y ({@code [n, rows]}), reading
     * W once per tile of {@value #MATMUL_TILE} rows: whole tiles go through the matmul kernel (which
     * shares each weight load among a tile); two or three rows left over are padded to a tile with
     * copies of their last row; a single row (or one left over) goes through the matvec kernel,
     * which is faster for one row than the matmul's single-row path. Every element gets the same
     * bits whichever way its row went.
     */
    private void project(DType dtype, MemorySegment w, int rows, int cols, float[] x, int n, float[] y) {
        int tiled = n - n % MATMUL_TILE;
        if (tiled > 0) {
            kernels.matmul(dtype, w, rows, cols, x, 0, tiled, y, 0);
        }
        int rest = n - tiled;
        if (rest == 1) {
            kernels.matvec(dtype, w, rows, cols, x, tiled * cols, y, tiled * rows);
        } else if (rest > 1) {
            float[] xt = new float[MATMUL_TILE * cols]; // [tile, cols] the rows left, the last repeated
            for (int b = 0; b < MATMUL_TILE; b++) {
                System.arraycopy(x, (tiled + Math.min(b, rest - 1)) * cols, xt, b * cols, cols);
            }
            float[] yt = new float[MATMUL_TILE * rows]; // [tile, rows]
            kernels.matmul(dtype, w, rows, cols, xt, 0, MATMUL_TILE, yt, 0);
            System.arraycopy(yt, 0, y, tiled * rows, rest * rows);
        }
    }

    /** The matrices {@code [out, in]} of one dtype and width as one {@link RowStack}, in order. */
    private static RowStack stack(Tensor... ws) {
        MemorySegment[] data = new MemorySegment[ws.length];
        int[] rows = new int[ws.length];
        for (int p = 0; p < ws.length; p++) {
            if (ws[p].rank() != 2 || ws[p].dtype() != ws[0].dtype() || ws[p].dim(1) != ws[0].dim(1)) {
                throw new IllegalArgumentException("tensor " + ws[p] + " cannot be stacked with " + ws[0]
                        + ": stacked projections need 2-D [out, in] matrices of one dtype and input width");
            }
            data[p] = ws[p].data();
            rows[p] = Math.toIntExact(ws[p].dim(0));
        }
        return new RowStack(ws[0].dtype(), Math.toIntExact(ws[0].dim(1)), data, rows);
    }

    /**
     * {@link #project(DType, MemorySegment, int, int, float[], int, float[])} of every part of
     * {@code stack} over the same {@code n} rows of X, in one kernel call per tile shape instead of
     * one per matrix: {@code ys[p]} ({@code [n, rows(p)]}) gets exactly the bits a projection of part
     * {@code p} alone gives.
     */
    private void project(RowStack stack, float[] x, int n, float[][] ys) {
        int cols = stack.cols();
        int tiled = n - n % MATMUL_TILE;
        if (tiled > 0) {
            kernels.matmul(stack, x, 0, tiled, ys);
        }
        int rest = n - tiled;
        if (rest == 0) {
            return;
        }
        if (n == 1) { // one row (a decode step): straight into the outputs
            kernels.matvec(stack, x, 0, ys);
            return;
        }
        int parts = stack.parts();
        float[][] tail = new float[parts][]; // [parts][rest or tile, rows(p)]
        for (int p = 0; p < parts; p++) {
            tail[p] = new float[(rest == 1 ? 1 : MATMUL_TILE) * stack.rows(p)];
        }
        if (rest == 1) {
            kernels.matvec(stack, x, tiled * cols, tail);
        } else {
            float[] xt = new float[MATMUL_TILE * cols]; // [tile, cols] the rows left, the last repeated
            for (int b = 0; b < MATMUL_TILE; b++) {
                System.arraycopy(x, (tiled + Math.min(b, rest - 1)) * cols, xt, b * cols, cols);
            }
            kernels.matmul(stack, xt, 0, MATMUL_TILE, tail);
        }
        for (int p = 0; p < parts; p++) {
            System.arraycopy(tail[p], 0, ys[p], tiled * stack.rows(p), rest * stack.rows(p));
        }
    }

    /** Tokens sharing each weight load in the matmul kernel. */
    private static final int MATMUL_TILE = 4;

    private int lastTokens(int total) {
        int bt = geometry.blockTokens();
        return (total - 1) % bt + 1;
    }

    private void normRows(float[] in, Tensor weight, float[] out, int rows, int width) {
        for (int r = 0; r < rows; r++) {
            VectorKernels.rmsNorm(in, r * width, weight.data(), weight.dtype(), eps, out, r * width, width);
        }
    }

    private static void addBias(float[] y, Tensor bias, int rows, int width) {
        if (bias == null) {
            return;
        }
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < width; j++) {
                y[r * width + j] += bias.getFloat(j);
            }
        }
    }

    private static void clamp(float[] y, float clip) {
        for (int i = 0; i < y.length; i++) {
            y[i] = Math.max(-clip, Math.min(clip, y[i]));
        }
    }

    private void denseMlp(ModelWeights.Mlp m, float[] xn, float[] out, int n) {
        int width = c.intermediateSize();
        float[] gate = new float[n * width];
        float[] up = new float[n * width];
        project(stack(m.gate(), m.up()), xn, n, new float[][] {gate, up});
        VectorKernels.swiglu(gate, 0, up, 0, gate, 0, n * width);
        project(m.down(), gate, n, out);
    }

    /**
     * The MoE block: router logits → softmax → top-k (rank order, ties to the lower index) →
     * renormalised when {@code norm_topk_prob} → Σ weight · expert SwiGLU, summed in rank order.
     */
    private void moe(int l, ModelWeights.Layer layer, float[] xn, float[] out, int n) {
        int h = c.hiddenSize();
        int experts = c.numExperts();
        int topK = c.numExpertsPerTok();
        float[] probs = new float[n * experts];
        project(layer.router(), xn, n, probs);
        int[][] routed = new int[n][topK]; // [token][rank] expert
        float[][] gates = new float[n][topK]; // [token][rank] weight
        for (int i = 0; i < n; i++) {
            VectorKernels.softmax(probs, i * experts, experts);
            topK(probs, i * experts, experts, routed[i], gates[i]);
            if (routingObserver != null) {
                routingObserver.routed(moeIndex[l], i, routed[i]);
            }
            if (c.normTopkProb()) {
                float sum = 0;
                for (int r = 0; r < topK; r++) {
                    sum += gates[i][r];
                }
                for (int r = 0; r < topK; r++) {
                    gates[i][r] /= sum;
                }
            }
        }
        Arrays.fill(out, 0, n * h, 0f);
        ExpertBatch batch = new ExpertBatch(Math.min(n, EXPERT_CHUNK_TOKENS));
        if (pager == null) {
            int[] all = new int[n];
            for (int i = 0; i < n; i++) {
                all[i] = i;
            }
            batch.run(all, routed, gates, xn, out, e -> {
                ModelWeights.Mlp m = layer.experts().get(e).mlp();
                return new ExpertWeights(m.gate().dtype(), m.gate().data(), m.up().data(), m.down().data());
            });
            return;
        }
        int pl = moeIndex[l];
        DType dtype = c.torchDtype();
        TokenGroups groups = pager.plan(pl, routed);
        if (groups.count() > 1) {
            groupedLayerRuns++;
        }
        for (int g = 0; g < groups.count(); g++) {
            int[] members = groups.group(g);
            int[] map = pager.pageAsync(pl, routed, members); // fetches in flight while resident experts run
            batch.run(members, routed, gates, xn, out, new ExpertSource() {
                @Override
                public ExpertWeights of(int e) {
                    pager.awaitExpert(pl, e);
                    int slot = map[e];
                    return new ExpertWeights(dtype, pager.tensor(pl, slot, GATE), pager.tensor(pl, slot, UP),
                            pager.tensor(pl, slot, DOWN));
                }

                @Override
                public boolean ready(int e) {
                    return !pager.fetching(pl, e);
                }
            });
        }
    }

    /** Tokens whose expert outputs are buffered together: bounds the buffer at chunk × topK × hidden floats. */
    private static final int EXPERT_CHUNK_TOKENS = 64;

    /** One expert's gate, up and down matrices ({@code [width, H]}, {@code [width, H]}, {@code [H, width]}). */
    private record ExpertWeights(DType dtype, MemorySegment gate, MemorySegment up, MemorySegment down) {
    }

    /** Where the weights of expert {@code e} are for the tokens being run. */
    @FunctionalInterface
    private interface ExpertSource {
        /** The expert's weights, waiting for them to arrive if they are being fetched. */
        ExpertWeights of(int expert);

        /** Whether the expert's weights are in place now (experts not ready run after those that are). */
        default boolean ready(int expert) {
            return true;
        }
    }

    /**
     * Runs the experts of a set of tokens expert by expert: each expert's matrices are read once for
     * all the (token, rank) pairs routed to it (a matmul over their gathered rows), each pair's
     * output is buffered, and then every token sums its outputs in rank order,
     * {@code out[i] += gate[i][r] · y[i][r]} for r = 0, 1, ..., which is exactly what a token run
     * alone computes (each matmul row equals the matvec of that row). Scratch is sized once per
     * layer call. Runner's thread.
     */
    private final class ExpertBatch {
        private final int chunk; // tokens per chunk
        private final int topK = c.numExpertsPerTok();
        private final int h = c.hiddenSize();
        private final int width = c.expertIntermediateSize();
        private final float[] ys; // [chunk × topK, H] each (token, rank) pair's expert output
        private final float[] xs; // [chunk × topK, H] gathered input rows of one expert
        private final float[] gate; // [chunk × topK, width]
        private final float[] up; // [chunk × topK, width]
        private final float[] down; // [chunk × topK, H]
        private final int[] pairs; // [chunk × topK] pair index (token in chunk × topK + rank) routed to the current expert
        private final int[] pairCount = new int[c.numExperts()]; // [experts] pairs routed to each expert in the chunk
        private final int[] pairStart = new int[c.numExperts() + 1]; // [experts + 1] offsets into byExpert
        private final int[] byExpert; // [chunk × topK] pairs ordered by expert, then token, then rank
        private final float[][] gateUp; // {gate, up}: the outputs of an expert's stacked gate and up

        ExpertBatch(int chunk) {
            this.chunk = chunk;
            int rows = chunk * topK;
            ys = new float[rows * h];
            xs = new float[rows * h];
            gate = new float[rows * width];
            up = new float[rows * width];
            down = new float[rows * h];
            pairs = new int[rows];
            byExpert = new int[rows];
            gateUp = new float[][] {gate, up};
        }

        /** Adds the experts' weighted outputs of {@code tokens} (rows of xn) into their rows of {@code out}. */
        void run(int[] tokens, int[][] routed, float[][] gates, float[] xn, float[] out, ExpertSource source) {
            for (int from = 0; from < tokens.length; from += chunk) {
                int count = Math.min(chunk, tokens.length - from);
                runChunk(tokens, from, count, routed, gates, xn, out, source);
            }
        }

        private void runChunk(int[] tokens, int from, int count, int[][] routed, float[][] gates, float[] xn, float[] out,
                ExpertSource source) {
            Arrays.fill(pairCount, 0);
            for (int t = 0; t < count; t++) {
                for (int r = 0; r < topK; r++) {
                    pairCount[routed[tokens[from + t]][r]]++;
                }
            }
            pairStart[0] = 0;
            for (int e = 0; e < pairCount.length; e++) {
                pairStart[e + 1] = pairStart[e] + pairCount[e];
            }
            System.arraycopy(pairStart, 0, pairCount, 0, pairCount.length); // reused as fill cursors
            for (int t = 0; t < count; t++) {
                for (int r = 0; r < topK; r++) {
                    int e = routed[tokens[from + t]][r];
                    byExpert[pairCount[e]++] = t * topK + r;
                }
            }
            // the experts in place first, then those still arriving (each in its own slot of ys: the
            // order in which experts run does not change any output bit)
            for (int pass = 0; pass < 2; pass++) {
                runExperts(pass == 0, tokens, from, xn, source);
            }
            for (int t = 0; t < count; t++) {
                int i = tokens[from + t];
                for (int r = 0; r < topK; r++) {
                    float weight = gates[i][r];
                    int y = (t * topK + r) * h;
                    for (int j = 0; j < h; j++) {
                        out[i * h + j] += weight * ys[y + j];
                    }
                }
            }
        }

        /** Runs each expert with pairs in the chunk whose readiness is {@code ready}, into its pairs' rows of ys. */
        private void runExperts(boolean ready, int[] tokens, int from, float[] xn, ExpertSource source) {
            for (int e = 0; e < pairStart.length - 1; e++) {
                int m = pairStart[e + 1] - pairStart[e];
                if (m == 0 || source.ready(e) != ready) {
                    continue;
                }
                for (int p = 0; p < m; p++) {
                    int pair = byExpert[pairStart[e] + p];
                    pairs[p] = pair;
                    System.arraycopy(xn, tokens[from + pair / topK] * h, xs, p * h, h);
                }
                ExpertWeights w = source.of(e);
                project(RowStack.of(w.dtype(), h, w.gate(), width, w.up(), width), xs, m, gateUp);
                VectorKernels.swiglu(gate, 0, up, 0, gate, 0, m * width);
                project(w.dtype(), w.down(), h, width, gate, m, down);
                for (int p = 0; p < m; p++) {
                    System.arraycopy(down, p * h, ys, pairs[p] * h, h);
                }
            }
        }
    }

    /** The {@code ids.length} largest of {@code p[off, off + n)} in descending order (ties to the lower index). */
    static void topK(float[] p, int off, int n, int[] ids, float[] values) {
        int count = 0;
        for (int e = 0; e < n; e++) {
            float val = p[off + e];
            int at = count < ids.length ? count : ids.length;
            while (at > 0 && val > values[at - 1]) {
                at--;
            }
            if (at >= ids.length) {
                continue;
            }
            int last = Math.min(count, ids.length - 1);
            for (int j = last; j > at; j--) {
                ids[j] = ids[j - 1];
                values[j] = values[j - 1];
            }
            ids[at] = e;
            values[at] = val;
            count = Math.min(count + 1, ids.length);
        }
    }
}
