package dev.strata.memory.device;

import dev.strata.memory.alloc.BestFitAllocator;
import dev.strata.memory.host.OffHeapRegion;

import java.lang.foreign.MemorySegment;

/**
 * The CPU backend's "device": an off-heap arena of exactly the budget, carved by a best-fit
 * allocator. Because the arena is the budget, allocations can never exceed it; a request that
 * does not fit returns {@link dev.strata.memory.Allocator#FULL}. Copies are
 * {@link MemorySegment#copy} calls with bounds checks.
 *
 * <p>Alignment is {@value #ALIGNMENT} bytes so that views of device ranges can feed direct I/O.
 *
 * <p>Threads: any; the allocator takes a lock, copies take none.
 */
public final class CpuDeviceBackend implements DeviceBackend {

    /** Alignment of device ranges, bytes. */
    public static final long ALIGNMENT = 4096;

    private final String name;
    private final OffHeapRegion region;        // [budget] device memory
    private final BestFitAllocator allocator;  // ranges of region

    /**
     * @param name        for messages and the memory audit
     * @param budgetBytes hard byte budget, {@code > 0}
     */
    public CpuDeviceBackend(String name, long budgetBytes) {
        if (budgetBytes <= 0) {
            throw new IllegalArgumentException("device '" + name + "' budget must be positive, got " + budgetBytes);
        }
        this.name = name;
        this.allocator = new BestFitAllocator(budgetBytes, ALIGNMENT);
        this.region = OffHeapRegion.allocate("device:" + name, budgetBytes, true);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long budgetBytes() {
        return allocator.capacity();
    }

    @Override
    public long used() {
        return allocator.used();
    }

    @Override
    public long allocationCount() {
        return allocator.allocationCount();
    }

    @Override
    public long alignment() {
        return ALIGNMENT;
    }

    @Override
    public long allocate(long size) {
        return allocator.allocate(size);
    }

    @Override
    public void free(long offset) {
        allocator.free(offset);
    }

    @Override
    public long sizeOf(long offset) {
        return allocator.sizeOf(offset);
    }

    @Override
    public long sizeIfAllocated(long offset) {
        return allocator.sizeIfAllocated(offset);
    }

    @Override
    public void copyHostToDevice(MemorySegment src, long dstOffset) {
        checkRange("host->device copy", dstOffset, src.byteSize());
        MemorySegment.copy(src, 0, region.segment(), dstOffset, src.byteSize());
    }

    @Override
    public void copyDeviceToHost(long srcOffset, MemorySegment dst) {
        checkRange("device->host copy", srcOffset, dst.byteSize());
        MemorySegment.copy(region.segment(), srcOffset, dst, 0, dst.byteSize());
    }

    @Override
    public void copyDeviceToDevice(long srcOffset, long dstOffset, long length) {
        checkRange("device->device copy source", srcOffset, length);
        checkRange("device->device copy destination", dstOffset, length);
        MemorySegment.copy(region.segment(), srcOffset, region.segment(), dstOffset, length);
    }

    @Override
    public boolean isHostAddressable() {
        return true;
    }

    @Override
    public MemorySegment hostView(long offset, long length) {
        checkRange("host view", offset, length);
        return region.segment().asSlice(offset, length);
    }

    private void checkRange(String what, long offset, long length) {
        long budget = allocator.capacity();
        if (offset < 0 || length < 0 || offset > budget - length) {
            throw new IllegalArgumentException("device '" + name + "': " + what + " of " + length + " bytes at offset "
                    + offset + " is outside [0, " + budget + ")");
        }
    }

    @Override
    public void close() {
        region.close();
    }
}
