package dev.strata.memory.pool;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One object descriptor per chunk, in the pool; only the descriptor of an allocation's head chunk
 * is used. It carries the publish state, the generation, the writer or freer, and the payload's
 * length and checksum.
 *
 * <pre>
 * Descriptor c at descriptorTableOffset + c * DESCRIPTOR_SIZE (32 bytes):
 * offset size field
 *      0    8 stateWord  bits 0-1 state (FREE 0, WRITING 1, PUBLISHED 2, FREEING 3)
 *                        bits 2-17 owner slot + 1 (0: none): the writer (WRITING, PUBLISHED)
 *                                  or the freer (FREEING)
 *                        bits 18-63 generation
 *      8    8 runChunks  chunks of the allocation (set before WRITING, stable until FREE)
 *     16    8 length     payload bytes of the published object
 *     24    8 checksum   Checksum64 of those bytes (dev.strata.memory.Checksum64)
 * </pre>
 * (Format major 1 held a 32-bit CRC32C at 24 and 4 reserved bytes at 28.)
 *
 * <p>State machine (every arrow one CAS on the state word; the generation grows on every arrow
 * except WRITING -&gt; PUBLISHED and FREEING -&gt; FREE, so a PUBLISHED word never recurs):
 * <pre>
 * FREE --allocate--&gt; WRITING --publish--&gt; PUBLISHED --rewrite--&gt; WRITING
 *                      |                     |
 *                      +------free-----------+--&gt; FREEING --chunks released--&gt; FREE
 * </pre>
 *
 * <p>Threads: any, in any process.
 */
final class ObjectDescriptorTable {
    static final long DESCRIPTOR_SIZE = 32;
    static final long STATE_OFFSET = 0;
    static final long RUN_CHUNKS_OFFSET = 8;
    static final long LENGTH_OFFSET = 16;
    static final long CHECKSUM_OFFSET = 24;

    static final int FREE = 0;
    static final int WRITING = 1;
    static final int PUBLISHED = 2;
    static final int FREEING = 3;
    /** Process slots are limited so that {@code slot + 1} fits the 16-bit owner field. */
    static final int MAX_SLOTS = 4096;

    private static final int OWNER_SHIFT = 2;
    private static final int GENERATION_SHIFT = 18;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment segment;
    private final long base; // byte offset of descriptor 0 in segment
    private final long chunkCount;

    ObjectDescriptorTable(MemorySegment segment, long base, long chunkCount) {
        this.segment = segment;
        this.base = base;
        this.chunkCount = chunkCount;
    }

    long chunkCount() {
        return chunkCount;
    }

    static long word(int state, int ownerSlot, long generation) {
        return (generation << GENERATION_SHIFT) | ((long) (ownerSlot + 1) << OWNER_SHIFT) | state;
    }

    static int state(long word) {
        return (int) (word & 3);
    }

    /** The owner slot, or -1 for none. */
    static int owner(long word) {
        return (int) ((word >>> OWNER_SHIFT) & 0xFFFF) - 1;
    }

    static long generation(long word) {
        return word >>> GENERATION_SHIFT;
    }

    static String describe(long word) {
        String s = switch (state(word)) {
            case FREE -> "FREE";
            case WRITING -> "WRITING";
            case PUBLISHED -> "PUBLISHED";
            default -> "FREEING";
        };
        return s + "(generation " + generation(word) + ", owner slot " + owner(word) + ")";
    }

    long stateAcquire(long chunk) {
        return (long) LONG.getAcquire(segment, at(chunk, STATE_OFFSET));
    }

    boolean compareAndSetState(long chunk, long expected, long value) {
        return LONG.compareAndSet(segment, at(chunk, STATE_OFFSET), expected, value);
    }

    long runChunks(long chunk) {
        return (long) LONG.get(segment, at(chunk, RUN_CHUNKS_OFFSET));
    }

    void setRunChunks(long chunk, long n) {
        LONG.set(segment, at(chunk, RUN_CHUNKS_OFFSET), n);
    }

    long length(long chunk) {
        return (long) LONG.get(segment, at(chunk, LENGTH_OFFSET));
    }

    long checksum(long chunk) {
        return (long) LONG.get(segment, at(chunk, CHECKSUM_OFFSET));
    }

    /** Plain stores: made visible by the CAS that publishes. */
    void setLengthAndChecksum(long chunk, long length, long checksum) {
        LONG.set(segment, at(chunk, LENGTH_OFFSET), length);
        LONG.set(segment, at(chunk, CHECKSUM_OFFSET), checksum);
    }

    private long at(long chunk, long field) {
        return base + chunk * DESCRIPTOR_SIZE + field;
    }
}
