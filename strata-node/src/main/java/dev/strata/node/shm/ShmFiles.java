package dev.strata.node.shm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * File handling shared by the processes that own a shared-memory file (the RPC server's region,
 * the peer agent's lending file): reading a header prefix, and removing only the file this process
 * created. Stateless; any thread.
 */
public final class ShmFiles {
    private static final System.Logger LOG = System.getLogger(ShmFiles.class.getName());

    private ShmFiles() {
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
