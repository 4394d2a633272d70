package dev.strata.memory.alloc;

import dev.strata.memory.Allocator;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Hands out fixed-size blocks of {@code blockSize} bytes from {@code [0, capacity)} in O(1).
 *
 * <p>Design: block {@code i} covers {@code [i * blockSize, (i + 1) * blockSize)}. Free blocks form
 * a lock-free LIFO stack (a Treiber stack) threaded through {@link #next}; the stack head packs
 * the top block index (low 32 bits) with a version tag (high 32 bits) that every successful push
 * and pop increments, so a pop whose view of the head went stale (the ABA case: the top block was
 * popped and pushed back by other threads in between) fails its compare-and-set and retries. A
 * bitmap of live blocks, updated with compare-and-set per word, detects a double free or a free of
 * an offset that was never handed out, and reports the offset. A tail of the capacity smaller than
 * one block is not used: {@link #capacity()} is the whole blocks only.
 *
 * <p>Threads: every method may be called from any thread without external locking; allocate and
 * free are lock-free. {@link #freeRanges()}, {@link #liveRanges()} and {@link #checkInvariants()}
 * give a consistent picture only while no allocate or free runs concurrently.
 *
 * <p>Invariants: a block is either on the free stack or set in the live bitmap, never both once
 * an operation has returned; {@code used() == allocationCount() * blockSize()}.
 */
public final class SlabAllocator implements Allocator {

    private static final int EMPTY = -1;      // index meaning "no block" in the stack
    private static final long INDEX_MASK = 0xFFFF_FFFFL;

    private final long blockSize;             // bytes per block
    private final int blockShift;             // log2(blockSize) when it is a power of two (offsets shift instead of divide), else -1
    private final int blockCount;             // number of blocks, capacity / blockSize
    private final int[] next;                 // [blockCount] index of the block below on the free stack, EMPTY at the bottom
    private final AtomicLong head;            // (tag << 32) | top index (EMPTY as 0xFFFFFFFF)
    private final AtomicLongArray liveBits;   // [ceil(blockCount / 64)] bit i set = block i allocated
    private final AtomicLong liveCount = new AtomicLong(); // live blocks

    /**
     * @param capacity  bytes of address space; a tail smaller than a block stays unused
     * @param blockSize bytes per block, {@code > 0} and {@code <= capacity}
     */
    public SlabAllocator(long capacity, long blockSize) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("block size must be positive, got " + blockSize);
        }
        if (capacity < blockSize) {
            throw new IllegalArgumentException("capacity " + capacity + " is smaller than block size " + blockSize);
        }
        long blocks = capacity / blockSize;
        if (blocks > Integer.MAX_VALUE - 1) {
            throw new IllegalArgumentException("capacity " + capacity + " holds " + blocks
                    + " blocks of " + blockSize + " bytes; at most " + (Integer.MAX_VALUE - 1) + " are supported");
        }
        this.blockSize = blockSize;
        this.blockShift = Long.bitCount(blockSize) == 1 ? Long.numberOfTrailingZeros(blockSize) : -1;
        this.blockCount = (int) blocks;
        this.next = new int[blockCount];
        for (int i = 0; i < blockCount; i++) {
            next[i] = i + 1 < blockCount ? i + 1 : EMPTY;
        }
        this.head = new AtomicLong(pack(0, 0));
        this.liveBits = new AtomicLongArray((blockCount + 63) >>> 6);
    }

    private static long pack(long tag, int index) {
        return (tag << 32) | (index & INDEX_MASK);
    }

    private static int indexOf(long packed) {
        return (int) packed;
    }

    @Override
    public long allocate(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("allocation size must be positive, got " + size);
        }
        if (size > blockSize) {
            throw new IllegalArgumentException("allocation size " + size + " exceeds block size " + blockSize);
        }
        int index = pop();
        if (index == EMPTY) {
            return FULL;
        }
        setLive(index);
        liveCount.incrementAndGet();
        return index * blockSize;
    }

    @Override
    public void free(long offset) {
        int index = blockIndex(offset);
        clearLive(index, offset);
        liveCount.decrementAndGet();
        push(index);
    }

    @Override
    public long sizeIfAllocated(long offset) {
        if (offset < 0 || offset >= capacity() || offset % blockSize != 0) {
            return NOT_ALLOCATED;
        }
        return isLive((int) (offset / blockSize)) ? blockSize : NOT_ALLOCATED;
    }

    @Override
    public long sizeOf(long offset) {
        int index = blockIndex(offset);
        if (!isLive(index)) {
            throw new IllegalArgumentException("offset " + offset + " is not allocated (block " + index + " is free)");
        }
        return blockSize;
    }

    /** True if {@code offset} is the start of a live block; false for any other value. */
    public boolean isAllocated(long offset) {
        if (offset < 0 || offset % blockSize != 0 || offset / blockSize >= blockCount) {
            return false;
        }
        return isLive((int) (offset / blockSize));
    }

    @Override
    public long capacity() {
        return blockCount * blockSize;
    }

    @Override
    public long used() {
        return liveCount.get() * blockSize;
    }

    @Override
    public long alignment() {
        return Long.lowestOneBit(blockSize);
    }

    @Override
    public long uniformBlockBytes() {
        return blockSize;
    }

    @Override
    public long allocationCount() {
        return liveCount.get();
    }

    /** Bytes per block. */
    public long blockSize() {
        return blockSize;
    }

    /** Number of blocks managed. */
    public int blockCount() {
        return blockCount;
    }

    private int pop() {
        while (true) {
            long h = head.get();
            int top = indexOf(h);
            if (top == EMPTY) {
                return EMPTY;
            }
            int below = next[top]; // may be stale; then the tag check below fails
            if (head.compareAndSet(h, pack((h >>> 32) + 1, below))) {
                return top;
            }
            Thread.onSpinWait();
        }
    }

    private void push(int index) {
        while (true) {
            long h = head.get();
            next[index] = indexOf(h); // published by the release in compareAndSet
            if (head.compareAndSet(h, pack((h >>> 32) + 1, index))) {
                return;
            }
            Thread.onSpinWait();
        }
    }

    private int blockIndex(long offset) {
        if (offset < 0 || offset >= capacity()) {
            throw new IllegalArgumentException("offset " + offset + " is outside [0, " + capacity() + ")");
        }
        // a shift and a mask for power-of-two blocks: this runs on every free and size lookup
        long index = blockShift >= 0 ? offset >>> blockShift : offset / blockSize;
        if (index * blockSize != offset) {
            throw new IllegalArgumentException("offset " + offset + " is not the start of a block (block size " + blockSize + ")");
        }
        return (int) index;
    }

    private boolean isLive(int index) {
        return (liveBits.get(index >>> 6) & (1L << index)) != 0;
    }

    private void setLive(int index) {
        int word = index >>> 6;
        long bit = 1L << index;
        while (true) {
            long w = liveBits.get(word);
            if ((w & bit) != 0) {
                throw new IllegalStateException("block " + index + " at offset " + index * blockSize
                        + " was on the free stack while marked live (free stack corrupted)");
            }
            if (liveBits.compareAndSet(word, w, w | bit)) {
                return;
            }
        }
    }

    private void clearLive(int index, long offset) {
        int word = index >>> 6;
        long bit = 1L << index;
        while (true) {
            long w = liveBits.get(word);
            if ((w & bit) == 0) {
                throw new IllegalStateException("offset " + offset + " is not allocated: double free or never allocated");
            }
            if (liveBits.compareAndSet(word, w, w & ~bit)) {
                return;
            }
        }
    }

    /** Free blocks merged into maximal ranges, by offset. Consistent only when quiescent. */
    public List<FreeRange> freeRanges() {
        return ranges(false);
    }

    /** Live blocks, one range each, by offset. Consistent only when quiescent. */
    public List<FreeRange> liveRanges() {
        List<FreeRange> out = new ArrayList<>();
        for (int i = 0; i < blockCount; i++) {
            if (isLive(i)) {
                out.add(new FreeRange(i * blockSize, blockSize));
            }
        }
        return out;
    }

    private List<FreeRange> ranges(boolean live) {
        List<FreeRange> out = new ArrayList<>();
        int i = 0;
        while (i < blockCount) {
            if (isLive(i) == live) {
                int j = i;
                while (j < blockCount && isLive(j) == live) {
                    j++;
                }
                out.add(new FreeRange(i * blockSize, (j - i) * blockSize));
                i = j;
            } else {
                i++;
            }
        }
        return out;
    }

    /**
     * Checks the internal structure while no other thread allocates or frees: every block is on
     * the free stack exactly once or live, never both, and the live count matches the bitmap.
     *
     * @throws IllegalStateException naming the first violation
     */
    public void checkInvariants() {
        boolean[] onStack = new boolean[blockCount];
        int stacked = 0;
        for (int i = indexOf(head.get()); i != EMPTY; i = next[i]) {
            if (i < 0 || i >= blockCount) {
                throw new IllegalStateException("free stack holds index " + i + " outside [0, " + blockCount + ")");
            }
            if (onStack[i]) {
                throw new IllegalStateException("block " + i + " is on the free stack twice");
            }
            if (isLive(i)) {
                throw new IllegalStateException("block " + i + " is both live and on the free stack");
            }
            onStack[i] = true;
            stacked++;
        }
        long live = 0;
        for (int i = 0; i < blockCount; i++) {
            if (isLive(i)) {
                live++;
            } else if (!onStack[i]) {
                throw new IllegalStateException("block " + i + " is neither live nor on the free stack (lost)");
            }
        }
        if (live != liveCount.get()) {
            throw new IllegalStateException("live count " + liveCount.get() + " differs from bitmap count " + live);
        }
        if (live + stacked != blockCount) {
            throw new IllegalStateException("live " + live + " + free " + stacked + " != blocks " + blockCount);
        }
    }
}
