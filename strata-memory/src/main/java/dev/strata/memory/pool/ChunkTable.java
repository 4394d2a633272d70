package dev.strata.memory.pool;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One state word per chunk of the data area, in the pool: whether the chunk is free and, if not,
 * which process claimed it and which allocation (its head chunk) it belongs to.
 *
 * <pre>
 * Word c at chunkTableOffset + c * WORD_SIZE (8 bytes, changed only by CAS or release-store):
 *  63  62........56 55..............40 39...........................0
 * +---+------------+------------------+------------------------------+
 * | 1 |  reserved  | owner slot       | head chunk of the allocation |
 * +---+------------+------------------+------------------------------+
 * word == 0: the chunk is free.
 * </pre>
 *
 * <p>Invariants: a non-zero word at {@code j != h} with head {@code h} implies that chunk
 * {@code h} is non-zero with head {@code h} (a run is claimed head first and released head last),
 * so a new allocation can only start at {@code h} once every chunk of the old run is free.
 *
 * <p>Threads: any, in any process.
 */
final class ChunkTable {
    static final long WORD_SIZE = 8;
    static final long IN_USE = 1L << 63;
    static final int OWNER_SHIFT = 40;
    static final long HEAD_MASK = (1L << OWNER_SHIFT) - 1;
    static final long MAX_CHUNKS = HEAD_MASK;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment segment;
    private final long base; // byte offset of word 0 in segment
    private final long chunkCount;

    ChunkTable(MemorySegment segment, long base, long chunkCount) {
        if (chunkCount <= 0 || chunkCount > MAX_CHUNKS) {
            throw new IllegalArgumentException("chunk count " + chunkCount + " must be in [1, " + MAX_CHUNKS + "]");
        }
        this.segment = segment;
        this.base = base;
        this.chunkCount = chunkCount;
    }

    long chunkCount() {
        return chunkCount;
    }

    static long word(int ownerSlot, long head) {
        return IN_USE | ((long) ownerSlot << OWNER_SHIFT) | head;
    }

    static boolean inUse(long word) {
        return word != 0;
    }

    static int owner(long word) {
        return (int) ((word >>> OWNER_SHIFT) & 0xFFFF);
    }

    static long head(long word) {
        return word & HEAD_MASK;
    }

    long get(long chunk) {
        return (long) LONG.getAcquire(segment, base + chunk * WORD_SIZE);
    }

    boolean compareAndSet(long chunk, long expected, long value) {
        return LONG.compareAndSet(segment, base + chunk * WORD_SIZE, expected, value);
    }

    /** Count of non-free chunks: a scan, not atomic with concurrent changes. */
    long countInUse() {
        long n = 0;
        for (long c = 0; c < chunkCount; c++) {
            if (get(c) != 0) {
                n++;
            }
        }
        return n;
    }
}
