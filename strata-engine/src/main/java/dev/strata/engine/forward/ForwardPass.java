package dev.strata.engine.forward;

import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.kernel.PagedKv;
import dev.strata.engine.kernel.Rope;
import dev.strata.engine.kernel.RowStack;
import dev.strata.engine.kernel.VectorKernels;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelWeights;
import dev.strata.engine.model.QkNorm;
import dev.strata.engine.model.Tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The forward computation of one decoder-only transformer over a batch of rows: each row is one
 * token of one sequence (a prompt's rows, or one decode row per sequence); every projection and
 * expert runs as one matmul over all rows, attention per row over its own sequence's paged KV up to
 * it. Activations are float; every matrix product, norm, activation and attention runs through
 * {@link Kernels}, {@link VectorKernels} and {@link Rope}.
 *
 * <p>Memory: the activations (residual stream, normed rows, q/k/v, attention output, projection
 * output, MLP gate/up, final-normed rows, the row bookkeeping and the per-row KV views) are held
 * here, sized for one row at construction and grown (at least doubling) to the largest batch seen;
 * the RoPE tables of every position seen are computed once and kept; the MoE block and the
 * projector keep their own scratch the same way. A decode step therefore allocates no activation
 * array: it writes each span's logits into the {@code [vocab]} array its sequence owns. What a step
 * still allocates does not grow with the model's widths: a {@link PagedKv} record per layer and
 * row, and what the kernels allocate themselves (each call's range lambda; Vector API temporaries
 * until the JIT has compiled the kernels). Measured on the calling thread
 * ({@code ThreadMXBean.getThreadAllocatedBytes}) per decode step of a synthetic 2-layer model
 * (H 256, vocab 1024, one kernel thread, warm JIT, {@code DecodeAllocationTest}): about 35 KB
 * (dense) and 160 KB (MoE) when every call allocated its activations, about 4 KB (dense) and
 * 5 to 10 KB (MoE) now, nearly all of it inside the kernels; before the JIT settles both are far
 * higher and vary from run to run.
 *
 * <p>Determinism: each row's outputs are computed in the same order whatever the batch, its
 * grouping, the thread count or where the weights and KV blocks came from (every matmul element is
 * accumulated exactly as the matvec of its row, attention reduces in a fixed order per row, the MoE
 * sums its top-k experts in rank order whichever batch each expert ran in).
 *
 * <p>Threads: one thread at a time (the thread driving the owning {@link ModelRunner}); the kernels
 * fan out over their pool.
 */
final class ForwardPass {
    private static final ValueLayout.OfFloat KV_FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final ModelWeights weights;
    private final ModelConfig c;
    private final Kernels kernels;
    private final KvGeometry geometry;
    private final Rope rope;
    private final float eps;
    private final Projector projector;
    private final MoeBlock moe;
    private final RowStack[] qkvStacks; // [layers] q, k, v of each layer as one stack
    private final RowStack[] mlpStacks; // [layers] gate and up of each dense layer; null for MoE layers

    // activations, [rows, width] row-major, grown with the batch
    private int rows; // row capacity
    private int[] rowSpan; // [rows] the span of each row
    private int[] rowPos; // [rows] the row's position in its sequence
    private float[] x; // [rows, H] residual stream
    private float[] xn; // [rows, H] normed
    private float[] q; // [rows, heads × hd]
    private float[] k; // [rows, kvHeads × hd]
    private float[] v; // [rows, kvHeads × hd]
    private float[][] qkv; // {q, k, v}
    private float[] att; // [rows, heads × hd] attention output
    private float[] proj; // [rows, H] output projection, then MLP/MoE output
    private float[] mlpGate; // [rows, intermediate]
    private float[] mlpUp; // [rows, intermediate]
    private float[][] mlpGateUp; // {mlpGate, mlpUp}
    private PagedKv[] views; // [rows] each row's KV up to and including it (this layer's)
    private int[] outRows; // [rows] the rows whose logits are returned
    private float[] last; // [rows, H] final-normed rows of outRows
    private float[] lmOut; // [m, vocab] logits of a batch of several rows; null until needed

    // RoPE [cos | sin] tables of positions [0, ropePositions), each computed once (StrictMath, so a
    // table is the same bits whenever it is computed); hd floats a position, less than one layer's
    // K of one KV head, so far less than the KV of the longest sequence seen
    private int ropePositions;
    private float[] ropeTables = new float[0]; // [ropePositions, hd]

    ForwardPass(ModelWeights weights, Kernels kernels, KvGeometry geometry, ExpertPager pager, int[] moeIndex) {
        this.weights = weights;
        this.c = weights.config();
        this.kernels = kernels;
        this.geometry = geometry;
        this.rope = new Rope(c.headDim(), c.ropeTheta(), c.ropeScaling());
        this.eps = (float) c.rmsNormEps();
        this.projector = new Projector(kernels, c);
        this.moe = c.moe() ? new MoeBlock(weights, projector, pager, moeIndex) : null;
        int layers = c.numHiddenLayers();
        qkvStacks = new RowStack[layers];
        mlpStacks = new RowStack[layers];
        for (int l = 0; l < layers; l++) {
            ModelWeights.Layer layer = weights.layer(l);
            ModelWeights.Attention a = layer.attention();
            qkvStacks[l] = stack(a.q(), a.k(), a.v());
            if (!layer.moe()) {
                mlpStacks[l] = stack(layer.mlp().gate(), layer.mlp().up());
            }
        }
        ensureRows(1);
    }

    void routingObserver(RoutingObserver observer) {
        if (moe != null) {
            moe.routingObserver(observer);
        }
    }

    long groupedLayerRuns() {
        return moe == null ? 0 : moe.groupedLayerRuns();
    }

    /**
     * The rows of one forward call, span by span: each span is tokens {@code [start, start + n)} of
     * one sequence over its KV block views (enough blocks for {@code start + n} tokens), and the
     * {@code [vocab]} array its last row's logits go to. Filled by the caller before each call and
     * reused; the arrays grow with the number of spans.
     */
    static final class Batch {
        private int spans;
        private int[][] tokens = new int[1][]; // [spans] each span's token array
        private int[] start = new int[1]; // [spans] position of the span's first row
        private int[] count = new int[1]; // [spans] rows of the span
        private KvBlockViews[] blocks = new KvBlockViews[1]; // [spans] the span's KV block views
        private float[][] logits = new float[1][]; // [spans] where the logits of the span's last row go

        void clear() {
            Arrays.fill(tokens, 0, spans, null);
            Arrays.fill(blocks, 0, spans, null);
            Arrays.fill(logits, 0, spans, null);
            spans = 0;
        }

        void add(int[] spanTokens, int spanStart, int n, KvBlockViews spanBlocks, float[] spanLogits) {
            if (spans == tokens.length) {
                int size = 2 * spans;
                tokens = Arrays.copyOf(tokens, size);
                start = Arrays.copyOf(start, size);
                count = Arrays.copyOf(count, size);
                blocks = Arrays.copyOf(blocks, size);
                logits = Arrays.copyOf(logits, size);
            }
            tokens[spans] = spanTokens;
            start[spans] = spanStart;
            count[spans] = n;
            blocks[spans] = spanBlocks;
            logits[spans] = spanLogits;
            spans++;
        }

        int spans() {
            return spans;
        }
    }

    /**
     * Computes the rows of every span of {@code batch} in one pass: each row's K and V written into
     * its span's blocks, attention per row over its span's KV up to it, every projection and expert
     * as one matmul over all rows. The logits of each span's last row go into that span's logits
     * array.
     *
     * @param everyPosition also return the logits of every computed row
     * @return with {@code everyPosition}, {@code [rows][vocab]}: every row's logits in new arrays,
     *         span by span; otherwise null
     */
    float[][] forward(Batch batch, boolean everyPosition) {
        int h = c.hiddenSize();
        int qDim = c.qDim();
        int kvDim = c.kvDim();
        int hd = c.headDim();
        int bt = geometry.blockTokens();
        int n = 0;
        for (int s = 0; s < batch.spans; s++) {
            n += batch.count[s];
        }
        ensureRows(n);
        ensureRopeTables(batch);
        for (int s = 0, i = 0; s < batch.spans; s++) {
            for (int r = 0; r < batch.count[s]; r++, i++) {
                rowSpan[i] = s;
                rowPos[i] = batch.start[s] + r;
            }
        }
        Tensor embed = weights.embedding();
        for (int i = 0; i < n; i++) {
            long row = (long) batch.tokens[rowSpan[i]][rowPos[i]] * h;
            for (int j = 0; j < h; j++) {
                x[i * h + j] = embed.getFloat(row + j);
            }
        }
        for (int l = 0; l < c.numHiddenLayers(); l++) {
            ModelWeights.Layer layer = weights.layer(l);
            ModelWeights.Attention a = layer.attention();
            normRows(x, layer.inputNorm(), xn, n, h);
            projector.project(qkvStacks[l], xn, n, qkv);
            addBias(q, a.qBias(), n, qDim);
            addBias(k, a.kBias(), n, kvDim);
            addBias(v, a.vBias(), n, kvDim);
            if (c.clipQkv() != null) {
                float clip = c.clipQkv().floatValue();
                clamp(q, n * qDim, clip);
                clamp(k, n * kvDim, clip);
                clamp(v, n * kvDim, clip);
            }
            if (c.qkNorm() == QkNorm.PER_HEAD) {
                normRows(q, a.qNorm(), q, n * c.numAttentionHeads(), hd);
                normRows(k, a.kNorm(), k, n * c.numKeyValueHeads(), hd);
            } else if (c.qkNorm() == QkNorm.FULL_WIDTH) {
                normRows(q, a.qNorm(), q, n, qDim);
                normRows(k, a.kNorm(), k, n, kvDim);
            }
            for (int i = 0; i < n; i++) {
                rope.apply(q, i * qDim, c.numAttentionHeads(), ropeTables, rowPos[i] * hd);
                rope.apply(k, i * kvDim, c.numKeyValueHeads(), ropeTables, rowPos[i] * hd);
            }
            for (int i = 0; i < n; i++) { // each row's view of this layer's KV up to it; its K and V into its slot
                int p = rowPos[i];
                PagedKv view = new PagedKv(geometry, l, batch.blocks[rowSpan[i]].prefix(p / bt + 1), p % bt + 1);
                views[i] = view;
                MemorySegment block = view.block(p);
                for (int kh = 0; kh < c.numKeyValueHeads(); kh++) {
                    int from = i * kvDim + kh * hd;
                    long kAt = view.keyIndex(p, kh) * 4;
                    long vAt = view.valueIndex(p, kh) * 4;
                    for (int d = 0; d < hd; d++) { // element by element: a bulk copy from an array wraps it in a segment
                        block.set(KV_FLOAT, kAt + 4L * d, k[from + d]);
                        block.set(KV_FLOAT, vAt + 4L * d, v[from + d]);
                    }
                }
            }
            kernels.attention(q, 0, c.numAttentionHeads(), views, n, att, 0);
            projector.project(a.o(), att, n, proj);
            addBias(proj, a.oBias(), n, h);
            VectorKernels.add(x, 0, proj, 0, x, 0, n * h);
            normRows(x, layer.postAttentionNorm(), xn, n, h);
            if (layer.moe()) {
                moe.run(l, layer, xn, proj, n);
            } else {
                denseMlp(l, layer.mlp(), xn, proj, n);
            }
            VectorKernels.add(x, 0, proj, 0, x, 0, n * h);
        }
        Arrays.fill(views, 0, n, null); // the views hold the sequences' block lists
        return logits(batch, n, everyPosition);
    }

    /** The LM head over the final-normed rows whose logits are wanted. */
    private float[][] logits(Batch batch, int n, boolean everyPosition) {
        int h = c.hiddenSize();
        int m = 0; // rows whose logits are computed, span by span
        for (int s = 0, i = 0; s < batch.spans; s++) {
            int sn = batch.count[s];
            for (int r = 0; r < sn; r++, i++) {
                if (everyPosition || r == sn - 1) {
                    outRows[m++] = i;
                }
            }
        }
        for (int o = 0; o < m; o++) {
            VectorKernels.rmsNorm(x, outRows[o] * h, weights.finalNorm().data(), weights.finalNorm().dtype(), eps, last, o * h, h);
        }
        int vocab = c.vocabSize();
        float[][] every = everyPosition ? new float[m][] : null;
        if (m == 1 || (long) m * vocab > Integer.MAX_VALUE / 2) {
            for (int o = 0, s = 0; o < m; o++) { // one row (or too many for one array): per-row matvec, the same bits
                float[] out = everyPosition ? new float[vocab] : batch.logits[s++];
                kernels.matvec(weights.lmHead(), last, o * h, out, 0);
                if (everyPosition) {
                    every[o] = out;
                }
            }
        } else {
            if (lmOut == null || lmOut.length < m * vocab) {
                lmOut = new float[m * vocab];
            }
            projector.project(weights.lmHead(), last, m, lmOut);
            for (int o = 0; o < m; o++) {
                if (everyPosition) {
                    every[o] = Arrays.copyOfRange(lmOut, o * vocab, (o + 1) * vocab);
                }
            }
            if (!everyPosition) {
                for (int s = 0; s < batch.spans; s++) {
                    System.arraycopy(lmOut, s * vocab, batch.logits[s], 0, vocab);
                }
            }
        }
        if (everyPosition) { // each span's last row also into its logits array
            for (int s = 0, o = 0; s < batch.spans; s++) {
                o += batch.count[s];
                System.arraycopy(every[o - 1], 0, batch.logits[s], 0, vocab);
            }
        }
        return every;
    }

    private void denseMlp(int l, ModelWeights.Mlp m, float[] in, float[] out, int n) {
        int width = c.intermediateSize();
        projector.project(mlpStacks[l], in, n, mlpGateUp);
        VectorKernels.swiglu(mlpGate, 0, mlpUp, 0, mlpGate, 0, n * width);
        projector.project(m.down(), mlpGate, n, out);
    }

    /**
     * The activation arrays held now (the forward pass's and the MoE block's), for tests that check
     * they are reused: an array replaced between two calls was allocated by the later one.
     */
    java.util.List<Object> activationArrays() {
        java.util.List<Object> all = new java.util.ArrayList<>(java.util.Arrays.asList(rowSpan, rowPos, x, xn, q, k, v,
                att, proj, views, outRows, last)); // not the RoPE tables: they grow with the positions seen
        if (mlpGate != null) {
            all.add(mlpGate);
            all.add(mlpUp);
        }
        if (moe != null) {
            all.addAll(moe.activationArrays());
        }
        return all;
    }

    /** Grows the activations to hold {@code n} rows (at least doubling); a no-op when they do already. */
    private void ensureRows(int n) {
        if (n <= rows) {
            return;
        }
        int cap = Math.max(n, 2 * rows);
        int h = c.hiddenSize();
        rowSpan = new int[cap];
        rowPos = new int[cap];
        x = new float[cap * h];
        xn = new float[cap * h];
        q = new float[cap * c.qDim()];
        k = new float[cap * c.kvDim()];
        v = new float[cap * c.kvDim()];
        qkv = new float[][] {q, k, v};
        att = new float[cap * c.qDim()];
        proj = new float[cap * h];
        if (hasDenseLayer()) {
            mlpGate = new float[cap * c.intermediateSize()];
            mlpUp = new float[cap * c.intermediateSize()];
            mlpGateUp = new float[][] {mlpGate, mlpUp};
        }
        views = new PagedKv[cap];
        outRows = new int[cap];
        last = new float[cap * h];
        rows = cap;
    }

    /** Computes the RoPE tables up to the last position of every span of {@code batch} (at least doubling). */
    private void ensureRopeTables(Batch batch) {
        int need = 0;
        for (int s = 0; s < batch.spans; s++) {
            need = Math.max(need, batch.start[s] + batch.count[s]);
        }
        if (need <= ropePositions) {
            return;
        }
        int hd = c.headDim();
        int positions = Math.max(need, Math.min(2 * ropePositions, c.maxPositionEmbeddings()));
        ropeTables = Arrays.copyOf(ropeTables, Math.multiplyExact(positions, hd));
        for (int p = ropePositions; p < positions; p++) {
            rope.table(p, ropeTables, p * hd);
        }
        ropePositions = positions;
    }

    private boolean hasDenseLayer() {
        for (RowStack s : mlpStacks) {
            if (s != null) {
                return true;
            }
        }
        return false;
    }

    /** The matrices {@code [out, in]} of one dtype and width as one {@link RowStack}, in order. */
    private static RowStack stack(Tensor... ws) {
        MemorySegment[] data = new MemorySegment[ws.length];
        int[] rowCounts = new int[ws.length];
        for (int p = 0; p < ws.length; p++) {
            if (ws[p].rank() != 2 || ws[p].dtype() != ws[0].dtype() || ws[p].dim(1) != ws[0].dim(1)) {
                throw new IllegalArgumentException("tensor " + ws[p] + " cannot be stacked with " + ws[0]
                        + ": stacked projections need 2-D [out, in] matrices of one dtype and input width");
            }
            data[p] = ws[p].data();
            rowCounts[p] = Math.toIntExact(ws[p].dim(0));
        }
        return new RowStack(ws[0].dtype(), Math.toIntExact(ws[0].dim(1)), data, rowCounts);
    }

    private void normRows(float[] in, Tensor weight, float[] out, int n, int width) {
        for (int r = 0; r < n; r++) {
            VectorKernels.rmsNorm(in, r * width, weight.data(), weight.dtype(), eps, out, r * width, width);
        }
    }

    private static void addBias(float[] y, Tensor bias, int n, int width) {
        if (bias == null) {
            return;
        }
        for (int r = 0; r < n; r++) {
            for (int j = 0; j < width; j++) {
                y[r * width + j] += bias.getFloat(j);
            }
        }
    }

    /** Clamps {@code y[0, count)} to {@code [−clip, clip]}. */
    private static void clamp(float[] y, int count, float clip) {
        for (int i = 0; i < count; i++) {
            y[i] = Math.max(-clip, Math.min(clip, y[i]));
        }
    }
}
