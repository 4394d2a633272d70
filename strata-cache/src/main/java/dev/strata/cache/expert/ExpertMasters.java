package dev.strata.cache.expert;

import dev.strata.memory.Allocator;
import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * The authoritative copy of every expert of a model: one object per (layer, expert) in a HOST or
 * DISK tier (any tier that is not DEVICE), each an expert image of {@link ExpertLayout#bytes()}.
 *
 * <p>Durability: masters are BACKED in the strongest sense. They are allocated once, written once
 * by the loader, and freed only by {@link #close()}; nothing in the expert pager ever drops or
 * rewrites them. A resident copy in a DEVICE slot is a cache of its master, never a second master,
 * so a host never holds two copies of an expert (the master is the one host copy; with DISK
 * masters the host holds none).
 *
 * <p>Threads: {@link #write} and {@link #read} may be called from any thread but not concurrently
 * for the same expert; masters must be fully written before a pager fetches from them and are
 * read-only afterwards. {@link #close()} once, after every pager over them has closed.
 */
public final class ExpertMasters implements AutoCloseable {

    private final Tier tier;
    private final ExpertLayout layout;
    private final int layers;
    private final int experts;
    private final long[] handles;        // [layers * experts] allocation of (layer, expert) in tier
    private final MemorySegment[] views; // [layers * experts] plain-memory views, null when the tier is not plain memory
    private boolean closed;

    private ExpertMasters(Tier tier, ExpertLayout layout, int layers, int experts, long[] handles, MemorySegment[] views) {
        this.tier = tier;
        this.layout = layout;
        this.layers = layers;
        this.experts = experts;
        this.handles = handles;
        this.views = views;
    }

    /**
     * Allocates room for {@code layers × experts} expert images in {@code tier}. All or nothing: if
     * the tier cannot hold them, what was allocated is freed and the call fails.
     *
     * @throws IllegalArgumentException if the tier is a DEVICE tier or the counts are not positive
     * @throws IllegalStateException    naming the tier and the counts when the tier is too small
     */
    public static ExpertMasters allocate(Tier tier, ExpertLayout layout, int layers, int experts) {
        Objects.requireNonNull(tier, "master tier");
        Objects.requireNonNull(layout, "expert layout");
        if (tier.kind() == TierKind.DEVICE) {
            throw new IllegalArgumentException("expert masters belong in a HOST or DISK tier, not in DEVICE tier '"
                    + tier.name() + "'");
        }
        if (layers <= 0 || experts <= 0) {
            throw new IllegalArgumentException("layers and experts must be positive, got " + layers + " and " + experts);
        }
        long count = (long) layers * experts;
        if (count > Integer.MAX_VALUE / 2) {
            throw new IllegalArgumentException(layers + " layers x " + experts + " experts is too many masters");
        }
        long[] handles = new long[(int) count];
        MemorySegment[] views = tier.isPlainMemory() ? new MemorySegment[(int) count] : null;
        for (int i = 0; i < handles.length; i++) {
            long h = tier.allocate(layout.bytes());
            if (h == Allocator.FULL) {
                for (int j = 0; j < i; j++) {
                    tier.free(handles[j]);
                }
                throw new IllegalStateException("tier '" + tier.name() + "' cannot hold " + count + " expert masters of "
                        + layout.bytes() + " bytes (" + layers + " layers x " + experts + " experts): full after " + i
                        + " (capacity " + tier.capacity() + ", used " + tier.used() + ")");
            }
            handles[i] = h;
            if (views != null) {
                views[i] = tier.segment(h, 0, layout.bytes());
            }
        }
        return new ExpertMasters(tier, layout, layers, experts, handles, views);
    }

    private int index(int layer, int expert) {
        if (layer < 0 || layer >= layers || expert < 0 || expert >= experts) {
            throw new IllegalArgumentException("expert (" + layer + ", " + expert + ") is outside " + layers + " layers x "
                    + experts + " experts");
        }
        return layer * experts + expert;
    }

    /** Stores the whole image of expert {@code expert} of {@code layer} ({@link ExpertLayout#bytes()} bytes). */
    public void write(int layer, int expert, MemorySegment image) {
        checkOpen();
        if (image.byteSize() != layout.bytes()) {
            throw new IllegalArgumentException("expert (" + layer + ", " + expert + ") image is " + image.byteSize()
                    + " bytes, the layout says " + layout.bytes());
        }
        tier.write(handles[index(layer, expert)], image);
    }

    /** Stores the expert from its tensors, one segment per tensor of the layout, in layout order. */
    public void write(int layer, int expert, List<MemorySegment> tensors) {
        checkOpen();
        if (tensors.size() != layout.tensorCount()) {
            throw new IllegalArgumentException("expert (" + layer + ", " + expert + "): got " + tensors.size()
                    + " tensors, the layout has " + layout.tensorCount());
        }
        for (int t = 0; t < tensors.size(); t++) {
            ExpertLayout.Tensor spec = layout.tensors().get(t);
            if (tensors.get(t).byteSize() != spec.bytes()) {
                throw new IllegalArgumentException("expert (" + layer + ", " + expert + ") tensor '" + spec.name() + "' is "
                        + tensors.get(t).byteSize() + " bytes, the layout says " + spec.bytes());
            }
        }
        tier.gatherWrite(handles[index(layer, expert)], tensors);
    }

    /** Copies the master image into {@code dst} (exactly {@link ExpertLayout#bytes()} bytes); false if never written. */
    public boolean read(int layer, int expert, MemorySegment dst) {
        checkOpen();
        return tier.read(handles[index(layer, expert)], dst);
    }

    /** The master's allocation in {@link #tier()}. */
    public long handle(int layer, int expert) {
        return handles[index(layer, expert)];
    }

    /** A view of the master image (plain-memory tiers only); the same object on every call. */
    public MemorySegment view(int layer, int expert) {
        if (views == null) {
            throw new UnsupportedOperationException("masters in tier '" + tier.name() + "' (" + tier.kind()
                    + ") are not plain memory; read them with read()");
        }
        return views[index(layer, expert)];
    }

    /** True if {@link #view} works (masters in plain memory: HOST). */
    public boolean isPlainMemory() {
        return views != null;
    }

    public Tier tier() {
        return tier;
    }

    public ExpertLayout layout() {
        return layout;
    }

    public int layers() {
        return layers;
    }

    public int experts() {
        return experts;
    }

    /** Frees every master (the tier stays open). A second call does nothing. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (long h : handles) {
            tier.free(h);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("expert masters in tier '" + tier.name() + "' are closed");
        }
    }
}
