package dev.strata.memory.disk;

import dev.strata.memory.Sizes;

import java.lang.foreign.MemorySegment;

/**
 * Alignment arithmetic for direct I/O: with {@code O_DIRECT} the file position, the length and the
 * buffer address of every transfer must be multiples of the file store's block size.
 *
 * <p>Every method takes the block size explicitly; it must be a power of two (checked, since a
 * wrong block size silently corrupts the arithmetic). Stateless; any thread.
 */
public final class BlockAlignment {

    private BlockAlignment() {
    }

    /** Rounds {@code value} ({@code >= 0}) up to a multiple of {@code block}. */
    public static long alignUp(long value, long block) {
        check(value, block);
        return Sizes.alignUp(value, block);
    }

    /** Rounds {@code value} ({@code >= 0}) down to a multiple of {@code block}. */
    public static long alignDown(long value, long block) {
        check(value, block);
        return value & -block;
    }

    /** True if {@code value} ({@code >= 0}) is a multiple of {@code block}. */
    public static boolean isAligned(long value, long block) {
        check(value, block);
        return (value & (block - 1)) == 0;
    }

    /**
     * True if direct I/O may transfer straight into or out of {@code segment}'s memory: it is
     * native memory and its address is a multiple of {@code block}. Its length is not considered
     * (see {@link #directPrefix}).
     */
    public static boolean isDirectCapable(MemorySegment segment, long block) {
        return segment.isNative() && isAligned(segment.address(), block);
    }

    /**
     * The number of leading bytes of {@code segment} that direct I/O may transfer in place: its
     * length rounded down to the block size if it is {@link #isDirectCapable}, else 0. The rest
     * (always less than one block when the segment is capable) goes through a staging buffer.
     */
    public static long directPrefix(MemorySegment segment, long block) {
        return isDirectCapable(segment, block) ? alignDown(segment.byteSize(), block) : 0;
    }

    private static void check(long value, long block) {
        if (!Sizes.isPowerOfTwo(block)) {
            throw new IllegalArgumentException("block size must be a power of two, got " + block);
        }
        if (value < 0) {
            throw new IllegalArgumentException("value to align must be >= 0, got " + value);
        }
    }
}
