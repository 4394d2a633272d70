package dev.strata.cache;

import dev.strata.memory.Allocator;
import dev.strata.memory.Tier;

import java.lang.foreign.ValueLayout;

/**
 * The blocks a {@link TieredStore}'s pressure pass evicted from one tier of uniform blocks and
 * kept, still allocated, for the store's next allocations there.
 *
 * <p>Design: in a tier whose every allocation is one block of the same size
 * ({@link Tier#uniformAllocationBytes()}, a slab), an evicted copy's block can hold the next
 * object as it is. A pass evicts down to the low watermark; handing its blocks straight to the
 * puts that follow skips the allocator's free and allocate of each (six atomic updates of shared
 * words, each waiting for the cache misses of the eviction before it), which is most of the cost
 * of a put of a small object into a full tier. The kept blocks are bounded by the room between the
 * tier's two watermarks and by {@link #MAX_BLOCKS}, so the tier never looks fuller to its other
 * users than it was when the pass began (at its high watermark), and they go back to the tier when
 * the store closes or the bound shrinks.
 *
 * <p>Threads: the owning store's lock guards every call.
 *
 * <p>Invariants: every kept handle is a live allocation of the tier that no copy of the store
 * holds, and appears once; the blocks kept never outnumber the bound after {@link #trim}; the
 * tier's {@code used()} equals the store's reserved bytes there plus {@link #bytes()} (when the
 * store is the tier's only user).
 */
final class ReusableBlocks {

    /** At most this many blocks are kept per tier, whatever the watermarks allow. */
    static final int MAX_BLOCKS = 256;

    private final Tier tier;
    private final long blockBytes; // bytes: the tier's uniform allocation size
    private final long[] handles = new long[MAX_BLOCKS]; // [count] live allocations, top at count - 1
    private int count;
    private long firstBytes; // sum of the kept blocks' first bytes: the reads' results, kept so the reads stay
    private int limit; // blocks that may be kept now: min(MAX_BLOCKS, room between the watermarks in blocks)

    private ReusableBlocks(Tier tier, long blockBytes) {
        this.tier = tier;
        this.blockBytes = blockBytes;
    }

    /** Blocks kept for {@code tier}, or null when its allocations are not uniform blocks. */
    static ReusableBlocks of(Tier tier) {
        long block = tier.uniformAllocationBytes();
        return block > 0 ? new ReusableBlocks(tier, block) : null;
    }

    /**
     * Sets the bound from the tier's watermarks (bytes) and frees the kept blocks above it. At least
     * one block may be kept, so that a tier whose two watermarks meet still hands its one victim's
     * block to the allocation that evicted it.
     */
    void trim(long highBytes, long lowBytes) {
        limit = (int) Math.max(1, Math.min(MAX_BLOCKS, (highBytes - lowBytes) / blockBytes));
        while (count > limit) {
            tier.free(handles[--count]);
        }
    }

    /**
     * Keeps {@code handle}, the block of an evicted copy; false (the caller frees it) when the bound
     * is reached. Reads the block's first byte: the pass's reads overlap one another, and the put
     * that takes the block then writes a line already in cache, where a write to a line not in
     * cache would hold the put's next atomic update (and the store's lock) until the line arrived.
     */
    boolean keep(long handle) {
        if (count >= limit) {
            return false;
        }
        handles[count++] = handle;
        firstBytes += tier.segment(handle, 0, 1).get(ValueLayout.JAVA_BYTE, 0);
        return true;
    }

    /** A kept block for an object of {@code size} bytes, or {@link Allocator#FULL} if none is kept or it does not fit. */
    long take(long size) {
        if (count == 0 || size > blockBytes) {
            return Allocator.FULL;
        }
        return handles[--count];
    }

    /** Frees every kept block to the tier. */
    void release() {
        while (count > 0) {
            tier.free(handles[--count]);
        }
    }

    /** Bytes of the tier the kept blocks hold. */
    long bytes() {
        return count * blockBytes;
    }
}
