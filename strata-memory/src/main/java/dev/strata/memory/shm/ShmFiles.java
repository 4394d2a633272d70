package dev.strata.memory.shm;

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
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.function.Function;

/**
 * Creating, locking, reading and removing Strata's shared-memory files (pool files, RPC regions,
 * lending files): every file is created exclusively and with mode 0600 (owner read-write only),
 * every {@code .lock} file (kept between runs) with mode 0600 too; headers are read without
 * mapping; a process removes only the file it created itself (by file identity, so never a
 * successor's file renamed over the path).
 *
 * <p>Files one process owns for its life (RPC region, lending file) follow one protocol, kept by
 * {@link OwnedShmFile}: {@link #lockOwnership} on {@code <path>.lock}, {@link #createMapped} of
 * {@link #tempBeside the temporary file}, the {@link ShmHeader} prefix and the kind's fields
 * written and published, then an atomic rename over the path; at the end {@link #removeIfSame},
 * then the lock is released. The pool's files are created with {@link #createExclusive}.
 *
 * <p>Stateless; any thread.
 */
public final class ShmFiles {
    private static final System.Logger LOG = System.getLogger(ShmFiles.class.getName());

    /** Mode 0600: read-write for the owner only; every shared file and lock file is created with it. */
    public static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");

    private ShmFiles() {
    }

    /** The attribute that creates a file with mode {@link #OWNER_ONLY}. */
    public static FileAttribute<Set<PosixFilePermission>> ownerOnly() {
        return PosixFilePermissions.asFileAttribute(OWNER_ONLY);
    }

    /**
     * Creates {@code file} empty with mode 0600.
     *
     * @throws java.nio.file.FileAlreadyExistsException if anything is at the path already
     */
    public static void createExclusive(Path file) throws IOException {
        Files.createFile(file, ownerOnly());
    }

    /**
     * Takes the lock on {@code <path>.lock} (created with mode 0600 if absent) that marks
     * {@code path} as owned by this process: the operating system drops it when the process dies,
     * so a second owner started at the same moment is refused even before the first has published
     * its file. The lock file stays after a stop.
     *
     * @param busy the message of the {@link IllegalStateException} thrown when another live process
     *             holds the lock, given the lock file's path
     * @return the channel holding the lock; closing it releases the lock
     */
    public static FileChannel lockOwnership(Path path, Function<Path, String> busy) {
        Path lockPath = lockPathOf(path);
        FileChannel ch = null;
        try {
            ch = FileChannel.open(lockPath, Set.<OpenOption>of(StandardOpenOption.CREATE, StandardOpenOption.WRITE),
                    ownerOnly());
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

    /** The lock file that marks {@code path} as owned: {@code <path>.lock} beside it. */
    public static Path lockPathOf(Path path) {
        return path.resolveSibling(path.getFileName() + ".lock");
    }

    /** The temporary file beside {@code path} that this process builds before renaming it over the path. */
    public static Path tempBeside(Path path) {
        return path.toAbsolutePath().getParent().resolve("." + path.getFileName() + ".new-" + ProcessHandle.current().pid());
    }

    /**
     * Creates {@code file} afresh (a leftover of this process's pid is deleted first) exclusively
     * with mode 0600, {@code size} bytes that read as zero, and maps it read-write, shared, into
     * {@code arena}.
     */
    public static MemorySegment createMapped(Path file, long size, Arena arena) throws IOException {
        Files.deleteIfExists(file);
        createExclusive(file);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(1), size - 1); // size it; the contents read as zero
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
        }
    }

    /** Maps {@code size} bytes of the open file {@code ch} read-write, shared, into {@code arena}. */
    public static MemorySegment mapReadWrite(FileChannel ch, long size, Arena arena) throws IOException {
        return ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
    }

    /**
     * The first bytes of a file, and the file's size.
     *
     * @param header   the first bytes, at position 0, little-endian; zero beyond the file's end
     * @param fileSize bytes of the file when read
     */
    public record Found(ByteBuffer header, long fileSize) {
        /** The {@link ShmHeader} prefix of {@link #header}. */
        public ShmHeader.Prefix prefix() {
            return ShmHeader.Prefix.of(header);
        }
    }

    /**
     * Reads the first {@code bytes} bytes of the file at {@code path}; a shorter file reads as zeros beyond its end.
     *
     * @throws IOException naming the path and its type when it is not a regular file or a device
     *                     (a FIFO or a socket would block the open or the read until a peer came)
     */
    public static Found readHeader(Path path, int bytes) throws IOException {
        requireFileOrDevice(path);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            return readHeader(ch, bytes);
        }
    }

    /** Reads the first {@code bytes} bytes of the open file {@code ch}; a shorter file reads as zeros beyond its end. */
    public static Found readHeader(FileChannel ch, int bytes) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(bytes);
        while (buffer.hasRemaining() && ch.read(buffer, buffer.position()) > 0) {
            // until the header is complete or the file ends
        }
        buffer.clear();
        return new Found(buffer.order(java.nio.ByteOrder.LITTLE_ENDIAN), ch.size());
    }

    /**
     * Refuses, at once, a path that no shared file can be: a directory, a FIFO or a socket (opening
     * a FIFO for reading blocks until a writer opens it). Regular files and devices (a DAX device
     * is a character device) pass.
     *
     * @throws IOException naming the path and what it is
     */
    public static void requireFileOrDevice(Path path) throws IOException {
        BasicFileAttributes a = Files.readAttributes(path, BasicFileAttributes.class);
        if (a.isRegularFile()) {
            return;
        }
        String what = a.isDirectory() ? "a directory" : "not a regular file";
        try {
            int mode = (Integer) Files.getAttribute(path, "unix:mode");
            switch (mode & 0170000) {
                case 0020000, 0060000 -> {
                    return; // character or block device
                }
                case 0010000 -> what = "a FIFO";
                case 0140000 -> what = "a socket";
                default -> {
                    // a directory or a link target of another type: described above
                }
            }
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            // no unix attribute view: the basic attributes decide
        }
        throw new IOException(path + " is " + what + ", not a shared-memory file or a memory device");
    }

    /**
     * Refuses to attach to a shared file another user could have planted or can change: a regular
     * file must belong to this process's user and must not be group- or world-writable (Strata
     * creates its files 0600). Devices (a DAX device) are left to their own permissions; FIFOs,
     * sockets and directories are refused as by {@link #requireFileOrDevice}.
     *
     * @throws IOException naming the path, its owner or mode, and what to do
     */
    public static void requireAttachable(Path path) throws IOException {
        requireFileOrDevice(path);
        if (!Files.isRegularFile(path)) {
            return;
        }
        int owner;
        int mode;
        try {
            owner = (Integer) Files.getAttribute(path, "unix:uid");
            mode = (Integer) Files.getAttribute(path, "unix:mode");
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            return; // no unix attribute view: nothing to check against
        }
        int me = currentUid();
        if (me >= 0 && owner != me) {
            throw new IOException("refusing to attach " + path + ": it belongs to uid " + owner + ", not to this user (uid " + me
                    + "); use a path of your own (the defaults include the uid) or remove the file");
        }
        if ((mode & 0022) != 0) {
            throw new IOException("refusing to attach " + path + ": it is group- or world-writable (mode "
                    + String.format("%04o", mode & 07777) + "); another user could change it under this process."
                    + " Run 'chmod 600 " + path + "' if it is yours, or remove it");
        }
    }

    /** This process's user id, or -1 where the platform does not say. */
    public static int currentUid() {
        try {
            return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return -1;
        }
    }

    /**
     * The default path of a shared file named {@code name} for this user: {@code /dev/shm/strata-<uid>-<name>},
     * so that two users' defaults never collide and neither can hold the other's name.
     */
    public static Path userDefault(String name) {
        int uid = currentUid();
        return Path.of("/dev/shm", uid >= 0 ? "strata-" + uid + "-" + name : "strata-" + name);
    }

    /** The identity of the file at {@code path} ({@code fileKey()}), or null where the file system has none. */
    public static Object fileKey(Path path) throws IOException {
        return Files.readAttributes(path, BasicFileAttributes.class).fileKey();
    }

    /**
     * Deletes {@code path} only while it is still the file whose identity is {@code fileKey}
     * (another process may have put its own file at the path since).
     *
     * @return true if the file was ours and is gone; false if it was missing or another file
     * @throws IOException if reading its identity or deleting it fails
     */
    public static boolean removeIfSame(Path path, Object fileKey) throws IOException {
        try {
            Object key = fileKey(path);
            return key != null && key.equals(fileKey) && Files.deleteIfExists(path);
        } catch (NoSuchFileException e) {
            return false; // already gone
        }
    }

    /**
     * As {@link #removeIfSame(Path, Object)}, for shutdown paths: an I/O failure is logged with
     * {@code what} and the path instead of thrown.
     */
    public static void removeIfSame(Path path, Object fileKey, String what) {
        try {
            removeIfSame(path, fileKey);
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
