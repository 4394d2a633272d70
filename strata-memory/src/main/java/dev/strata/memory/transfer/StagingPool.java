package dev.strata.memory.transfer;

import dev.strata.memory.Allocator;
import dev.strata.memory.alloc.BestFitAllocator;
import dev.strata.memory.host.OffHeapRegion;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Reusable page-aligned HOST buffers for copies between two tiers that are not plain memory
 * (e.g. DISK to POOL): the object is read into a staging buffer, then written from it.
 *
 * <p>Design: one pre-touched {@link OffHeapRegion} of {@code capacity} bytes, reserved on first
 * use and carved by a {@link BestFitAllocator} with {@value OffHeapRegion#PAGE}-byte alignment, so
 * no transfer allocates memory of its own and every buffer suits direct I/O. When the region is
 * momentarily full, {@link #acquire} waits for a release; a request larger than the region is
 * misuse and throws.
 *
 * <p>Threads: any; a lock guards reservation and release (not the copies).
 */
final class StagingPool implements AutoCloseable {

    private final long capacity;                 // bytes
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition released = lock.newCondition();
    private OffHeapRegion region;                // null until first use
    private BestFitAllocator allocator;          // ranges of region
    private boolean closed;

    StagingPool(long capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("staging capacity must be positive, got " + capacity);
        }
        this.capacity = capacity;
    }

    /** A buffer of exactly {@code length} bytes; give its offset back with {@link #release}. */
    MemorySegment acquire(long length) throws InterruptedException {
        if (length <= 0 || length > capacity) {
            throw new IllegalArgumentException("staging buffer of " + length + " bytes requested; the staging pool holds "
                    + capacity + " bytes (raise TransferEngine.Settings.stagingBytes)");
        }
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("staging pool is closed");
            }
            if (region == null) {
                region = OffHeapRegion.allocate("transfer-staging", capacity, true);
                allocator = new BestFitAllocator(capacity, OffHeapRegion.PAGE);
            }
            while (true) {
                long offset = allocator.allocate(length);
                if (offset != Allocator.FULL) {
                    return region.segment().asSlice(offset, length);
                }
                released.await(10, TimeUnit.MILLISECONDS);
                if (closed) {
                    throw new IllegalStateException("staging pool is closed");
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Returns a buffer from {@link #acquire}. */
    void release(MemorySegment buffer) {
        lock.lock();
        try {
            allocator.free(buffer.address() - region.segment().address());
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            if (region != null) {
                region.close();
            }
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
