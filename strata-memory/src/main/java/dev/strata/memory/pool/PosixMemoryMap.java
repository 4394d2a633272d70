package dev.strata.memory.pool;

import static dev.strata.memory.posix.Libc.*;

import dev.strata.memory.posix.Libc;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

/**
 * Maps several files into one contiguous virtual range, interleaved in fixed-size stripes, through
 * {@code mmap(2)} called with the FFM {@link Linker} (Linux, x86-64 and AArch64 constants).
 *
 * <p>Design: one anonymous {@code PROT_NONE} reservation of the whole range is made first, so that
 * the range is ours and contiguous; then stripe {@code i} of the logical space is mapped over it
 * with {@code MAP_SHARED | MAP_FIXED} from file {@code i mod n} at offset
 * {@code (i div n) * stripeSize}. The descriptors are opened with {@code open(2)} through FFM
 * (a {@code FileChannel} does not expose its descriptor) and closed again once every stripe is
 * mapped: a mapping keeps its file alive. The returned segment belongs to the caller's long-lived
 * arena; closing that arena unmaps the whole range with one {@code munmap(2)}.
 *
 * <p>Stateless apart from the linked method handles; any thread.
 */
@SuppressWarnings("restricted") // mmap, munmap, open and close are called on purpose, with checked arguments
final class PosixMemoryMap {



    private PosixMemoryMap() {
    }

    /**
     * Maps {@code files} interleaved in stripes of {@code stripeSize} bytes into one segment of
     * {@code totalSize} bytes owned by {@code arena}.
     *
     * @param totalSize  bytes of the logical space, a multiple of {@code stripeSize * files.size()}
     * @param stripeSize bytes per stripe, a multiple of the page size
     * @throws IOException naming the file and the errno if a call fails (nothing stays mapped then)
     */
    static MemorySegment mapStriped(List<Path> files, long totalSize, long stripeSize, Arena arena) throws IOException {
        return mapStriped(files, totalSize, stripeSize, arena, false);
    }

    /**
     * As {@link #mapStriped(List, long, long, Arena)}; with {@code readOnly} the files are opened
     * {@code O_RDONLY}, mapped {@code PROT_READ} and the segment is read-only.
     */
    static MemorySegment mapStriped(List<Path> files, long totalSize, long stripeSize, Arena arena, boolean readOnly)
            throws IOException {
        int n = files.size();
        if (totalSize <= 0 || totalSize % (stripeSize * n) != 0) {
            throw new IllegalArgumentException("total size " + totalSize + " is not a positive multiple of "
                    + stripeSize + " * " + n + " devices");
        }
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment state = scratch.allocate(CALL_STATE);
            MemorySegment base = (MemorySegment) MMAP.invokeExact(state, MemorySegment.NULL, totalSize,
                    PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0L);
            if (base.address() == -1L) {
                throw new IOException("reserving " + totalSize + " bytes of address space failed: errno " + errno(state));
            }
            int[] fds = new int[n];
            java.util.Arrays.fill(fds, -1);
            boolean mapped = false;
            try {
                for (int d = 0; d < n; d++) {
                    MemorySegment cPath = scratch.allocateFrom(files.get(d).toString());
                    int fd = (int) OPEN.invokeExact(state, cPath, (readOnly ? O_RDONLY : O_RDWR) | O_CLOEXEC, 0);
                    if (fd < 0) {
                        throw new IOException("open(" + files.get(d) + ") failed: errno " + errno(state));
                    }
                    fds[d] = fd;
                }
                long stripes = totalSize / stripeSize;
                for (long i = 0; i < stripes; i++) {
                    int device = (int) (i % n);
                    long fileOffset = (i / n) * stripeSize;
                    MemorySegment want = MemorySegment.ofAddress(base.address() + i * stripeSize);
                    MemorySegment got = (MemorySegment) MMAP.invokeExact(state, want, stripeSize,
                            readOnly ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fds[device], fileOffset);
                    if (got.address() != want.address()) {
                        throw new IOException("mapping stripe " + i + " of " + files.get(device) + " at file offset "
                                + fileOffset + " failed: errno " + errno(state));
                    }
                }
                mapped = true;
            } finally {
                for (int fd : fds) {
                    if (fd >= 0) {
                        int rc = (int) CLOSE.invokeExact(state, fd);
                        assert rc == 0;
                    }
                }
                if (!mapped) {
                    int rc = (int) MUNMAP.invokeExact(state, base, totalSize);
                    assert rc == 0;
                }
            }
            long address = base.address();
            MemorySegment whole = base.reinterpret(totalSize, arena, ignored -> Libc.unmap(address, totalSize));
            return readOnly ? whole.asReadOnly() : whole;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
    }

}
