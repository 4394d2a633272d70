package dev.strata.memory.host;

import dev.strata.memory.Allocator;
import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierMeter;
import dev.strata.memory.TierStats;
import dev.strata.memory.transfer.NonTemporalCopy;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The mechanics shared by tiers whose objects are plain bytes in this process's address space
 * (HOST, and DEVICE on the CPU backend): an {@link Allocator} carves one memory segment, a handle
 * is an allocation's offset in it, and reads and writes are plain memory copies.
 *
 * <p>Checks on every data call: the handle must be a live allocation and the length must fit its
 * {@link #allocationSize}; otherwise {@link IllegalArgumentException} names the tier, the handle
 * and the lengths. Copies of {@link NonTemporalCopy#MIN_BYTES} or more between this memory and
 * other anonymous memory use streaming stores ({@link NonTemporalCopy}). {@link #read} and
 * {@link #scatterRead} of a handle that is not allocated return
 * {@code false} (the object is not there, an expected outcome); every allocated handle reads
 * {@code true}, whatever was written to it. Every read and write is recorded in the tier's
 * {@link TierMeter}.
 *
 * <p>Threads: any thread may call any method; allocation is as thread-safe as the allocator (both
 * Strata allocators are), copies take no lock. As the {@link Tier} contract says, callers must not
 * race a write of one allocation with another access to it. After {@link #close()} every call
 * throws {@link IllegalStateException}.
 */
public class PlainMemoryTier implements Tier {

    private final String name;
    private final TierKind kind;
    private final MemorySegment memory;     // [allocator.capacity()] bytes carved by the allocator
    private final Allocator allocator;      // offsets into memory
    private final AutoCloseable release;    // frees memory on close
    private final TierMeter meter = new TierMeter();
    private volatile boolean closed;

    /**
     * @param name      tier name, unique in the process
     * @param kind      the tier's kind
     * @param memory    the bytes; at least {@code allocator.capacity()} long
     * @param allocator hands out offsets in {@code memory}
     * @param release   closed once when the tier closes (the memory's owner)
     */
    protected PlainMemoryTier(String name, TierKind kind, MemorySegment memory, Allocator allocator, AutoCloseable release) {
        if (memory.byteSize() < allocator.capacity()) {
            throw new IllegalArgumentException("tier '" + name + "': memory of " + memory.byteSize()
                    + " bytes is smaller than allocator capacity " + allocator.capacity());
        }
        this.name = name;
        this.kind = kind;
        this.memory = memory;
        this.allocator = allocator;
        this.release = release;
    }

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final TierKind kind() {
        return kind;
    }

    @Override
    public final long capacity() {
        return allocator.capacity();
    }

    @Override
    public final long used() {
        return allocator.used();
    }

    /** Live allocations. */
    public final long allocationCount() {
        return allocator.allocationCount();
    }

    @Override
    public boolean sharedAcrossProcesses() {
        return false;
    }

    @Override
    public boolean revocable() {
        return false;
    }

    @Override
    public final boolean isAddressable() {
        return true;
    }

    @Override
    public final boolean isPlainMemory() {
        return true;
    }

    @Override
    public long allocate(long size) {
        checkOpen();
        if (size <= 0) {
            throw new IllegalArgumentException("tier '" + name + "': allocation size must be positive, got " + size);
        }
        return allocator.allocate(size);
    }

    @Override
    public void free(long handle) {
        checkOpen();
        try {
            allocator.free(handle);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new IllegalArgumentException("handle " + handle + " cannot be freed in tier '" + name + "': " + e.getMessage(), e);
        }
    }

    @Override
    public final long uniformAllocationBytes() {
        return allocator.uniformBlockBytes();
    }

    @Override
    public final long allocationSize(long handle) {
        checkOpen();
        try {
            return allocator.sizeOf(handle);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new IllegalArgumentException("handle " + handle + " is not allocated in tier '" + name + "' ("
                    + e.getMessage() + ")", e);
        }
    }

    private void checkFits(String operation, long handle, long size, long length) {
        if (length > size) {
            throw new IllegalArgumentException("tier '" + name + "': " + operation + " of " + length
                    + " bytes does not fit allocation " + handle + " of " + size + " bytes");
        }
    }

    @Override
    public void write(long handle, MemorySegment src) {
        checkOpen();
        long size = allocationSize(handle);
        long length = src.byteSize();
        checkFits("write", handle, size, length);
        long start = meter.startWrite();
        NonTemporalCopy.copy(src, 0, memory, handle, length);
        meter.writeDone(length, start);
    }

    @Override
    public void gatherWrite(long handle, List<MemorySegment> parts) {
        checkOpen();
        long size = allocationSize(handle);
        long total = totalBytes(parts);
        checkFits("gather write", handle, size, total);
        long start = meter.startWrite();
        NonTemporalCopy.gather(parts, memory.asSlice(handle, total));
        meter.writeDone(total, start);
    }

    @Override
    public boolean read(long handle, MemorySegment dst) {
        checkOpen();
        long size = allocator.sizeIfAllocated(handle);
        if (size < 0) {
            return false;
        }
        long length = dst.byteSize();
        checkFits("read", handle, size, length);
        long start = meter.startRead();
        NonTemporalCopy.copy(memory, handle, dst, 0, length);
        meter.readDone(length, start);
        return true;
    }

    @Override
    public boolean scatterRead(long handle, List<MemorySegment> parts) {
        checkOpen();
        long size = allocator.sizeIfAllocated(handle);
        if (size < 0) {
            return false;
        }
        long total = totalBytes(parts);
        checkFits("scatter read", handle, size, total);
        long start = meter.startRead();
        NonTemporalCopy.scatter(memory.asSlice(handle, total), parts);
        meter.readDone(total, start);
        return true;
    }

    @Override
    public MemorySegment segment(long handle, long offset, long length) {
        checkOpen();
        long size = allocationSize(handle);
        if (offset < 0 || length < 0 || offset > size - length) {
            throw new IllegalArgumentException("tier '" + name + "': view [" + offset + ", " + offset + " + " + length
                    + ") is outside allocation " + handle + " of " + size + " bytes");
        }
        return memory.asSlice(handle + offset, length);
    }

    /**
     * The view of the first {@code length} bytes of allocation {@code handle}, or null if
     * {@code handle} is not allocated (the object is not there, as {@link #read} returning false).
     * For copy engines that move bytes between views; such callers meter the access with
     * {@link #recordDirectRead}.
     *
     * @throws IllegalArgumentException if {@code length} is negative or does not fit the allocation
     */
    public final MemorySegment viewIfAllocated(long handle, long length) {
        checkOpen();
        long size = allocator.sizeIfAllocated(handle);
        if (size < 0) {
            return null;
        }
        if (length < 0) {
            throw new IllegalArgumentException("tier '" + name + "': view length " + length + " is negative (handle " + handle + ")");
        }
        checkFits("read", handle, size, length);
        return memory.asSlice(handle, length);
    }

    /**
     * Records a read or write that a caller performed directly on a {@link #segment} view, so that
     * the meter sees zero-copy traffic too.
     */
    public final void recordDirectRead(long ops, long bytes, long nanos) {
        meter.recordReads(ops, bytes, nanos);
    }

    /** See {@link #recordDirectRead}. */
    public final void recordDirectWrite(long ops, long bytes, long nanos) {
        meter.recordWrites(ops, bytes, nanos);
    }

    @Override
    public TierStats stats() {
        return meter.snapshot(name, kind, allocator.capacity(), allocator.used(), allocator.allocationCount());
    }

    /** True until {@link #close()}. */
    public final boolean isOpen() {
        return !closed;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        try {
            release.close();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("tier '" + name + "': releasing memory failed: " + e.getMessage(), e);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("tier '" + name + "' is closed");
        }
    }

    private static long totalBytes(List<MemorySegment> parts) {
        long total = 0;
        for (int i = 0, n = parts.size(); i < n; i++) {
            total += parts.get(i).byteSize();
        }
        return total;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "['" + name + "', " + kind + ", " + allocator.used() + "/" + allocator.capacity() + " bytes]";
    }
}
