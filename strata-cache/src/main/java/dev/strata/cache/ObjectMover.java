package dev.strata.cache;

import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Tier;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Copies one object's bytes from an allocation in one tier to an allocation in another, through
 * the {@link Tier} interface only. Every byte movement of the store goes through this class, so
 * that it can be replaced by the asynchronous transfer engine without touching placement logic.
 *
 * <p>Routing: into plain memory, the source reads straight into the destination's view; out of
 * plain memory, the destination writes straight from the source's view; between two framed tiers
 * (POOL, DISK) the bytes pass through a staging buffer that is reused (grown by doubling, from one
 * arena that lives as long as the mover).
 *
 * <p>Threads: not thread-safe (the staging buffer is shared); the store calls it under its lock.
 */
final class ObjectMover implements AutoCloseable {
    private static final long MIN_STAGING = 64 * 1024;

    private final Arena arena = Arena.ofShared(); // owns every staging buffer; closed with the mover
    private MemorySegment staging = MemorySegment.NULL; // [capacity] bytes, reused
    private long bytesMoved; // payload bytes copied since creation

    /**
     * Copies {@code size} bytes of the object at {@code srcHandle} in {@code src} to the allocation
     * {@code dstHandle} in {@code dst}.
     *
     * @return false if the source has no readable object there
     * @throws CorruptObjectException if the source copy fails its checksum
     */
    boolean copy(Tier src, long srcHandle, Tier dst, long dstHandle, long size) {
        boolean ok;
        if (dst.isPlainMemory()) {
            ok = src.read(srcHandle, dst.segment(dstHandle, 0, size));
        } else if (src.isPlainMemory()) {
            dst.write(dstHandle, src.segment(srcHandle, 0, size));
            ok = true;
        } else {
            MemorySegment buffer = staging(size);
            ok = src.read(srcHandle, buffer);
            if (ok) {
                dst.write(dstHandle, buffer);
            }
        }
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

    private MemorySegment staging(long size) {
        if (staging.byteSize() < size) {
            long capacity = Math.max(MIN_STAGING, Long.highestOneBit(size - 1) << 1);
            staging = arena.allocate(capacity, 4096);
        }
        return staging.asSlice(0, size);
    }

    @Override
    public void close() {
        arena.close();
    }
}
