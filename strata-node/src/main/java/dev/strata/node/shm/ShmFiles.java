package dev.strata.node.shm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.function.Function;

/**
 * File handling shared by the processes that own a shared-memory file (the RPC server's region,
 * the peer agent's lending file): the lock that marks a path as owned, creating and mapping the new
 * file beside the path before it is renamed over it, reading a header prefix, and removing only the
 * file this process created. Stateless; any thread.
 */
public final class ShmFiles {
    private static final System.Logger LOG = System.getLogger(ShmFiles.class.getName());

    private ShmFiles() {
    }

    /**
     * Takes the lock on {@code <path>.lock} that marks {@code path} as owned by this process: the
     * operating system drops it when the process dies, so a second owner started at the same moment
     * is refused even before the first has published its file. The lock file stays after a stop.
     *
     * @param busy the message of the {@link IllegalStateException} thrown when another live process
     *             holds the lock, given the lock file's path
     * @return the channel holding the lock; closing it releases the lock
     */
    public static FileChannel lockOwnership(Path path, Function<Path, String> busy) {
        Path lockPath = path.resolveSibling(path.getFileName() + ".lock");
        FileChannel ch = null;
        try {
            ch = FileChannel.open(lockPath, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock lock;
            try {
                lock = ch.tryLock();
            } catch (OverlappingFileLockException e) {
                lock = null; // this very process owns the path already
            }
            if (lock == null) {
                ch.close();
                throw new IllegalStateException(busy.apply(lockPath));
            }
            return ch;
        } catch (IOException e) {
            closeQuietly(ch);
            throw new UncheckedIOException("locking " + lockPath, e);
        }
    }

    /** The temporary file beside {@code path} that this process builds before renaming it over the path. */
    public static Path tempBeside(Path path) {
        return path.toAbsolutePath().getParent().resolve("." + path.getFileName() + ".new-" + ProcessHandle.current().pid());
    }

    /**
     * Creates {@code file} afresh (owner read-write only), {@code size} bytes that read as zero, and
     * maps it read-write, shared, into {@code arena}.
     */
    public static MemorySegment createMapped(Path file, long size, Arena arena) throws IOException {
        Files.deleteIfExists(file);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(1), size - 1); // size it; the contents read as zero
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
        }
    }

    /**
     * Reads the first {@code bytes} bytes of {@code ch}; a file shorter than that reads as zeros
     * beyond its end. The buffer is returned at position 0.
     */
    public static ByteBuffer readPrefix(FileChannel ch, int bytes) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(bytes);
        while (buffer.hasRemaining() && ch.read(buffer, buffer.position()) > 0) {
            // until the prefix is complete or the file ends
        }
        buffer.clear();
        return buffer;
    }

    /** The identity of the file at {@code path} ({@code fileKey()}), or null where the file system has none. */
    public static Object fileKey(Path path) throws IOException {
        return Files.readAttributes(path, BasicFileAttributes.class).fileKey();
    }

    /**
     * Deletes {@code path} only while it is still the file whose identity is {@code fileKey} (a
     * successor may have renamed its own file over the path). A missing file is fine; an I/O
     * failure is logged with {@code what} and the path.
     */
    public static void removeIfSame(Path path, Object fileKey, String what) {
        try {
            Object key = fileKey(path);
            if (key != null && key.equals(fileKey)) {
                Files.deleteIfExists(path);
            }
        } catch (NoSuchFileException e) {
            // already gone
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "could not remove " + what + " " + path + ": " + e);
        }
    }

    /** Closes {@code ch} (which releases a lock held through it), ignoring failures; null is fine. */
    public static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing releases the lock; nothing else to do
            }
        }
    }

    /** Deletes {@code p} if it exists, best effort: a leftover temporary file is harmless and replaced next time. */
    public static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // best effort
        }
    }
}
