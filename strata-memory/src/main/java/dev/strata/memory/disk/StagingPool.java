package dev.strata.memory.disk;

import java.io.InterruptedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A small fixed set of block-aligned staging buffers for direct I/O, each with a small native
 * scratch area for the vectored I/O call ({@code struct iovec} array and captured errno, see
 * {@link PosixFileIo#SCRATCH_BYTES}), all carved from one shared arena created when the pool is
 * made and closed once when it is closed (never an arena per operation).
 *
 * <p>An operation borrows one buffer for its whole duration and returns it; when all are
 * borrowed, {@link #acquire} waits, which bounds the number of transfers in flight to
 * {@link #count()}.
 *
 * <p>Threads: {@link #acquire} and {@link #release} from any thread (a blocking queue);
 * {@link #close} once, after every borrowed buffer has come back (the owner guarantees this).
 * Invariant: a buffer is either in the queue or borrowed by exactly one operation.
 */
final class StagingPool implements AutoCloseable {

    private final Arena arena = Arena.ofShared();
    private final ArrayBlockingQueue<Lease> idle;
    private final int count;          // buffers in all
    private final long bufferSize;    // bytes per buffer, a multiple of the alignment
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * @param count      buffers, {@code >= 1}
     * @param bufferSize bytes per buffer, a positive multiple of {@code alignment}
     * @param alignment  bytes, a power of two; every buffer's address is a multiple of it
     */
    StagingPool(int count, long bufferSize, long alignment) {
        if (count < 1 || bufferSize <= 0 || !BlockAlignment.isAligned(bufferSize, alignment)) {
            throw new IllegalArgumentException("staging pool of " + count + " buffers of " + bufferSize
                    + " bytes aligned to " + alignment + " is not valid");
        }
        this.count = count;
        this.bufferSize = bufferSize;
        this.idle = new ArrayBlockingQueue<>(count);
        for (int i = 0; i < count; i++) {
            MemorySegment buffer = arena.allocate(bufferSize, alignment);
            buffer.fill((byte) 0); // touch every page now rather than on the first transfer
            MemorySegment scratch = arena.allocate(PosixFileIo.SCRATCH_BYTES, PosixFileIo.SCRATCH_ALIGNMENT);
            idle.add(new Lease(buffer, scratch));
        }
    }

    /**
     * What one operation borrows.
     *
     * @param buffer  {@link #bufferSize()} bytes, block-aligned
     * @param scratch {@link PosixFileIo#SCRATCH_BYTES} bytes for one vectored call at a time
     */
    record Lease(MemorySegment buffer, MemorySegment scratch) {
    }

    /** Borrows a buffer, waiting while all are borrowed (only the wait is interruptible). */
    Lease acquire() throws InterruptedIOException {
        Lease ready = idle.poll();
        if (ready != null) {
            return ready;
        }
        try {
            return idle.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for one of " + count + " staging buffers");
        }
    }

    /** Returns a buffer borrowed with {@link #acquire}. */
    void release(Lease lease) {
        if (!idle.offer(lease)) {
            throw new IllegalStateException("staging buffer returned twice (pool holds " + count + ")");
        }
    }

    long bufferSize() {
        return bufferSize;
    }

    int count() {
        return count;
    }

    /** Frees the arena; later calls are no-ops. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            idle.clear();
            arena.close();
        }
    }
}
