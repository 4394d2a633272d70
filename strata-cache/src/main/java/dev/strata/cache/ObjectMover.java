package dev.strata.cache;

import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Tier;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.transfer.StagingPool;
import dev.strata.memory.transfer.TierCopy;

import java.lang.foreign.MemorySegment;

/**
 * The store's use of the one copy path ({@link TierCopy}): copies one object's bytes from an
 * allocation in one tier to an allocation in another, and counts the bytes moved. Every byte
 * movement of the store between tiers goes through this class.
 *
 * <p>Design (bounce buffer sizing): routing, checksums and metering are {@link TierCopy}'s. A
 * copy between two non-plain tiers (POOL, DISK, PEER) needs one bounce buffer as large as the
 * object; the store's objects have no fixed size, so the mover keeps a one-buffer
 * {@link StagingPool}, reserved on first need at the smallest power of two that holds the object
 * (at least {@value #MIN_STAGING} bytes), and replaces it with a larger one when a larger object
 * comes (the old one is freed at once: nothing is lent outside a call).
 *
 * <p>Threads: not thread-safe (one bounce buffer); the store calls it under its lock.
 */
final class ObjectMover implements AutoCloseable {
    private static final long MIN_STAGING = 64 * 1024;

    private TierCopy copyPath; // null until a copy between two non-plain tiers needs its bounce buffer
    private long bytesMoved; // payload bytes copied since creation

    /**
     * Copies {@code size} bytes of the object at {@code srcHandle} in {@code src} to the allocation
     * {@code dstHandle} in {@code dst}.
     *
     * @return false if the source has no readable object there
     * @throws CorruptObjectException if the source copy fails its checksum
     */
    boolean copy(Tier src, long srcHandle, Tier dst, long dstHandle, long size) {
        TierCopy path = TierCopy.Route.of(src, dst) == TierCopy.Route.FRAMED_TO_FRAMED ? bouncing(size) : TierCopy.direct();
        boolean ok = path.copy(src, srcHandle, dst, dstHandle, size) != TierCopy.NOT_FOUND;
        if (ok) {
            bytesMoved += size;
        }
        return ok;
    }

    /**
     * Reads the object at {@code handle} of {@code src} into {@code dst} (exactly its size).
     *
     * @return false if no readable object is there
     * @throws CorruptObjectException if the copy fails its checksum
     */
    boolean readOut(Tier src, long handle, MemorySegment dst) {
        return src.read(handle, dst);
    }

    /** Payload bytes copied between tiers since creation. */
    long bytesMoved() {
        return bytesMoved;
    }

    /** The copy path with a bounce buffer of at least {@code size} bytes. */
    private TierCopy bouncing(long size) {
        if (copyPath == null || copyPath.staging().bufferBytes() < size) {
            long capacity = Math.max(MIN_STAGING, Long.highestOneBit(size - 1) << 1);
            if (copyPath != null) {
                copyPath.staging().close();
            }
            copyPath = new TierCopy(new StagingPool("store-staging", 1, capacity, OffHeapRegion.PAGE,
                    StagingPool.Reserve.ON_FIRST_BORROW));
        }
        return copyPath;
    }

    @Override
    public void close() {
        if (copyPath != null) {
            copyPath.staging().close();
        }
    }
}
