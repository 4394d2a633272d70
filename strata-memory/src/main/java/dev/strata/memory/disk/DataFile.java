package dev.strata.memory.disk;

import dev.strata.memory.posix.Libc;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * One data file of a DISK tier: created with mode 0600, locked exclusively for this tier, and
 * moved to and from with positional vectored I/O ({@code pwritev(2)}, {@code preadv(2)}) on a raw
 * descriptor opened with {@code open(2)}, with {@code O_DIRECT} or without.
 *
 * <p>Two descriptions of the file are open: a {@link FileChannel} that creates the file, holds
 * its lock (a POSIX record lock, which the kernel drops if the process dies) and truncates it at
 * open; and the raw descriptor that does all I/O. One vectored call moves several buffers (header
 * block, payload, staged tail) to or from one contiguous file range, so an object costs one I/O.
 *
 * <p>Transfers: {@link #transfer} loops until every byte moved: a short count (the kernel moves at
 * most about 2 GiB per call; a nearly full file system may write part) continues from where it
 * stopped, EINTR is retried, any other errno fails with {@link PosixFileIo.ErrnoException} naming
 * the call, the file, the offset and the errno; a read that meets the end of the file fails with
 * {@link EOFException}.
 *
 * <p>Interrupts: a raw descriptor is not closed by {@link Thread#interrupt()} (a
 * {@code FileChannel} would be, breaking the file for every thread). A transfer started by a
 * thread whose interrupt flag is set fails at once with {@link InterruptedIOException}, flag
 * kept, so interrupting cancels that thread's next operation and touches nobody else's.
 *
 * <p>Threads: {@link #transfer} from any number of threads at once (positional calls share no
 * file position); {@link #close} once, when no transfer is in flight (the tier's lifecycle lock
 * guarantees it: the descriptor number must not be reused under a transfer).
 */
final class DataFile implements AutoCloseable {

    /** Another tier (in this or another process) holds the data file's lock. */
    static final class LockedException extends IOException {
        private static final long serialVersionUID = 1L;

        LockedException(Path path) {
            super("data file " + path + " is locked by another DISK tier (this or another process)");
        }
    }

    /** One vectored positional call; {@link PosixFileIo#vectored} in production. */
    @FunctionalInterface
    interface VectoredCall {
        /** Returns bytes moved, or {@code -errno}. */
        long call(boolean write, int fd, MemorySegment scratch, int count, long position);
    }

    private static final String OWNER_ONLY_TEXT = "rw-------";
    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(OWNER_ONLY_TEXT));

    /**
     * Data files open in this process. POSIX record locks belong to the process, and closing any
     * descriptor of a file drops them all, so a second tier in this process must be turned away
     * before it opens (and closes) a descriptor of a file another tier has locked.
     */
    private static final Set<Path> OPEN_IN_THIS_PROCESS = ConcurrentHashMap.newKeySet();

    private final Path path;
    private final Path key;             // absolute, normalised path in OPEN_IN_THIS_PROCESS
    private final boolean direct;
    private final int fd;              // raw descriptor for all I/O; valid until close
    private final FileChannel lockChannel; // holds the lock; no I/O goes through it
    private final FileLock lock;
    private final VectoredCall io;
    private final LongAdder ioCalls = new LongAdder(); // vectored calls made, EINTR answers included
    private boolean closed;            // guarded by this

    private DataFile(Path path, Path key, boolean direct, int fd, FileChannel lockChannel, FileLock lock,
                     VectoredCall io) {
        this.path = path;
        this.key = key;
        this.direct = direct;
        this.fd = fd;
        this.lockChannel = lockChannel;
        this.lock = lock;
        this.io = io;
    }

    /**
     * Creates (or truncates) and locks {@code path}, then opens its I/O descriptor.
     *
     * @param direct open the descriptor with {@code O_DIRECT}
     * @throws LockedException if another tier holds the file's lock
     * @throws IOException     if the file cannot be opened (e.g. EINVAL where {@code O_DIRECT} is
     *                         refused)
     */
    static DataFile open(Path path, boolean direct) throws IOException {
        return open(path, direct, PosixFileIo::vectored);
    }

    /** As {@link #open(Path, boolean)}, with the vectored call given (tests wrap the real one). */
    static DataFile open(Path path, boolean direct, VectoredCall io) throws IOException {
        Path key = path.toAbsolutePath().normalize();
        if (!OPEN_IN_THIS_PROCESS.add(key)) {
            throw new LockedException(path);
        }
        try {
            FileChannel channel = FileChannel.open(path, Set.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE), OWNER_ONLY);
            try {
                Files.setPosixFilePermissions(path, PosixFilePermissions.fromString(OWNER_ONLY_TEXT)); // if it existed
                FileLock lock = lockOrFail(channel, path);
                channel.truncate(0); // a tier starts empty; only after the lock is ours
                int flags = Libc.O_RDWR | Libc.O_CLOEXEC | (direct ? Libc.O_DIRECT : 0);
                int fd = PosixFileIo.open(path, flags);
                return new DataFile(path, key, direct, fd, channel, lock, io);
            } catch (IOException | RuntimeException e) {
                channel.close();
                throw e;
            }
        } catch (IOException | RuntimeException e) {
            OPEN_IN_THIS_PROCESS.remove(key);
            throw e;
        }
    }

    private static FileLock lockOrFail(FileChannel channel, Path path) throws IOException {
        FileLock lock;
        try {
            lock = channel.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null;
        }
        if (lock == null) {
            throw new LockedException(path);
        }
        return lock;
    }

    Path path() {
        return path;
    }

    boolean direct() {
        return direct;
    }

    /** Vectored calls made so far (a transfer makes one unless the kernel moved less than asked). */
    long ioCalls() {
        return ioCalls.sum();
    }

    /**
     * Moves all bytes of {@code parts} (at most {@link PosixFileIo#MAX_IOVECS}, in file order, none
     * empty) to ({@code write}) or from the file range starting at {@code position}, with as few
     * vectored calls as the kernel allows (one, normally). Under direct I/O every part's address
     * and length and {@code position} must be block multiples.
     *
     * @param scratch {@link PosixFileIo#SCRATCH_BYTES} of native memory owned by this transfer
     * @throws InterruptedIOException if this thread's interrupt flag is set (the flag is kept)
     * @throws EOFException           if a read meets the end of the file
     * @throws IOException            naming the call, file, offset and errno if a call fails
     */
    void transfer(boolean write, MemorySegment scratch, long position, MemorySegment... parts) throws IOException {
        if (Thread.currentThread().isInterrupted()) {
            throw new InterruptedIOException((write ? "write to " : "read from ") + path + " at " + position
                    + " not started: the thread is interrupted");
        }
        int count = parts.length;
        if (count == 0 || count > PosixFileIo.MAX_IOVECS) {
            throw new IllegalArgumentException(count + " parts for one vectored call (1 to " + PosixFileIo.MAX_IOVECS + ")");
        }
        long total = 0;
        for (MemorySegment p : parts) {
            if (!p.isNative() || p.byteSize() == 0) {
                throw new IllegalArgumentException("vectored I/O part " + p + " is not native memory or is empty");
            }
            total += p.byteSize();
        }
        int first = 0;  // first part not yet fully moved
        long skip = 0;  // bytes of parts[first] already moved
        long done = 0;  // bytes moved in all
        while (first < count) {
            int k = 0;
            for (int i = first; i < count; i++) {
                long from = i == first ? skip : 0;
                PosixFileIo.iovec(scratch, k++, parts[i].address() + from, parts[i].byteSize() - from);
            }
            long n = io.call(write, fd, scratch, k, position + done);
            ioCalls.increment();
            if (n < 0) {
                int errno = (int) -n;
                if (errno == Libc.EINTR) {
                    continue;
                }
                throw new PosixFileIo.ErrnoException(describe(write, k, total - done, position + done, done), errno);
            }
            if (n == 0) {
                if (!write) {
                    throw new EOFException("data file " + path + " ends at " + (position + done) + " before "
                            + (total - done) + " more bytes (reading " + total + " bytes from " + position + ")");
                }
                throw new IOException(describe(true, k, total - done, position + done, done) + " wrote nothing");
            }
            done += n;
            while (n > 0) {
                long left = parts[first].byteSize() - skip;
                if (n >= left) {
                    n -= left;
                    first++;
                    skip = 0;
                } else {
                    skip += n;
                    n = 0;
                }
            }
        }
    }

    private String describe(boolean write, int iovecs, long bytes, long at, long alreadyDone) {
        return (write ? "pwritev" : "preadv") + " of " + bytes + " bytes in " + iovecs + " buffer(s) at offset " + at
                + " of " + path + (direct ? " (O_DIRECT)" : "") + (alreadyDone > 0 ? ", after " + alreadyDone
                + " bytes moved," : "");
    }

    @Override
    public synchronized void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        try {
            PosixFileIo.close(fd, path); // drops this process's record locks on the file too
        } finally {
            try {
                if (lock.isValid()) {
                    lock.release();
                }
            } finally {
                try {
                    lockChannel.close();
                } finally {
                    OPEN_IN_THIS_PROCESS.remove(key);
                }
            }
        }
    }
}
