package dev.strata.engine.forward;

import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.TokenGroups;
import dev.strata.engine.kernel.RowStack;
import dev.strata.engine.kernel.VectorKernels;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelWeights;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The mixture-of-experts block of a forward pass: router logits → softmax → top-k (rank order, ties
 * to the lower index) → renormalised when {@code norm_topk_prob} → Σ weight · expert SwiGLU, summed
 * in rank order.
 *
 * <p>Design: the experts of a batch run expert by expert. Each expert's matrices are read once for
 * all the (token, rank) pairs routed to it (a matmul over their gathered rows), each pair's output
 * is buffered, and then every token sums its outputs in rank order,
 * {@code out[i] += gate[i][r] · y[i][r]} for r = 0, 1, ..., which is exactly what a token run alone
 * computes (each matmul row equals the matvec of that row). With an {@link ExpertPager} each MoE
 * layer pages the routed experts of the batch and reads each expert's gate/up/down from the slot
 * its {@code expert_map} names; when the batch's routed union exceeds the layer's capacity the batch
 * runs in the token groups of {@link ExpertPager#plan}, and within a group the experts already in
 * place run before those still arriving. Without a pager the experts are read from the model's
 * weight tensors.
 *
 * <p>Memory: the routing ({@code [rows, experts]} probabilities, {@code [rows][topK]} experts and
 * weights) and the expert scratch (gathered rows, gate/up/down outputs of up to
 * {@value #EXPERT_CHUNK_TOKENS} tokens × topK pairs) are allocated for the largest batch seen and
 * reused; the stacked gate/up of every in-place expert are built once, those of a pager slot when
 * the slot's tensors change.
 *
 * <p>Threads: the thread driving the owning {@link ForwardPass} (the pager's driving thread).
 */
final class MoeBlock {
    /** Tokens whose expert outputs are buffered together: bounds the scratch at chunk × topK × hidden floats. */
    static final int EXPERT_CHUNK_TOKENS = 64;

    private final ModelConfig c;
    private final Projector projector;
    private final ExpertPager pager; // null: experts read from the model's weight tensors
    private final int[] moeIndex; // [layers] index of the layer among MoE layers (pager layer), -1 when dense
    private final int h; // hidden width
    private final int width; // expert intermediate width
    private final int topK;
    private final int experts;
    private final RowStack[][] inPlaceGateUp; // [layers][experts] the mapped gate and up of each expert (null rows for dense layers)
    private final MemorySegment[][] inPlaceDown; // [layers][experts] the mapped down of each expert
    private final RowStack[][] slotGateUp; // [pager layers][slots] stacked gate/up of each slot, rebuilt when its tensors move
    private RoutingObserver routingObserver; // null: routing not reported (the default)
    private long groupedLayerRuns; // layer runs whose batch ran in more than one token group

    // routing of the batch, grown with it
    private int rows; // row capacity of the routing buffers
    private float[] probs; // [rows, experts] router logits, then probabilities
    private int[][] routed; // [rows][topK] expert of each rank
    private float[][] gates; // [rows][topK] weight of each rank
    private int[] allTokens; // [rows] 0, 1, ..., rows − 1: the one group of a batch run without a pager
    private int[][][] routedRows; // [rows + 1] the first n rows of routed as an array of length n, made when first needed

    // expert scratch, grown with the chunk
    private int chunk; // tokens per chunk the scratch holds
    private float[] ys; // [chunk × topK, H] each (token, rank) pair's expert output
    private float[] xs; // [chunk × topK, H] gathered input rows of one expert
    private float[] gate; // [chunk × topK, width]
    private float[] up; // [chunk × topK, width]
    private float[] down; // [chunk × topK, H]
    private float[][] gateUp; // {gate, up}: the outputs of an expert's stacked gate and up
    private int[] pairs; // [chunk × topK] pair index (token in chunk × topK + rank) routed to the current expert
    private int[] byExpert; // [chunk × topK] pairs ordered by expert, then token, then rank
    private final int[] pairCount; // [experts] pairs routed to each expert in the chunk
    private final int[] pairStart; // [experts + 1] offsets into byExpert

    // the group being run
    private int groupLayer; // pager layer of the group being run
    private int[] groupMap; // the pager's expert_map for the group being run

    MoeBlock(ModelWeights weights, Projector projector, ExpertPager pager, int[] moeIndex) {
        this.c = weights.config();
        this.projector = projector;
        this.pager = pager;
        this.moeIndex = moeIndex;
        this.h = c.hiddenSize();
        this.width = c.expertIntermediateSize();
        this.topK = c.numExpertsPerTok();
        this.experts = c.numExperts();
        this.pairCount = new int[experts];
        this.pairStart = new int[experts + 1];
        int layers = c.numHiddenLayers();
        inPlaceGateUp = new RowStack[layers][];
        inPlaceDown = new MemorySegment[layers][];
        for (int l = 0; l < layers; l++) {
            ModelWeights.Layer layer = weights.layer(l);
            if (!layer.moe()) {
                continue;
            }
            inPlaceGateUp[l] = new RowStack[experts];
            inPlaceDown[l] = new MemorySegment[experts];
            for (int e = 0; e < experts; e++) {
                ModelWeights.Mlp m = layer.experts().get(e).mlp();
                inPlaceGateUp[l][e] = RowStack.of(m.gate().dtype(), h, m.gate().data(), width, m.up().data(), width);
                inPlaceDown[l][e] = m.down().data();
            }
        }
        slotGateUp = pager == null ? null : new RowStack[pager.layers()][];
    }

    void routingObserver(RoutingObserver observer) {
        this.routingObserver = observer;
    }

    long groupedLayerRuns() {
        return groupedLayerRuns;
    }

    /** Writes the MoE output of the {@code n} rows of {@code xn} ({@code [n, H]}) of layer {@code l} into {@code out}. */
    void run(int l, ModelWeights.Layer layer, float[] xn, float[] out, int n) {
        ensureRows(n);
        projector.project(layer.router(), xn, n, probs);
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
        ensureChunk(Math.min(n, EXPERT_CHUNK_TOKENS));
        if (pager == null) {
            runGroup(l, allTokens, n, xn, out);
            return;
        }
        int pl = moeIndex[l];
        int[][] batchRouted = routedRows(n); // the pager reads one row per token of the batch
        TokenGroups groups = pager.plan(pl, batchRouted);
        if (groups.count() > 1) {
            groupedLayerRuns++;
        }
        for (int g = 0; g < groups.count(); g++) {
            int[] members = groups.group(g);
            groupLayer = pl;
            groupMap = pager.pageAsync(pl, batchRouted, members); // fetches in flight while resident experts run
            runGroup(l, members, members.length, xn, out);
        }
        groupMap = null;
    }

    /** Adds the experts' weighted outputs of {@code tokens[0, count)} (rows of xn) into their rows of {@code out}. */
    private void runGroup(int l, int[] tokens, int count, float[] xn, float[] out) {
        for (int from = 0; from < count; from += chunk) {
            runChunk(l, tokens, from, Math.min(chunk, count - from), xn, out);
        }
    }

    private void runChunk(int l, int[] tokens, int from, int count, float[] xn, float[] out) {
        Arrays.fill(pairCount, 0);
        for (int t = 0; t < count; t++) {
            for (int r = 0; r < topK; r++) {
                pairCount[routed[tokens[from + t]][r]]++;
            }
        }
        pairStart[0] = 0;
        for (int e = 0; e < experts; e++) {
            pairStart[e + 1] = pairStart[e] + pairCount[e];
        }
        System.arraycopy(pairStart, 0, pairCount, 0, experts); // reused as fill cursors
        for (int t = 0; t < count; t++) {
            for (int r = 0; r < topK; r++) {
                int e = routed[tokens[from + t]][r];
                byExpert[pairCount[e]++] = t * topK + r;
            }
        }
        // the experts in place first, then those still arriving (each in its own slot of ys: the
        // order in which experts run does not change any output bit)
        for (int pass = 0; pass < 2; pass++) {
            runExperts(l, pass == 0, tokens, from, xn);
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
    private void runExperts(int l, boolean ready, int[] tokens, int from, float[] xn) {
        for (int e = 0; e < experts; e++) {
            int m = pairStart[e + 1] - pairStart[e];
            if (m == 0 || ready(e) != ready) {
                continue;
            }
            for (int p = 0; p < m; p++) {
                int pair = byExpert[pairStart[e] + p];
                pairs[p] = pair;
                System.arraycopy(xn, tokens[from + pair / topK] * h, xs, p * h, h);
            }
            RowStack gateUpWeights;
            MemorySegment downWeights;
            if (groupMap == null) {
                gateUpWeights = inPlaceGateUp[l][e];
                downWeights = inPlaceDown[l][e];
            } else {
                pager.awaitExpert(groupLayer, e);
                int slot = groupMap[e];
                gateUpWeights = slotGateUp(groupLayer, slot);
                downWeights = pager.tensor(groupLayer, slot, ModelRunner.DOWN);
            }
            projector.project(gateUpWeights, xs, m, gateUp);
            VectorKernels.swiglu(gate, 0, up, 0, gate, 0, m * width);
            projector.project(gateUpWeights.dtype(), downWeights, h, width, gate, m, down);
            for (int p = 0; p < m; p++) {
                System.arraycopy(down, p * h, ys, pairs[p] * h, h);
            }
        }
    }

    /** Whether expert {@code e}'s weights are in place now (experts not ready run after those that are). */
    private boolean ready(int e) {
        return groupMap == null || !pager.fetching(groupLayer, e);
    }

    /** The stacked gate and up of pager slot {@code slot} of layer {@code pl}, rebuilt when the slot's tensors moved. */
    private RowStack slotGateUp(int pl, int slot) {
        MemorySegment g = pager.tensor(pl, slot, ModelRunner.GATE);
        MemorySegment u = pager.tensor(pl, slot, ModelRunner.UP);
        RowStack[] stacks = slotGateUp[pl];
        if (stacks == null || slot >= stacks.length) {
            stacks = slotGateUp[pl] = Arrays.copyOf(stacks == null ? new RowStack[0] : stacks, slot + 1);
        }
        RowStack s = stacks[slot];
        if (s == null || s.weights(0) != g || s.weights(1) != u) {
            s = stacks[slot] = RowStack.of(c.torchDtype(), h, g, width, u, width);
        }
        return s;
    }

    /** The routing and expert scratch arrays held now (see {@link ForwardPass#activationArrays}). */
    java.util.List<Object> activationArrays() {
        return java.util.Arrays.asList(probs, routed, gates, allTokens, ys, xs, gate, up, down, pairs, byExpert);
    }

    /** The first {@code n} rows of {@code routed}, as an array of exactly {@code n} rows sharing them. */
    private int[][] routedRows(int n) {
        if (n == rows) {
            return routed;
        }
        int[][] view = routedRows[n];
        if (view == null) {
            view = routedRows[n] = Arrays.copyOf(routed, n);
        }
        return view;
    }

    private void ensureRows(int n) {
        if (n <= rows) {
            return;
        }
        rows = Math.max(n, 2 * rows);
        probs = new float[rows * experts];
        routed = new int[rows][topK];
        gates = new float[rows][topK];
        allTokens = new int[rows];
        routedRows = new int[rows + 1][][];
        for (int i = 0; i < rows; i++) {
            allTokens[i] = i;
        }
    }

    private void ensureChunk(int tokens) {
        if (tokens <= chunk) {
            return;
        }
        chunk = tokens;
        int pairRows = chunk * topK;
        ys = new float[pairRows * h];
        xs = new float[pairRows * h];
        gate = new float[pairRows * width];
        up = new float[pairRows * width];
        down = new float[pairRows * h];
        gateUp = new float[][] {gate, up};
        pairs = new int[pairRows];
        byExpert = new int[pairRows];
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
