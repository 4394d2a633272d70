package dev.strata.cache.kv;

import dev.strata.memory.Allocator;
import dev.strata.memory.Tier;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A {@link ResizableKvLayout} whose block slots are allocations in a {@link Tier} (the DEVICE tier
 * the expert pager allocates from too): each slot is one allocation of
 * {@link KvGeometry#bytesPerBlock()} bytes in the canonical block-major order
 * {@code [layer][K,V][token][head][dim]}, so a full block is one segment and the budget moves
 * between KV and experts one slot at a time.
 *
 * <p>Invariants: {@code handles[0, slots)} are live allocations of this layout in the tier and
 * nothing else is; the tier's used bytes therefore include exactly {@code slots × bytesPerSlot()}
 * of this layout's, and never exceed its capacity (the tier refuses an allocation that would).
 * A failed grow frees what it took before returning.
 *
 * <p>Threads: as {@link ResizableKvLayout}: one owner thread resizes and closes; between resizes
 * any thread may read {@link #segments} (the slot views are published through a volatile field).
 */
public final class TierSlotKvLayout implements ResizableKvLayout, AutoCloseable {
    private final Tier tier;
    private final KvGeometry geometry;
    private final long blockBytes; // bytes of one slot's block
    private long[] handles; // [slot] the slot's allocation in the tier; length >= slots
    private volatile StridedKvLayout[] views; // [slot] a one-slot block-major view of the allocation, exactly slots long
    private long bytesPerSlot; // allocation size of one slot (alignment included); 0 until the first slot

    private TierSlotKvLayout(Tier tier, KvGeometry geometry) {
        this.tier = tier;
        this.geometry = geometry;
        this.blockBytes = geometry.bytesPerBlock();
        this.handles = new long[0];
        this.views = new StridedKvLayout[0];
    }

    /**
     * A layout of {@code slots} slots allocated in {@code tier}, which must be addressable plain
     * memory (a DEVICE or HOST tier).
     *
     * @throws IllegalArgumentException if the tier is not plain addressable memory, the slot count
     *                                  is not positive, or the tier cannot hold that many slots now
     */
    public static TierSlotKvLayout allocate(Tier tier, KvGeometry geometry, int slots) {
        Objects.requireNonNull(tier, "tier");
        Objects.requireNonNull(geometry, "geometry");
        if (!tier.isAddressable() || !tier.isPlainMemory()) {
            throw new IllegalArgumentException("tier '" + tier.name() + "' is not plain addressable memory: KV slots need a "
                    + "direct view");
        }
        if (slots < 1) {
            throw new IllegalArgumentException("a KV layout needs at least 1 slot, got " + slots);
        }
        TierSlotKvLayout layout = new TierSlotKvLayout(tier, geometry);
        if (!layout.growTo(slots)) {
            throw new IllegalArgumentException("tier '" + tier.name() + "' cannot hold " + slots + " KV slots of "
                    + geometry.bytesPerBlock() + " bytes now (" + tier.available() + " of " + tier.capacity()
                    + " bytes available)");
        }
        return layout;
    }

    /** The tier the slots are allocated in. */
    public Tier tier() {
        return tier;
    }

    @Override
    public KvGeometry geometry() {
        return geometry;
    }

    @Override
    public int slots() {
        return views.length;
    }

    @Override
    public long bytesPerSlot() {
        return bytesPerSlot == 0 ? blockBytes : bytesPerSlot;
    }

    @Override
    public void segments(int slot, TokenSelection selection, List<MemorySegment> out) {
        StridedKvLayout[] v = views;
        Objects.checkIndex(slot, v.length);
        v[slot].segments(0, selection, out);
    }

    @Override
    public boolean growTo(int slots) {
        int from = views.length;
        if (slots <= from) {
            return slots == from;
        }
        long[] taken = Arrays.copyOf(handles, slots);
        StridedKvLayout[] grown = Arrays.copyOf(views, slots);
        for (int s = from; s < slots; s++) {
            long h = tier.allocate(blockBytes);
            if (h == Allocator.FULL) {
                for (int u = s - 1; u >= from; u--) {
                    tier.free(taken[u]);
                }
                return false;
            }
            taken[s] = h;
            grown[s] = StridedKvLayout.blockMajor(geometry, 1, tier.segment(h, 0, blockBytes));
            if (bytesPerSlot == 0) {
                bytesPerSlot = tier.allocationSize(h);
            }
        }
        handles = taken;
        views = grown;
        return true;
    }

    @Override
    public void shrinkTo(int slots) {
        int from = views.length;
        if (slots < 0 || slots > from) {
            throw new IllegalArgumentException("cannot shrink a layout of " + from + " slots to " + slots);
        }
        views = Arrays.copyOf(views, slots);
        for (int s = from - 1; s >= slots; s--) {
            tier.free(handles[s]);
        }
        handles = Arrays.copyOf(handles, slots);
    }

    @Override
    public void copySlot(int from, int to) {
        StridedKvLayout[] v = views;
        Objects.checkIndex(from, v.length);
        Objects.checkIndex(to, v.length);
        if (from != to) {
            MemorySegment.copy(tier.segment(handles[from], 0, blockBytes), 0, tier.segment(handles[to], 0, blockBytes), 0,
                    blockBytes);
        }
    }

    /** Frees every slot. Close after the manager using the layout. */
    @Override
    public void close() {
        shrinkTo(0);
    }

    @Override
    public String toString() {
        return "TierSlotKvLayout[" + views.length + " slots of " + blockBytes + " bytes in tier '" + tier.name() + "']";
    }
}
