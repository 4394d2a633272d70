package dev.strata.memory.device;

import java.lang.foreign.MemorySegment;

/**
 * Accelerator memory as the DEVICE tier sees it: a budget of bytes, ranges allocated and freed in
 * it, and copies in and out. A range is named by its offset in the backend's own address space.
 *
 * <p>Implementations: {@link CpuDeviceBackend} (a budgeted off-heap arena the CPU engine computes
 * from). A CUDA backend would implement the copies with the driver's memcpy calls on device
 * pointers and report {@link #isHostAddressable()} {@code false}.
 *
 * <p>Invariants every implementation keeps: {@link #used()} never exceeds {@link #budgetBytes()};
 * a full device is reported by {@link #allocate} returning {@link dev.strata.memory.Allocator#FULL}.
 *
 * <p>Threads: implementations say; {@link CpuDeviceBackend} allows any thread.
 */
public interface DeviceBackend extends AutoCloseable {

    /** Describes the device, e.g. {@code cpu} or {@code cuda:0}. */
    String name();

    /** Hard limit on bytes allocated at once. */
    long budgetBytes();

    /** Bytes allocated now, rounding included. */
    long used();

    /** Live allocations. */
    long allocationCount();

    /** Alignment of every allocated range, a power of two. */
    long alignment();

    /**
     * Allocates a device range of at least {@code size} bytes.
     *
     * @return its offset, or {@link dev.strata.memory.Allocator#FULL} when the budget does not allow it
     */
    long allocate(long size);

    /** Frees the range at {@code offset}; throws {@link IllegalArgumentException} naming it if not allocated. */
    void free(long offset);

    /** Bytes reserved for the range at {@code offset}; throws {@link IllegalArgumentException} naming it if not allocated. */
    long sizeOf(long offset);

    /** Bytes reserved for the range at {@code offset}, or {@link dev.strata.memory.Allocator#NOT_ALLOCATED}. */
    long sizeIfAllocated(long offset);

    /** Copies all of {@code src} (host memory) to device offset {@code dstOffset}. */
    void copyHostToDevice(MemorySegment src, long dstOffset);

    /** Fills all of {@code dst} (host memory) from device offset {@code srcOffset}. */
    void copyDeviceToHost(long srcOffset, MemorySegment dst);

    /** Copies {@code length} bytes between device offsets. */
    void copyDeviceToDevice(long srcOffset, long dstOffset, long length);

    /** True if device memory can be read and written by the host directly through {@link #hostView}. */
    boolean isHostAddressable();

    /**
     * A host view of device bytes {@code [offset, offset + length)}.
     *
     * @throws UnsupportedOperationException if not {@link #isHostAddressable()}
     */
    MemorySegment hostView(long offset, long length);

    /** Releases all device memory. */
    @Override
    void close();
}
