package dev.strata.memory.disk;

import dev.strata.memory.Sizes;
import com.sun.nio.file.ExtendedOpenOption;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.Set;

/**
 * What a directory's file store offers the DISK tier: its block size, usable and total space,
 * whether it lives in memory, and whether direct I/O ({@code O_DIRECT}) works there, found by a
 * real probe (create a file with {@code O_DIRECT}, write one aligned block, read it back, delete
 * it).
 *
 * <p>Memory-backed file systems ({@code tmpfs}, {@code ramfs}, ...) are flagged: recent Linux
 * kernels (6.6 and later) accept {@code O_DIRECT} on tmpfs, but there it bypasses nothing, the
 * data stays in the page cache. Older kernels and ramfs refuse it with EINVAL at open.
 *
 * <p>Immutable once probed; any thread. {@link #probe} does file I/O and may be called from any
 * thread.
 *
 * @param directory         the directory probed (absolute)
 * @param storeName         the file store's name (e.g. the device, {@code /dev/vda})
 * @param type              the file system type (e.g. {@code ext4}, {@code tmpfs})
 * @param blockSize         bytes, the file store's block size ({@link FileStore#getBlockSize()})
 * @param usableSpace       bytes available to this process at probe time
 * @param totalSpace        bytes of the whole file store
 * @param memoryBacked      true if the file system keeps its data in memory
 * @param directIoAccepted  true if a file opened with {@code O_DIRECT} wrote and read back one block
 * @param directIoProblem   why direct I/O was refused, {@code null} when accepted
 */
public record FileStoreInfo(
        Path directory,
        String storeName,
        String type,
        long blockSize,
        long usableSpace,
        long totalSpace,
        boolean memoryBacked,
        boolean directIoAccepted,
        String directIoProblem) {

    /** File system types whose files live in memory. */
    public static final Set<String> MEMORY_BACKED_TYPES = Set.of("tmpfs", "ramfs", "hugetlbfs", "devtmpfs", "shm");

    /** The least alignment Strata uses for direct I/O, in bytes. */
    public static final long MIN_DIRECT_ALIGNMENT = 4096;

    /**
     * Bytes to which direct I/O aligns buffers, offsets and lengths here: the block size, but at
     * least {@link #MIN_DIRECT_ALIGNMENT}, so that a file system with small blocks (1 KiB ext4) on
     * a device with 4 KiB sectors still works.
     */
    public long directIoAlignment() {
        return alignmentFor(blockSize);
    }

    private static long alignmentFor(long blockSize) {
        return Math.max(blockSize, MIN_DIRECT_ALIGNMENT);
    }

    /** True if direct I/O is accepted and means something here: accepted and not memory-backed. */
    public boolean directIoEffective() {
        return directIoAccepted && !memoryBacked;
    }

    /**
     * Probes {@code directory} (which must exist).
     *
     * @throws IOException if the directory's file store cannot be queried
     */
    public static FileStoreInfo probe(Path directory) throws IOException {
        Path dir = directory.toAbsolutePath();
        FileStore store = Files.getFileStore(dir);
        long block = store.getBlockSize();
        String type = store.type();
        boolean memory = MEMORY_BACKED_TYPES.contains(type.toLowerCase(Locale.ROOT));
        String problem = probeDirectIo(dir, alignmentFor(block));
        return new FileStoreInfo(dir, store.name(), type, block, store.getUsableSpace(), store.getTotalSpace(),
                memory, problem == null, problem);
    }

    /** Returns null if one block round-trips through an {@code O_DIRECT} file, else the reason. */
    private static String probeDirectIo(Path dir, long block) {
        if (!Sizes.isPowerOfTwo(block)) {
            return "block size " + block + " is not a power of two";
        }
        Path probe = dir.resolve(".strata-direct-probe-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(block, block);
            MemorySegment in = arena.allocate(block, block);
            for (long i = 0; i < block; i += Long.BYTES) {
                out.set(ValueLayout.JAVA_LONG_UNALIGNED, i, 0x9E3779B97F4A7C15L * (i + 1));
            }
            try (FileChannel ch = FileChannel.open(probe, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE, ExtendedOpenOption.DIRECT)) {
                var src = out.asByteBuffer();
                while (src.hasRemaining()) {
                    ch.write(src, src.position());
                }
                var dst = in.asByteBuffer();
                while (dst.hasRemaining()) {
                    if (ch.read(dst, dst.position()) < 0) {
                        return "probe file ended after " + dst.position() + " of " + block + " bytes";
                    }
                }
            }
            if (out.mismatch(in) != -1) {
                return "probe block read back differs from what was written";
            }
            return null;
        } catch (IOException | UnsupportedOperationException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        } finally {
            try {
                Files.deleteIfExists(probe);
            } catch (IOException ignored) {
                // the probe file is tiny and named as such; nothing else depends on its removal
            }
        }
    }

    /** One line for reports, e.g. {@code ext4 (/dev/vda) at /tmp/x: block 4096 B, usable 80 GiB of 250 GiB, O_DIRECT works}. */
    public String describe() {
        String direct;
        if (directIoEffective()) {
            direct = "O_DIRECT works";
        } else if (directIoAccepted) {
            direct = "O_DIRECT accepted but memory-backed (no page cache to bypass)";
        } else {
            direct = "O_DIRECT refused (" + directIoProblem + ")";
        }
        return type + " (" + storeName + ") at " + directory + ": block " + blockSize + " B, usable "
                + Sizes.format(usableSpace) + " of " + Sizes.format(totalSpace) + ", " + direct;
    }
}
