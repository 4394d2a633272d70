package dev.strata.memory.posix;

import static dev.strata.memory.posix.Libc.CALL_STATE;
import static dev.strata.memory.posix.Libc.CLOSE;
import static dev.strata.memory.posix.Libc.EINTR;
import static dev.strata.memory.posix.Libc.O_CLOEXEC;
import static dev.strata.memory.posix.Libc.O_RDONLY;
import static dev.strata.memory.posix.Libc.OPEN;
import static dev.strata.memory.posix.Libc.POSIX_FADVISE;
import static dev.strata.memory.posix.Libc.POSIX_FADV_DONTNEED;
import static dev.strata.memory.posix.Libc.PREADV;
import static dev.strata.memory.posix.Libc.describe;
import static dev.strata.memory.posix.Libc.errno;

import dev.strata.memory.Sizes;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads ranges of a file into memory the caller owns, once, leaving no copy of them in the page
 * cache: the one way Strata loads a file's bytes into private memory (model weights read with
 * {@code model.load: copy}).
 *
 * <p>Design: the range is read in chunks of {@link #CHUNK_BYTES} with {@code preadv(2)} straight
 * into the destination segment (no intermediate buffer), and after each chunk
 * {@code posix_fadvise(POSIX_FADV_DONTNEED)} drops that chunk's clean page-cache pages. So while a
 * file is loaded the memory it costs is the destination plus at most about one chunk of page
 * cache, never the destination and the whole file's page cache together (pages another process
 * maps stay; the advice only drops what nobody uses). A read that meets the end of the file before
 * the range is complete fails: the file is shorter than its header said, or was truncated during
 * the read.
 *
 * <p>Stateless; any thread (each call opens and closes its own descriptor).
 */
@SuppressWarnings("restricted") // open, preadv, posix_fadvise and close are called with checked arguments
public final class UncachedRead {
    /** Bytes read per {@code preadv} call, and the most page cache one load holds at a time. */
    public static final long CHUNK_BYTES = 8 * Sizes.MiB;

    private static final long IOVEC_BYTES = 16; // struct iovec { void *iov_base; size_t iov_len; } on LP64

    private UncachedRead() {
    }

    /** One range of a read: {@code dst.byteSize()} bytes of the file from byte {@code position} into {@code dst}. */
    public record Part(long position, MemorySegment dst) {
    }

    /**
     * Fills {@code dst} with the {@code dst.byteSize()} bytes of {@code file} starting at byte
     * {@code position}.
     *
     * @param file     the file to read
     * @param position first byte of the range, at least 0
     * @param dst      a native segment, written whole; its contents are undefined after a failure
     * @throws IOException naming the file, the call and the errno, or, when the file ends early, the
     *                     byte it ended at and the range that was asked for
     */
    public static void into(Path file, long position, MemorySegment dst) throws IOException {
        into(file, List.of(new Part(position, dst)));
    }

    /**
     * Fills each part's destination from its range of {@code file}, in order, through one open
     * descriptor; as {@link #into(Path, long, MemorySegment)} for each.
     */
    public static void into(Path file, List<Part> parts) throws IOException {
        for (Part p : parts) {
            if (p.position() < 0) {
                throw new IllegalArgumentException(file + ": read position " + p.position() + " is negative");
            }
            if (!p.dst().isNative() || p.dst().isReadOnly()) {
                throw new IllegalArgumentException(file + ": the destination must be a writable native segment, got " + p.dst());
            }
        }
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment state = scratch.allocate(CALL_STATE);
            MemorySegment iovec = scratch.allocate(IOVEC_BYTES, 8);
            int fd = open(file, scratch, state);
            try {
                for (Part p : parts) {
                    read(file, fd, p.position(), p.dst(), iovec, state);
                }
            } finally {
                int ignored = (int) CLOSE.invokeExact(state, fd); // read-only: nothing is lost if close fails
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("reading " + file + " failed in a native call", t);
        }
    }

    private static void read(Path file, int fd, long position, MemorySegment dst, MemorySegment iovec, MemorySegment state)
            throws Throwable {
        long done = 0;
        long total = dst.byteSize();
        while (done < total) {
            long chunk = Math.min(CHUNK_BYTES, total - done);
            long start = position + done;
            long read = 0;
            while (read < chunk) {
                iovec.set(ValueLayout.JAVA_LONG, 0, dst.address() + done + read);
                iovec.set(ValueLayout.JAVA_LONG, 8, chunk - read);
                long n = (long) PREADV.invokeExact(state, fd, iovec, 1, start + read);
                if (n > 0) {
                    read += n;
                } else if (n == 0) {
                    throw new EOFException(file + " ended at byte " + (start + read) + " while reading bytes [" + position
                            + ", " + (position + total) + "): the file is shorter than expected (truncated?)");
                } else if (errno(state) != EINTR) {
                    throw new IOException("preadv of " + file + " at byte " + (start + read) + " failed: " + describe(errno(state)));
                }
            }
            // advice only: a refusal leaves the pages to the kernel's reclaim, the read stands
            int ignored = (int) POSIX_FADVISE.invokeExact(state, fd, start, chunk, POSIX_FADV_DONTNEED);
            done += chunk;
        }
    }

    private static int open(Path file, Arena scratch, MemorySegment state) throws Throwable {
        MemorySegment cPath = scratch.allocateFrom(file.toString());
        while (true) {
            int fd = (int) OPEN.invokeExact(state, cPath, O_RDONLY | O_CLOEXEC, 0);
            if (fd >= 0) {
                return fd;
            }
            int errno = errno(state);
            if (errno != EINTR) {
                throw new IOException("open(" + file + ") for reading failed: " + describe(errno));
            }
        }
    }
}
