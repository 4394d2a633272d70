package dev.strata.memory.pool;

import static dev.strata.memory.posix.Libc.*;

import dev.strata.memory.Sizes;
import dev.strata.memory.TierIoException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reserves the space of a pool file when the pool is created, so that a full file system is an
 * error at start-up naming the path, the size and the free space, never a fault on a mapped page
 * later (a sparse file on a tmpfs that fills faults the process that writes into it).
 *
 * <p>Design note: a regular file is first checked against its file system's usable space, then
 * its blocks are allocated with {@code posix_fallocate(3)} (called through the FFM linker), which
 * on tmpfs allocates the pages themselves. Where the file system cannot allocate ahead
 * ({@code EOPNOTSUPP}, {@code ENOSYS}, {@code EINVAL}), the check alone stands. Called once per
 * file, by the process that creates the pool; attaching processes reserve nothing.
 *
 * <p>Stateless; any thread.
 */
@SuppressWarnings("restricted") // open, close and posix_fallocate are called on purpose, with checked arguments
final class PoolFileSpace {

    private PoolFileSpace() {
    }

    /**
     * Makes sure that the first {@code bytes} bytes of the regular file {@code file} have space
     * behind them.
     *
     * @param pool the pool's name, for the error
     * @throws TierIoException naming the path, the size wanted and the space free, if the file
     *                         system has not enough room or the allocation fails
     */
    static void reserve(String pool, Path file, long bytes) {
        FileStore store;
        long usable;
        try {
            store = Files.getFileStore(file);
            usable = store.getUsableSpace();
        } catch (IOException e) {
            throw new TierIoException(pool, "reading the free space under pool file " + file, e);
        }
        if (usable < bytes) {
            throw noRoom(pool, file, bytes, store, usable, null);
        }
        int error;
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment state = scratch.allocate(CALL_STATE);
            int fd = (int) OPEN.invokeExact(state, scratch.allocateFrom(file.toString()), O_RDWR | O_CLOEXEC, 0);
            if (fd < 0) {
                throw new TierIoException(pool, "opening pool file " + file + " to reserve its space",
                        new IOException(describe(errno(state))));
            }
            try {
                do {
                    error = (int) POSIX_FALLOCATE.invokeExact(state, fd, 0L, bytes);
                } while (error == EINTR);
            } finally {
                int rc = (int) CLOSE.invokeExact(state, fd);
                assert rc == 0;
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
        switch (error) {
            case 0, EOPNOTSUPP, ENOSYS, EINVAL -> { // EINVAL: this file system cannot allocate ahead
            }
            case ENOSPC, EDQUOT -> throw noRoom(pool, file, bytes, store, freeNow(store), describe(error));
            default -> throw new TierIoException(pool, "reserving " + bytes + " bytes for pool file " + file,
                    new IOException("posix_fallocate: " + describe(error)));
        }
    }

    private static long freeNow(FileStore store) {
        try {
            return store.getUsableSpace();
        } catch (IOException e) {
            return -1;
        }
    }

    private static TierIoException noRoom(String pool, Path file, long bytes, FileStore store, long usable, String errno) {
        String free = usable < 0 ? "an unknown amount" : "only " + Sizes.format(usable) + " (" + usable + " bytes)";
        return new TierIoException(pool, "reserving " + Sizes.format(bytes) + " (" + bytes + " bytes) for pool file " + file,
                new IOException((errno != null ? errno + ": " : "") + "its file system (" + store + ") has " + free
                        + " free; free space there, lower the pool's capacity (tiers.pool.capacity, --pool-capacity),"
                        + " or put the pool on a larger file system"));
    }
}
