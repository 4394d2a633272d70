package dev.strata.memory.disk;

import static dev.strata.memory.posix.Libc.*;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

/**
 * The libc calls the DISK tier makes on a raw file descriptor, through the FFM {@link Linker}
 * (the same style as the POOL tier's {@code PosixMemoryMap}): {@code open(2)}, {@code close(2)},
 * {@code pwritev(2)} and {@code preadv(2)}, each capturing {@code errno}. Linux constants for
 * x86-64 and AArch64 (they differ only in {@code O_DIRECT}).
 *
 * <p>Why a raw descriptor: one vectored positional call moves an object's header block and its
 * payload together (one I/O instead of two), and, unlike a {@code FileChannel}, a descriptor is not
 * closed when a thread blocked on it is interrupted.
 *
 * <p>An I/O call takes a caller-owned scratch segment ({@link #SCRATCH_BYTES}, from a long-lived
 * arena) holding the {@code struct iovec} array and the captured call state, so a transfer
 * allocates nothing. Failures come back as {@link ErrnoException}, naming the call, the errno by
 * its symbolic name and its text ("ENOSPC (No space left on device)").
 *
 * <p>Stateless apart from the linked method handles; any thread (one scratch per thread at a time).
 */
@SuppressWarnings("restricted") // open, close, preadv and pwritev are called on purpose, with checked arguments
final class PosixFileIo {



    /** Most {@code struct iovec} entries one call passes (header block, payload, staged tail). */
    static final int MAX_IOVECS = 4;

    private static final long IOVEC_BYTES = 16; // struct iovec { void *iov_base; size_t iov_len; } on LP64
    private static final long CALL_STATE_AT = MAX_IOVECS * IOVEC_BYTES; // bytes, offset of the call state in scratch

    /** Bytes of scratch an I/O call needs: the iovec array, then the captured call state. */
    static final long SCRATCH_BYTES = CALL_STATE_AT + CALL_STATE.byteSize();
    /** Alignment of the scratch segment. */
    static final long SCRATCH_ALIGNMENT = Math.max(8, CALL_STATE.byteAlignment());


    /** A failed call: which call, on which file, and the errno. */
    static final class ErrnoException extends IOException {
        private static final long serialVersionUID = 1L;
        private final int errno; // the errno the call reported

        ErrnoException(String call, int errno) {
            super(call + " failed: " + describe(errno));
            this.errno = errno;
        }

        int errno() {
            return errno;
        }
    }

    private PosixFileIo() {
    }

    /**
     * Opens an existing file {@code path} with {@code flags} and returns its descriptor.
     *
     * @throws ErrnoException naming the path, the flags and the errno (EINVAL where the file
     *                        system refuses {@code O_DIRECT})
     */
    static int open(Path path, int flags) throws IOException {
        try (Arena scratch = Arena.ofConfined()) { // at open only, never per transfer
            MemorySegment state = scratch.allocate(CALL_STATE);
            MemorySegment cPath = scratch.allocateFrom(path.toString());
            while (true) {
                int fd = (int) OPEN.invokeExact(state, cPath, flags, 0);
                if (fd >= 0) {
                    return fd;
                }
                int errno = errno(state);
                if (errno != EINTR) {
                    throw new ErrnoException("open(" + path + ", 0x" + Integer.toHexString(flags) + ")", errno);
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("open(" + path + ") failed in the native call", t);
        }
    }

    /** Closes {@code fd}; EINTR is not retried (Linux releases the descriptor anyway). */
    static void close(int fd, Path path) throws IOException {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment state = scratch.allocate(CALL_STATE);
            int rc = (int) CLOSE.invokeExact(state, fd);
            if (rc != 0 && errno(state) != EINTR) {
                throw new ErrnoException("close(" + fd + ") of " + path, errno(state));
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("close(" + fd + ") failed in the native call", t);
        }
    }

    /** Sets iovec {@code index} in {@code scratch} to {@code length} bytes at {@code address}. */
    static void iovec(MemorySegment scratch, int index, long address, long length) {
        long at = index * IOVEC_BYTES;
        scratch.set(ValueLayout.JAVA_LONG, at, address);
        scratch.set(ValueLayout.JAVA_LONG, at + 8, length);
    }

    /**
     * One {@code pwritev(2)} (write) or {@code preadv(2)} (read) of the first {@code count} iovecs
     * in {@code scratch} at file offset {@code position}.
     *
     * @return bytes moved ({@code >= 0}), or {@code -errno} if the call failed
     */
    static long vectored(boolean write, int fd, MemorySegment scratch, int count, long position) {
        MemorySegment state = scratch.asSlice(CALL_STATE_AT, CALL_STATE.byteSize());
        long n;
        try {
            n = write ? (long) PWRITEV.invokeExact(state, fd, scratch, count, position)
                    : (long) PREADV.invokeExact(state, fd, scratch, count, position);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException((write ? "pwritev" : "preadv") + " failed in the native call", t);
        }
        return n >= 0 ? n : -errno(state);
    }


}
