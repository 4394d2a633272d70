package dev.strata.memory.transfer;

import dev.strata.memory.Sizes;
import dev.strata.memory.host.OffHeapRegion;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The one pool of HOST bounce buffers in Strata: a fixed number of equal, aligned buffers carved
 * from one long-lived {@link OffHeapRegion}, lent out one at a time and given back. Its users: the
 * copy between two non-plain tiers ({@link TierCopy}, for the transfer engine's links and the
 * object store), the DISK tier's direct-I/O staging (each buffer also holds the I/O call's
 * scratch), and the KV block manager's two-stage disk reads.
 *
 * <p>Design (policy): buffers are never allocated per operation. The region holds
 * {@code buffers} slots of {@code bufferBytes} rounded up to {@code alignment}, so every buffer
 * starts on an {@code alignment} boundary (4096 suits {@code O_DIRECT}). It is reserved and
 * pre-touched either when the pool is made ({@link Reserve#AT_CREATION}: the first transfer pays
 * no page faults) or on the first borrow ({@link Reserve#ON_FIRST_BORROW}: a pool that is never
 * used costs nothing). A borrower gets a view of its first {@code length} bytes (at most
 * {@link #bufferBytes()}; more is misuse and throws {@link IllegalArgumentException} naming both
 * sizes). When every buffer is lent, {@link #borrow} waits for one to come back (the pool bounds
 * the transfers in flight) while {@link #tryBorrow} fails fast with {@code null} (the caller takes
 * another path). Only the wait is interruptible: a borrow that finds a free buffer never looks at
 * the interrupt flag.
 *
 * <p>Invariants: a buffer is either free or lent to exactly one borrower; giving back a view
 * that is not a lent buffer of this pool (or giving one back twice) throws
 * {@link IllegalStateException}; the region is freed exactly once, by {@link #close()}.
 *
 * <p>Threads: {@link #borrow}, {@link #tryBorrow} and {@link #giveBack} from any thread; one lock
 * guards the free list (held for a few instructions, never during a copy). {@link #close()} may be
 * called from any thread once the owner knows no borrower still uses a buffer; borrowers waiting
 * at that moment wake and fail with {@link IllegalStateException}, and a buffer given back after
 * close is ignored.
 */
public final class StagingPool implements AutoCloseable {

    /** When the pool's region is reserved. */
    public enum Reserve {
        /** At construction, pre-touched: for pools that are used from the start (DISK tier). */
        AT_CREATION,
        /** On the first borrow, pre-touched: for pools that many owners never use. */
        ON_FIRST_BORROW
    }

    private final String name;
    private final int buffers;                   // buffers in all, >= 1
    private final long bufferBytes;              // usable bytes per buffer
    private final long alignment;                // bytes, a power of two; every buffer starts on it
    private final long stride;                   // bytes between buffer starts: bufferBytes rounded up to alignment
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition returned = lock.newCondition();
    private final int[] free;                    // [buffers] stack of free buffer indices, guarded by lock
    private final boolean[] lent;                // [buffers] true while a buffer is borrowed, guarded by lock
    private int freeCount;                       // entries on the free stack, guarded by lock
    private OffHeapRegion region;                // null until reserved, guarded by lock
    private MemorySegment base;                  // [buffers x stride] aligned start of buffer 0 in region, guarded by lock
    private boolean closed;                      // guarded by lock

    /**
     * @param name        names the region in the memory audit and the pool in messages
     * @param buffers     buffers in all, {@code >= 1}
     * @param bufferBytes usable bytes per buffer, {@code > 0}
     * @param alignment   bytes, a power of two; every buffer's address is a multiple of it
     * @param reserve     when the region is reserved
     */
    public StagingPool(String name, int buffers, long bufferBytes, long alignment, Reserve reserve) {
        if (buffers < 1) {
            throw new IllegalArgumentException("staging pool '" + name + "': buffer count must be >= 1, got " + buffers);
        }
        if (bufferBytes <= 0) {
            throw new IllegalArgumentException("staging pool '" + name + "': buffer size must be positive, got " + bufferBytes);
        }
        if (!Sizes.isPowerOfTwo(alignment)) {
            throw new IllegalArgumentException("staging pool '" + name + "': alignment must be a power of two, got " + alignment);
        }
        this.name = name;
        this.buffers = buffers;
        this.bufferBytes = bufferBytes;
        this.alignment = alignment;
        this.stride = Sizes.alignUp(bufferBytes, alignment);
        if (stride > Long.MAX_VALUE / buffers) {
            throw new IllegalArgumentException("staging pool '" + name + "': " + buffers + " buffers of " + bufferBytes
                    + " bytes do not fit in a region");
        }
        this.free = new int[buffers];
        this.lent = new boolean[buffers];
        for (int i = 0; i < buffers; i++) {
            free[i] = buffers - 1 - i; // buffer 0 on top
        }
        this.freeCount = buffers;
        if (reserve == Reserve.AT_CREATION) {
            lock.lock();
            try {
                reserve();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Borrows a buffer, waiting while all are lent, and returns a view of its first {@code length}
     * bytes (aligned); give it back with {@link #giveBack}.
     *
     * @throws IllegalArgumentException if {@code length} is not in {@code [1, bufferBytes()]}
     * @throws InterruptedException     if interrupted while waiting (the flag is cleared, as usual)
     * @throws IllegalStateException    if the pool is or gets closed
     */
    public MemorySegment borrow(long length) throws InterruptedException {
        checkLength(length);
        lock.lock();
        try {
            while (true) {
                checkOpen();
                if (freeCount > 0) {
                    return lend(length);
                }
                returned.await();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Borrows a whole buffer ({@link #bufferBytes()} bytes), waiting while all are lent; see {@link #borrow(long)}. */
    public MemorySegment borrow() throws InterruptedException {
        return borrow(bufferBytes);
    }

    /**
     * Borrows a buffer if one is free and returns a view of its first {@code length} bytes, or
     * returns {@code null} at once when all are lent.
     *
     * @throws IllegalArgumentException if {@code length} is not in {@code [1, bufferBytes()]}
     * @throws IllegalStateException    if the pool is closed
     */
    public MemorySegment tryBorrow(long length) {
        checkLength(length);
        lock.lock();
        try {
            checkOpen();
            return freeCount > 0 ? lend(length) : null;
        } finally {
            lock.unlock();
        }
    }

    /** Gives back a view returned by {@link #borrow} or {@link #tryBorrow}; ignored after {@link #close()}. */
    public void giveBack(MemorySegment buffer) {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            long offset = base == null ? -1 : buffer.address() - base.address();
            int index = offset < 0 || offset % stride != 0 || offset / stride >= buffers ? -1 : (int) (offset / stride);
            if (index < 0 || !lent[index]) {
                throw new IllegalStateException("staging pool '" + name + "': the buffer at address 0x"
                        + Long.toHexString(buffer.address()) + " is not lent by this pool"
                        + (index < 0 ? "" : " (buffer " + index + " given back twice?)"));
            }
            lent[index] = false;
            free[freeCount++] = index;
            returned.signal();
        } finally {
            lock.unlock();
        }
    }

    private MemorySegment lend(long length) {
        if (base == null) {
            reserve();
        }
        int index = free[--freeCount];
        lent[index] = true;
        return base.asSlice(index * stride, length);
    }

    private void reserve() {
        long slack = alignment > OffHeapRegion.PAGE ? alignment : 0; // the region itself starts on a page
        region = OffHeapRegion.allocate(name, buffers * stride + slack, true);
        MemorySegment all = region.segment();
        long skip = Sizes.alignUp(all.address(), alignment) - all.address();
        base = all.asSlice(skip, buffers * stride);
    }

    private void checkLength(long length) {
        if (length <= 0 || length > bufferBytes) {
            throw new IllegalArgumentException("staging pool '" + name + "': a buffer of " + length
                    + " bytes was asked for; its buffers hold " + bufferBytes + " bytes");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("staging pool '" + name + "' is closed");
        }
    }

    public String name() {
        return name;
    }

    /** Usable bytes of one buffer. */
    public long bufferBytes() {
        return bufferBytes;
    }

    /** Buffers in all. */
    public int buffers() {
        return buffers;
    }

    /** Alignment of every buffer's address, bytes. */
    public long alignment() {
        return alignment;
    }

    /** Buffers lent right now. */
    public int lent() {
        lock.lock();
        try {
            return buffers - freeCount;
        } finally {
            lock.unlock();
        }
    }

    /** True once the region has been reserved (and until close). */
    public boolean isReserved() {
        lock.lock();
        try {
            return region != null && !closed;
        } finally {
            lock.unlock();
        }
    }

    /** Frees the region and wakes waiting borrowers (who then fail); later calls do nothing. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            if (region != null) {
                region.close();
            }
            returned.signalAll();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return "StagingPool['" + name + "', " + buffers + " x " + Sizes.format(bufferBytes) + ", aligned to " + alignment + "]";
    }
}
