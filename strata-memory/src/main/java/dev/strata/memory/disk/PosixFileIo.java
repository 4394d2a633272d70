package dev.strata.memory.disk;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
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

    static final int O_RDWR = 0x2;
    static final int O_CLOEXEC = 0x80000;
    /** {@code O_DIRECT}: 040000 on x86-64, 0200000 on AArch64. */
    static final int O_DIRECT = "aarch64".equals(System.getProperty("os.arch")) ? 0x10000 : 0x4000;

    static final int EINTR = 4;
    static final int EAGAIN = 11;
    static final int ENOSPC = 28;

    /** Most {@code struct iovec} entries one call passes (header block, payload, staged tail). */
    static final int MAX_IOVECS = 4;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final long IOVEC_BYTES = 16; // struct iovec { void *iov_base; size_t iov_len; } on LP64
    private static final long CALL_STATE_AT = MAX_IOVECS * IOVEC_BYTES; // bytes, offset of the call state in scratch

    /** Bytes of scratch an I/O call needs: the iovec array, then the captured call state. */
    static final long SCRATCH_BYTES = CALL_STATE_AT + CALL_STATE.byteSize();
    /** Alignment of the scratch segment. */
    static final long SCRATCH_ALIGNMENT = Math.max(8, CALL_STATE.byteAlignment());

    /** {@code int open(const char *path, int flags, ...)}: variadic, the mode is the first variadic. */
    private static final MethodHandle OPEN = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("open"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("close"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            CAPTURE_ERRNO);
    /** {@code ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset)}. */
    private static final MethodHandle PWRITEV = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("pwritev"),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG),
            CAPTURE_ERRNO);
    /** {@code ssize_t preadv(int fd, const struct iovec *iov, int iovcnt, off_t offset)}. */
    private static final MethodHandle PREADV = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("preadv"),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG),
            CAPTURE_ERRNO);

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

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** "ENOSPC (No space left on device)" for the errno values a file transfer can meet; "errno N" otherwise. */
    static String describe(int errno) {
        String text = switch (errno) {
            case 1 -> "EPERM (Operation not permitted)";
            case 2 -> "ENOENT (No such file or directory)";
            case 4 -> "EINTR (Interrupted system call)";
            case 5 -> "EIO (Input/output error)";
            case 6 -> "ENXIO (No such device or address)";
            case 9 -> "EBADF (Bad file descriptor)";
            case 11 -> "EAGAIN (Resource temporarily unavailable)";
            case 12 -> "ENOMEM (Cannot allocate memory)";
            case 13 -> "EACCES (Permission denied)";
            case 14 -> "EFAULT (Bad address)";
            case 16 -> "EBUSY (Device or resource busy)";
            case 17 -> "EEXIST (File exists)";
            case 19 -> "ENODEV (No such device)";
            case 20 -> "ENOTDIR (Not a directory)";
            case 21 -> "EISDIR (Is a directory)";
            case 22 -> "EINVAL (Invalid argument)";
            case 23 -> "ENFILE (Too many open files in system)";
            case 24 -> "EMFILE (Too many open files)";
            case 26 -> "ETXTBSY (Text file busy)";
            case 27 -> "EFBIG (File too large)";
            case 28 -> "ENOSPC (No space left on device)";
            case 29 -> "ESPIPE (Illegal seek)";
            case 30 -> "EROFS (Read-only file system)";
            case 36 -> "ENAMETOOLONG (File name too long)";
            case 38 -> "ENOSYS (Function not implemented)";
            case 75 -> "EOVERFLOW (Value too large for defined data type)";
            case 95 -> "EOPNOTSUPP (Operation not supported)";
            case 116 -> "ESTALE (Stale file handle)";
            case 122 -> "EDQUOT (Disk quota exceeded)";
            default -> null;
        };
        return text != null ? text : "errno " + errno;
    }
}
