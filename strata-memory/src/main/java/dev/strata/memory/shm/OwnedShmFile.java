package dev.strata.memory.shm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.function.Function;

/**
 * A shared file that one process owns for its life and others map (the RPC region, the lending
 * file): the ownership protocol of {@link ShmFiles} in one place.
 *
 * <p>Protocol: {@link #create} refuses a path whose current file still has a live owner (the
 * caller's rule reads its header), takes the lock on {@code <path>.lock} (a second owner started
 * at the same moment is refused by the operating system), then creates and maps a temporary file
 * beside the path (mode 0600, zero-filled). The owner writes its header ({@link ShmHeader} prefix
 * and its own fields), publishes the version, then {@link #renameOverPath} makes it the file at
 * the path in one atomic step, so processes attached to a predecessor's file keep that file and see
 * its owner dead instead of a stranger's data. {@link #remove} deletes the path only while it is
 * still this file, then releases the lock (a successor may start from then on).
 *
 * <p>Threads: create, rename and remove are called by the owner's controlling thread; the
 * segment may be used by any thread until the owner closes {@link #arena}.
 */
public final class OwnedShmFile {
    private final Path path;
    private final String noun; // what the file is, for messages
    private final Path temp;
    private final FileChannel lock;
    private final Arena arena;
    private final MemorySegment segment; // the whole file, mapped read-write and shared
    private final Object fileKey;        // identity of the file this process created

    private OwnedShmFile(Path path, String noun, Path temp, FileChannel lock, Arena arena, MemorySegment segment,
                         Object fileKey) {
        this.path = path;
        this.noun = noun;
        this.temp = temp;
        this.lock = lock;
        this.arena = arena;
        this.segment = segment;
        this.fileKey = fileKey;
    }

    /**
     * Creates the temporary file of {@code size} bytes for {@code path}, mapped into a new shared
     * arena, with the path locked for this process.
     *
     * @param noun       what the file is, for messages ("rpc region", "lending file")
     * @param headerSize bytes of header that {@code liveOwner} reads
     * @param liveOwner  given the header of the file now at the path, the refusal message if that
     *                   file's owner is alive and still owns it, else null
     * @param busy       the refusal message when another live process holds the lock, given the lock file
     * @throws IllegalStateException if a live owner has the path
     * @throws UncheckedIOException  if the file cannot be created, sized or mapped
     */
    public static OwnedShmFile create(Path path, String noun, long size, int headerSize,
                                      Function<ShmFiles.Found, String> liveOwner, Function<Path, String> busy) {
        refuseIfOwned(path, noun, headerSize, liveOwner);
        FileChannel lock = ShmFiles.lockOwnership(path, busy);
        Path temp = ShmFiles.tempBeside(path);
        Arena arena = Arena.ofShared();
        try {
            MemorySegment segment = ShmFiles.createMapped(temp, size, arena);
            return new OwnedShmFile(path, noun, temp, lock, arena, segment, ShmFiles.fileKey(temp));
        } catch (IOException e) {
            arena.close();
            ShmFiles.closeQuietly(lock);
            ShmFiles.deleteQuietly(temp);
            throw new UncheckedIOException("creating " + noun + " " + path + " (" + size + " bytes in " + temp + ")", e);
        } catch (RuntimeException | Error e) {
            arena.close();
            ShmFiles.closeQuietly(lock);
            ShmFiles.deleteQuietly(temp);
            throw e;
        }
    }

    private static void refuseIfOwned(Path path, String noun, int headerSize, Function<ShmFiles.Found, String> liveOwner) {
        ShmFiles.Found found;
        try {
            found = ShmFiles.readHeader(path, headerSize);
        } catch (NoSuchFileException e) {
            return;
        } catch (IOException e) {
            throw new UncheckedIOException("reading the existing " + noun + " " + path, e);
        }
        String refusal = liveOwner.apply(found);
        if (refusal != null) {
            throw new IllegalStateException(refusal);
        }
        // stale (its owner died or stopped) or not such a file: renameOverPath replaces it
    }

    /** The path the file is published at. */
    public Path path() {
        return path;
    }

    /** The temporary file this process built (the path's file once renamed). */
    public Path tempPath() {
        return temp;
    }

    /** The arena the file is mapped in; the owner closes it once no thread uses the segment. */
    public Arena arena() {
        return arena;
    }

    /** The whole file, mapped read-write and shared. */
    public MemorySegment segment() {
        return segment;
    }

    /** Renames the temporary file over the path, atomically where the file system can. */
    public void renameOverPath() throws IOException {
        try {
            Files.move(temp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(temp, path, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /**
     * Removes the file at the path if it is still this file, and the temporary file if it was
     * never renamed, then releases the lock. The mapping stays until {@link #arena} is closed.
     * Failures are logged; idempotent.
     */
    public void remove() {
        ShmFiles.removeIfSame(path, fileKey, noun);
        ShmFiles.deleteQuietly(temp);
        ShmFiles.closeQuietly(lock); // after the file is gone: a successor may start now
    }

    /** Undoes {@link #create} for an owner that failed before it started: removes, releases and unmaps. */
    public void discard() {
        remove();
        arena.close();
    }
}
