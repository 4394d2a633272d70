package dev.strata.memory.host;

import dev.strata.memory.Allocator;
import dev.strata.memory.TierKind;
import dev.strata.memory.alloc.BestFitAllocator;
import dev.strata.memory.alloc.SlabAllocator;

/**
 * The HOST tier: off-heap DRAM of this process, one {@link OffHeapRegion} carved by an allocator.
 *
 * <p>{@link #create} uses a best-fit allocator with {@value OffHeapRegion#PAGE}-byte alignment (so
 * views can feed direct I/O) over a pre-touched region; {@link #slab} uses fixed-size blocks.
 *
 * <p>Threads: any; see {@link PlainMemoryTier}.
 */
public final class HostTier extends PlainMemoryTier {

    private HostTier(String name, OffHeapRegion region, Allocator allocator) {
        super(name, TierKind.HOST, region.segment(), allocator, region);
    }

    /** A HOST tier of {@code capacityBytes} with best-fit placement, page-aligned, pre-touched. */
    public static HostTier create(String name, long capacityBytes) {
        BestFitAllocator allocator = new BestFitAllocator(capacityBytes, OffHeapRegion.PAGE);
        return new HostTier(name, OffHeapRegion.allocate("host:" + name, capacityBytes, true), allocator);
    }

    /** A HOST tier of fixed-size blocks of {@code blockBytes} (a tail smaller than a block is unused), pre-touched. */
    public static HostTier slab(String name, long capacityBytes, long blockBytes) {
        SlabAllocator allocator = new SlabAllocator(capacityBytes, blockBytes);
        return new HostTier(name, OffHeapRegion.allocate("host:" + name, allocator.capacity(), true), allocator);
    }
}
