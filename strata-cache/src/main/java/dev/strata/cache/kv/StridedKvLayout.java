package dev.strata.cache.kv;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * A {@link KvLayout} for engines whose KV tensors are strided arrays: for each layer and each of
 * K and V, a region where the element run of head {@code h} of token {@code t} of slot {@code s}
 * starts at byte {@code s × slotStride + t × tokenStride + h × headStride} and spans
 * {@code headDim × dtype} bytes. This covers the common layouts:
 * <ul>
 *   <li>{@link #blockMajor}: one arena {@code [slot][layer][K,V][token][head][dim]}, the canonical
 *       order itself, so a block is one segment;</li>
 *   <li>{@link #layerMajor}: per layer one tensor {@code [K,V][slot][token][head][dim]} (the
 *       paged layout of FlashAttention-style kernels), a block is {@code 2 × layers} segments;</li>
 *   <li>{@link #headMajor}: per layer one tensor {@code [slot][K,V][head][token][dim]}, each head
 *       of each token is its own segment.</li>
 * </ul>
 * Adjacent runs are merged, so a layout is never described more finely than its memory forces.
 *
 * <p>Threads: immutable; any thread.
 */
public final class StridedKvLayout implements KvLayout {
    private final KvGeometry geometry;
    private final int slots;
    private final MemorySegment[] regions; // [layer * 2 + part], part 0 = K, 1 = V
    private final MemorySegment[] roots; // [layer * 2 + part]: the segment each region is a slice of
    private final long[] rootOffsets; // [layer * 2 + part]: where the region starts in its root, bytes
    private final long slotStride; // bytes between slots
    private final long tokenStride; // bytes between tokens of one slot
    private final long headStride; // bytes between heads of one token
    private final long runBytes; // bytes of one head of one token: headDim × dtype

    /**
     * A layout over explicit regions and strides.
     *
     * @param regions {@code 2 × layers} regions, K then V for each layer in order
     * @throws IllegalArgumentException if the count of regions is wrong, a stride is negative, or
     *                                  the last element of the last slot lies outside a region
     */
    public StridedKvLayout(KvGeometry geometry, int slots, MemorySegment[] regions, long slotStride,
            long tokenStride, long headStride) {
        this(geometry, slots, regions, regions, new long[regions.length], slotStride, tokenStride, headStride);
    }

    /**
     * A layout whose regions are slices of larger roots, so that runs continuing across regions
     * of one root are merged into one segment.
     */
    private StridedKvLayout(KvGeometry geometry, int slots, MemorySegment[] regions, MemorySegment[] roots,
            long[] rootOffsets, long slotStride, long tokenStride, long headStride) {
        this.geometry = Objects.requireNonNull(geometry, "geometry");
        checkSlots(slots);
        if (regions.length != 2 * geometry.layers()) {
            throw new IllegalArgumentException("a layout of " + geometry.layers() + " layers needs "
                    + 2 * geometry.layers() + " regions (K and V per layer), got " + regions.length);
        }
        if (slotStride < 0 || tokenStride < 0 || headStride < 0) {
            throw new IllegalArgumentException("strides must not be negative: slot " + slotStride + ", token "
                    + tokenStride + ", head " + headStride);
        }
        this.slots = slots;
        this.regions = regions.clone();
        this.roots = roots.clone();
        this.rootOffsets = rootOffsets.clone();
        this.slotStride = slotStride;
        this.tokenStride = tokenStride;
        this.headStride = headStride;
        this.runBytes = (long) geometry.headDim() * geometry.dtype().bytes();
        long last = (slots - 1L) * slotStride + (geometry.blockTokens() - 1L) * tokenStride
                + (geometry.kvHeads() - 1L) * headStride + runBytes;
        for (int i = 0; i < regions.length; i++) {
            if (regions[i].byteSize() < last) {
                throw new IllegalArgumentException("region " + i + " (layer " + i / 2 + (i % 2 == 0 ? " K" : " V")
                        + ") has " + regions[i].byteSize() + " bytes but the layout reaches byte " + last);
            }
        }
    }

    /** Bytes a {@link #blockMajor} arena needs for {@code slots} slots. */
    public static long blockMajorBytes(KvGeometry geometry, int slots) {
        return (long) slots * geometry.bytesPerBlock();
    }

    /** The canonical order in one arena: {@code [slot][layer][K,V][token][head][dim]}. */
    public static StridedKvLayout blockMajor(KvGeometry geometry, int slots, MemorySegment arena) {
        checkSlots(slots);
        long need = blockMajorBytes(geometry, slots);
        if (arena.byteSize() < need) {
            throw new IllegalArgumentException("a block-major arena of " + slots + " slots of " + geometry.bytesPerBlock()
                    + " bytes needs " + need + " bytes, got " + arena.byteSize());
        }
        long part = geometry.partBytesPerBlock();
        MemorySegment[] regions = new MemorySegment[2 * geometry.layers()];
        MemorySegment[] roots = new MemorySegment[regions.length];
        long[] offsets = new long[regions.length];
        for (int i = 0; i < regions.length; i++) {
            regions[i] = arena.asSlice(i * part);
            roots[i] = arena;
            offsets[i] = i * part;
        }
        return new StridedKvLayout(geometry, slots, regions, roots, offsets, geometry.bytesPerBlock(),
                geometry.headBytesPerToken(), (long) geometry.headDim() * geometry.dtype().bytes());
    }

    /** Bytes one layer's tensor of a {@link #layerMajor} layout needs for {@code slots} slots. */
    public static long layerMajorBytesPerLayer(KvGeometry geometry, int slots) {
        return 2L * slots * geometry.partBytesPerBlock();
    }

    /**
     * Per layer one tensor {@code [K,V][slot][token][head][dim]}.
     *
     * @param layerTensors one segment per layer, each at least
     *                     {@link #layerMajorBytesPerLayer} bytes
     */
    public static StridedKvLayout layerMajor(KvGeometry geometry, int slots, MemorySegment[] layerTensors) {
        checkLayerTensors(geometry, slots, layerTensors, "layer-major");
        long half = (long) slots * geometry.partBytesPerBlock();
        MemorySegment[] regions = new MemorySegment[2 * geometry.layers()];
        MemorySegment[] roots = new MemorySegment[regions.length];
        long[] offsets = new long[regions.length];
        for (int l = 0; l < geometry.layers(); l++) {
            regions[2 * l] = layerTensors[l].asSlice(0, half);
            regions[2 * l + 1] = layerTensors[l].asSlice(half, half);
            roots[2 * l] = layerTensors[l];
            roots[2 * l + 1] = layerTensors[l];
            offsets[2 * l + 1] = half;
        }
        return new StridedKvLayout(geometry, slots, regions, roots, offsets, geometry.partBytesPerBlock(),
                geometry.headBytesPerToken(), (long) geometry.headDim() * geometry.dtype().bytes());
    }

    /**
     * Per layer one tensor {@code [slot][K,V][head][token][dim]}.
     *
     * @param layerTensors one segment per layer, each at least
     *                     {@link #layerMajorBytesPerLayer} bytes
     */
    public static StridedKvLayout headMajor(KvGeometry geometry, int slots, MemorySegment[] layerTensors) {
        checkLayerTensors(geometry, slots, layerTensors, "head-major");
        long run = (long) geometry.headDim() * geometry.dtype().bytes();
        long part = geometry.partBytesPerBlock();
        MemorySegment[] regions = new MemorySegment[2 * geometry.layers()];
        MemorySegment[] roots = new MemorySegment[regions.length];
        long[] offsets = new long[regions.length];
        for (int l = 0; l < geometry.layers(); l++) {
            regions[2 * l] = layerTensors[l];
            regions[2 * l + 1] = layerTensors[l].asSlice(part);
            roots[2 * l] = layerTensors[l];
            roots[2 * l + 1] = layerTensors[l];
            offsets[2 * l + 1] = part;
        }
        return new StridedKvLayout(geometry, slots, regions, roots, offsets, 2 * part, run, run * geometry.blockTokens());
    }

    @Override
    public KvGeometry geometry() {
        return geometry;
    }

    @Override
    public int slots() {
        return slots;
    }

    @Override
    public void segments(int slot, TokenSelection selection, List<MemorySegment> out) {
        Objects.checkIndex(slot, slots);
        if (selection.blockTokens() != geometry.blockTokens()) {
            throw new IllegalArgumentException("selection for blocks of " + selection.blockTokens()
                    + " tokens used with a layout of " + geometry.blockTokens() + "-token blocks");
        }
        int heads = geometry.kvHeads();
        boolean headsContiguous = heads == 1 || headStride == runBytes;
        long tokenBytes = heads * runBytes;
        boolean tokensContiguous = headsContiguous && tokenStride == tokenBytes;
        RunMerger runs = new RunMerger(out);
        long slotBase = slot * slotStride;
        for (int r = 0; r < regions.length; r++) {
            MemorySegment root = roots[r];
            long base = rootOffsets[r] + slotBase;
            int t = selection.nextSelected(0);
            while (t >= 0) {
                int end = tokensContiguous ? selection.nextUnselected(t) : t + 1;
                if (headsContiguous) {
                    runs.add(root, base + t * tokenStride, (end - t) * tokenBytes);
                } else {
                    for (int h = 0; h < heads; h++) {
                        runs.add(root, base + t * tokenStride + h * headStride, runBytes);
                    }
                }
                t = selection.nextSelected(end);
            }
        }
        runs.flush();
    }

    /** Collects runs of bytes, joining a run to the previous one when it continues it in the same root. */
    private static final class RunMerger {
        private final List<MemorySegment> out;
        private MemorySegment root; // root of the pending run, null when none
        private long start; // pending run, first byte within root
        private long end; // pending run, one past the last byte

        RunMerger(List<MemorySegment> out) {
            this.out = out;
        }

        void add(MemorySegment r, long from, long length) {
            if (root == r && end == from) {
                end += length;
                return;
            }
            flush();
            root = r;
            start = from;
            end = from + length;
        }

        void flush() {
            if (root != null) {
                out.add(root.asSlice(start, end - start));
                root = null;
            }
        }
    }

    private static void checkLayerTensors(KvGeometry geometry, int slots, MemorySegment[] tensors, String kind) {
        checkSlots(slots);
        if (tensors.length != geometry.layers()) {
            throw new IllegalArgumentException("a layout of " + geometry.layers() + " layers needs one tensor per layer, got "
                    + tensors.length);
        }
        long need = layerMajorBytesPerLayer(geometry, slots);
        for (int l = 0; l < tensors.length; l++) {
            if (tensors[l].byteSize() < need) {
                throw new IllegalArgumentException("the tensor of layer " + l + " has " + tensors[l].byteSize()
                        + " bytes but a " + kind + " layout of " + slots + " slots needs " + need);
            }
        }
    }

    private static void checkSlots(int slots) {
        if (slots <= 0) {
            throw new IllegalArgumentException("slot count must be positive, got " + slots);
        }
    }
}
