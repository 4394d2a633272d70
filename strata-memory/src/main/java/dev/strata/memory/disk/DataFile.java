package dev.strata.memory.disk;

import com.sun.nio.file.ExtendedOpenOption;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
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

/**
 * One data file of a DISK tier: a channel opened with or without {@code O_DIRECT}, locked
 * exclusively for this process, created with mode 0600, with positional whole-buffer reads and
 * writes.
 *
 * <p>Threads: {@link #readFully} and {@link #writeFully} from any number of threads at once
 * (positional I/O on a {@link FileChannel} takes no channel-wide lock and does not move a shared
 * position); {@link #close} once, when no I/O is in flight.
 */
final class DataFile implements AutoCloseable {

    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));

    private final Path path;
    private final FileChannel channel;
    private final FileLock lock;
    private final boolean direct;

    private DataFile(Path path, FileChannel channel, FileLock lock, boolean direct) {
        this.path = path;
        this.channel = channel;
        this.lock = lock;
        this.direct = direct;
    }

    /**
     * Creates (or truncates) and locks {@code path}.
     *
     * @param direct open with {@code O_DIRECT}
     * @throws IOException if the file cannot be opened (e.g. EINVAL where {@code O_DIRECT} is
     *                     refused) or another process holds its lock
     */
    static DataFile open(Path path, boolean direct) throws IOException {
        Set<OpenOption> options = new HashSet<>(Set.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE));
        if (direct) {
            options.add(ExtendedOpenOption.DIRECT);
        }
        FileChannel channel = FileChannel.open(path, options, OWNER_ONLY);
        try {
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------")); // if it existed
            FileLock lock;
            try {
                lock = channel.tryLock();
            } catch (OverlappingFileLockException e) {
                lock = null;
            }
            if (lock == null) {
                throw new IOException("data file " + path + " is locked by another DISK tier (this or another process)");
            }
            channel.truncate(0); // a tier starts empty; only after the lock is ours
            return new DataFile(path, channel, lock, direct);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    Path path() {
        return path;
    }

    boolean direct() {
        return direct;
    }

    /** Writes all of {@code buffer}'s remaining bytes at file offset {@code position}. */
    void writeFully(ByteBuffer buffer, long position) throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            at += channel.write(buffer, at);
        }
    }

    /**
     * Fills {@code buffer}'s remaining bytes from file offset {@code position}.
     *
     * @throws EOFException if the file ends first
     */
    void readFully(ByteBuffer buffer, long position) throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer, at);
            if (n < 0) {
                throw new EOFException("data file " + path + " ends at " + at + " before " + buffer.remaining()
                        + " more bytes (reading from " + position + ")");
            }
            at += n;
        }
    }

    /** Bytes the file currently spans. */
    long size() throws IOException {
        return channel.size();
    }

    @Override
    public void close() throws IOException {
        try {
            if (lock.isValid()) {
                lock.release();
            }
        } finally {
            channel.close();
        }
    }
}
