package dev.strata.memory.posix;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The C library calls Strata makes through the Foreign Function &amp; Memory API, bound once:
 * {@code open}, {@code close}, {@code mmap}, {@code munmap}, {@code preadv}, {@code pwritev},
 * {@code posix_fadvise}, {@code posix_fallocate}, {@code syscall} (for {@code futex}), the flags they take (Linux
 * values), and errno capture. Every handle
 * captures errno into a
 * {@link #CALL_STATE} segment passed as its first argument; {@link #errno} reads it back and
 * {@link #describe} names it.
 *
 * <p>Internal to strata-memory (the POOL's mappings, the DISK's direct I/O, {@link UncachedRead}); callers check
 * their arguments before calling. Stateless; any thread.
 */
@SuppressWarnings("restricted") // the downcalls are made on purpose, with checked arguments
public final class Libc {

    public static final int O_RDONLY = 0x0;
    public static final int O_RDWR = 0x2;
    public static final int O_CLOEXEC = 0x80000;
    /** {@code O_DIRECT}: 040000 on x86-64, 0200000 on AArch64. */
    public static final int O_DIRECT = "aarch64".equals(System.getProperty("os.arch")) ? 0x10000 : 0x4000;

    public static final int PROT_NONE = 0;
    public static final int PROT_READ = 1;
    public static final int PROT_WRITE = 2;
    public static final int PROT_EXEC = 4;
    public static final int MAP_SHARED = 0x01;
    public static final int MAP_PRIVATE = 0x02;
    public static final int MAP_FIXED = 0x10;
    public static final int MAP_ANONYMOUS = 0x20;
    public static final int MAP_NORESERVE = 0x4000;

    /** {@code madvise} advice: back the range with transparent huge pages where the kernel allows them. */
    public static final int MADV_HUGEPAGE = 14;

    /** {@code posix_fadvise} advice: the range will not be read again; drop its clean page-cache pages. */
    public static final int POSIX_FADV_DONTNEED = 4;

    public static final int EINTR = 4;
    public static final int EAGAIN = 11;
    public static final int ENOSPC = 28;
    public static final int EINVAL = 22;
    public static final int ENOSYS = 38;
    public static final int EDQUOT = 122;
    public static final int EOPNOTSUPP = 95;
    public static final int ETIMEDOUT = 110;

    /** {@code SYS_futex}: 202 on x86-64, 98 on AArch64; -1 on any other architecture (no futex through {@link #SYSCALL}). */
    public static final long SYS_FUTEX = switch (System.getProperty("os.arch")) {
        case "amd64", "x86_64" -> 202;
        case "aarch64" -> 98;
        default -> -1;
    };
    /** {@code futex} operation: sleep while the word holds the expected value (shared between processes: no PRIVATE flag). */
    public static final long FUTEX_WAIT = 0;
    /** {@code futex} operation: wake up to {@code val} waiters of the word. */
    public static final long FUTEX_WAKE = 1;

    private static final Linker LINKER = Linker.nativeLinker();
    /** The layout of the captured call state (errno); allocate one per call in progress. */
    public static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    /** {@code void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)}. */
    public static final MethodHandle MMAP = bind("mmap", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
    /** {@code int munmap(void *addr, size_t length)}. */
    public static final MethodHandle MUNMAP = bind("munmap",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    /** {@code int madvise(void *addr, size_t length, int advice)}. */
    public static final MethodHandle MADVISE = bind("madvise",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    /** {@code int mprotect(void *addr, size_t length, int prot)}. */
    public static final MethodHandle MPROTECT = bind("mprotect",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    /** {@code int sigaction(int signal, const struct sigaction *act, struct sigaction *oldact)}. */
    public static final MethodHandle SIGACTION = bind("sigaction",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    /** {@code int getpagesize(void)}: no system call; a native call made for its return ({@link #deliverPendingFaults}). */
    private static final MethodHandle GETPAGESIZE = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("getpagesize"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT));
    /** {@code int open(const char *path, int flags, ...)}: variadic, the mode is the first variadic argument. */
    public static final MethodHandle OPEN = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("open"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    /** {@code int close(int fd)}. */
    public static final MethodHandle CLOSE = bind("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    /** {@code ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset)}. */
    public static final MethodHandle PWRITEV = bind("pwritev", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
    /** {@code ssize_t preadv(int fd, const struct iovec *iov, int iovcnt, off_t offset)}. */
    public static final MethodHandle PREADV = bind("preadv", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
    /**
     * {@code int posix_fallocate(int fd, off_t offset, off_t len)}: allocates the file's blocks (on
     * tmpfs, its pages) so that later writes through a mapping cannot run out of space. Returns 0
     * or the error number itself (it does not set errno).
     */
    public static final MethodHandle POSIX_FALLOCATE = bind("posix_fallocate", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));

    /**
     * {@code int posix_fadvise(int fd, off_t offset, off_t len, int advice)}: returns the error
     * number itself (0 on success) rather than setting errno.
     */
    public static final MethodHandle POSIX_FADVISE = bind("posix_fadvise", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));

    /**
     * {@code long syscall(long number, ...)}, bound with six variadic {@code long}-sized arguments
     * (pointers as addresses): the raw system calls the C library has no wrapper for ({@code futex}).
     * Null where the C library has no {@code syscall} (not Linux).
     */
    public static final MethodHandle SYSCALL = LINKER.defaultLookup().find("syscall")
            .map(addr -> LINKER.downcallHandle(addr, FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                    ValueLayout.JAVA_LONG), CAPTURE_ERRNO, Linker.Option.firstVariadicArg(1)))
            .orElse(null);

    private Libc() {
    }

    private static MethodHandle bind(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow(name), descriptor, CAPTURE_ERRNO);
    }

    /**
     * Throws here a fault on a file mapping that this thread met earlier and the JDK has not
     * thrown yet. The JDK reports a fault (SIGBUS) that compiled Java code meets on a mapped page
     * at the thread's next safepoint poll, and that poll may come after the method that made the
     * access has returned, outside the try block meant to catch it; the return from a native call
     * is such a poll. So a caller that catches mapping faults calls this as the last statement of
     * its try block: a pending fault is thrown inside the block, as the {@link InternalError} the
     * access would have thrown. Costs one native call (getpagesize, which makes no system call).
     * Any thread.
     */
    public static void deliverPendingFaults() {
        try {
            int unused = (int) GETPAGESIZE.invokeExact();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("getpagesize failed", t);
        }
    }

    /**
     * Unmaps {@code size} bytes at {@code address} (a whole mapping this process made), as the
     * clean-up of the segment that owned them.
     *
     * @throws IllegalStateException naming the range and the errno if {@code munmap(2)} fails
     */
    @SuppressWarnings("restricted")
    public static void unmap(long address, long size) {
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment state = scratch.allocate(CALL_STATE);
            int rc = (int) MUNMAP.invokeExact(state, MemorySegment.ofAddress(address), size);
            if (rc != 0) {
                throw new IllegalStateException("munmap(0x" + Long.toHexString(address) + ", " + size
                        + ") failed: errno " + errno(state));
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("munmap failed", t);
        }
    }

    /** The errno a call captured into {@code state} (a {@link #CALL_STATE} segment). */
    public static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** "ENOSPC (No space left on device)" for the errno values a file transfer can meet; "errno N" otherwise. */
    public static String describe(int errno) {
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
            case 110 -> "ETIMEDOUT (Connection timed out)";
            case 122 -> "EDQUOT (Disk quota exceeded)";
            default -> null;
        };
        return text != null ? text : "errno " + errno;
    }
}
