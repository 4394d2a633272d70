package dev.strata.memory.disk;

import com.sun.nio.file.ExtendedOpenOption;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One data file of a DISK tier: a channel opened with or without {@code O_DIRECT}, locked
 * exclusively for this process, created with mode 0600, with positional whole-buffer reads and
 * writes.
 *
 * <p>Interrupts: a {@link FileChannel} closes itself when a thread blocked in it is interrupted,
 * which would break the file for every other thread. This class recovers: the interrupted
 * operation fails ({@link ClosedByInterruptException}), the channel is reopened (same file, same
 * mode, not truncated, locked again), and operations of other threads that saw the channel close
 * under them are retried on the new channel from where they stopped.
 *
 * <p>Threads: {@link #readFully} and {@link #writeFully} from any number of threads at once
 * (positional I/O on a {@link FileChannel} takes no channel-wide lock and does not move a shared
 * position); reopening is serialised on this object; {@link #close} once, when no I/O is in
 * flight.
 */
final class DataFile implements AutoCloseable {

    /** Another tier (in this or another process) holds the data file's lock. */
    static final class LockedException extends IOException {
        private static final long serialVersionUID = 1L;

        LockedException(Path path) {
            super("data file " + path + " is locked by another DISK tier (this or another process)");
        }
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
    private final Path key;               // absolute, normalised path in OPEN_IN_THIS_PROCESS
    private final boolean direct;
    private volatile FileChannel channel; // replaced when an interrupt closed the previous one
    private FileLock lock;                // guarded by this
    private volatile boolean closed;
    private long reopenCount;             // guarded by this

    private DataFile(Path path, Path key, boolean direct, FileChannel channel, FileLock lock) {
        this.path = path;
        this.key = key;
        this.direct = direct;
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Creates (or truncates) and locks {@code path}.
     *
     * @param direct open with {@code O_DIRECT}
     * @throws LockedException if another tier holds the file's lock
     * @throws IOException     if the file cannot be opened (e.g. EINVAL where {@code O_DIRECT} is
     *                         refused)
     */
    static DataFile open(Path path, boolean direct) throws IOException {
        Path key = path.toAbsolutePath().normalize();
        if (!OPEN_IN_THIS_PROCESS.add(key)) {
            throw new LockedException(path);
        }
        try {
            FileChannel channel = openChannel(path, direct);
            try {
                FileLock lock = lockOrFail(channel, path);
                channel.truncate(0); // a tier starts empty; only after the lock is ours
                return new DataFile(path, key, direct, channel, lock);
            } catch (IOException | RuntimeException e) {
                channel.close();
                throw e;
            }
        } catch (IOException | RuntimeException e) {
            OPEN_IN_THIS_PROCESS.remove(key);
            throw e;
        }
    }

    private static FileChannel openChannel(Path path, boolean direct) throws IOException {
        Set<OpenOption> options = new HashSet<>(Set.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE));
        if (direct) {
            options.add(ExtendedOpenOption.DIRECT);
        }
        FileChannel channel = FileChannel.open(path, options, OWNER_ONLY);
        try {
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString(OWNER_ONLY_TEXT)); // if it existed
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
        return channel;
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

    /** How many times the channel was reopened after an interrupt closed it. */
    synchronized long reopenCount() {
        return reopenCount;
    }

    /** Writes all of {@code buffer}'s remaining bytes at file offset {@code position}. */
    void writeFully(ByteBuffer buffer, long position) throws IOException {
        int start = buffer.position();
        while (buffer.hasRemaining()) {
            FileChannel ch = channel;
            try {
                while (buffer.hasRemaining()) {
                    ch.write(buffer, position + (buffer.position() - start));
                }
            } catch (ClosedChannelException e) {
                recover(ch, e);
            }
        }
    }

    /**
     * Fills {@code buffer}'s remaining bytes from file offset {@code position}.
     *
     * @throws EOFException if the file ends first
     */
    void readFully(ByteBuffer buffer, long position) throws IOException {
        int start = buffer.position();
        while (buffer.hasRemaining()) {
            FileChannel ch = channel;
            try {
                while (buffer.hasRemaining()) {
                    long at = position + (buffer.position() - start);
                    if (ch.read(buffer, at) < 0) {
                        throw new EOFException("data file " + path + " ends at " + at + " before " + buffer.remaining()
                                + " more bytes (reading from " + position + ")");
                    }
                }
            } catch (ClosedChannelException e) {
                recover(ch, e);
            }
        }
    }

    /**
     * Handles a closed channel: if this file is closed, or this thread was interrupted, rethrows
     * (after reopening, in the interrupt case); otherwise reopens if still needed and returns so
     * the caller retries.
     */
    private void recover(FileChannel broken, ClosedChannelException e) throws IOException {
        if (closed) {
            throw e;
        }
        reopen(broken);
        if (e instanceof ClosedByInterruptException) {
            throw e; // this thread's operation was interrupted; others carry on
        }
    }

    private synchronized void reopen(FileChannel broken) throws IOException {
        if (closed || channel != broken) {
            return; // closed for good, or another thread reopened already
        }
        boolean interrupted = Thread.interrupted(); // let the reopen itself run to completion
        try {
            FileChannel fresh = openChannel(path, direct);
            try {
                lock = lockOrFail(fresh, path);
            } catch (IOException | RuntimeException e) {
                fresh.close();
                throw e;
            }
            channel = fresh;
            reopenCount++;
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public synchronized void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (lock.isValid()) {
                lock.release();
            }
        } finally {
            try {
                channel.close();
            } finally {
                OPEN_IN_THIS_PROCESS.remove(key);
            }
        }
    }
}
