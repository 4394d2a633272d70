package dev.strata.engine.forward;

import dev.strata.cache.kv.KvSequence;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * One sequence's KV blocks as views of the block-major KV arena, kept from step to step: a view is
 * made when a block is added or its slot changes (a preemption and resume), not on every forward
 * call, and the immutable list of the first {@code b} views that attention reads is remade only when
 * {@code b} or a view changes (once per {@code blockTokens} decode steps).
 *
 * <p>Threads: the thread driving the sequence's runner.
 */
final class KvBlockViews {
    private final MemorySegment kvArena; // block-major: slot s at s × bytesPerBlock
    private final long bytesPerBlock;
    private int count; // views held, [0, count) valid
    private int[] slots = new int[4]; // [count] the slot each view was made for
    private MemorySegment[] views = new MemorySegment[4]; // [count] block i of the sequence
    private int prefixBlocks = -1; // blocks in prefix; −1 when it must be remade
    private List<MemorySegment> prefix; // the first prefixBlocks views, immutable

    KvBlockViews(MemorySegment kvArena, long bytesPerBlock) {
        this.kvArena = kvArena;
        this.bytesPerBlock = bytesPerBlock;
    }

    /** Brings the views in line with the blocks {@code seq} holds now. */
    void sync(KvSequence seq) {
        int n = seq.blockCount();
        if (n > views.length) {
            int size = Math.max(n, 2 * views.length);
            views = Arrays.copyOf(views, size);
            slots = Arrays.copyOf(slots, size);
        }
        boolean changed = n != count;
        for (int i = 0; i < n; i++) {
            int slot = seq.slot(i);
            if (i >= count || slots[i] != slot) {
                slots[i] = slot;
                views[i] = kvArena.asSlice(slot * bytesPerBlock, bytesPerBlock);
                changed = true;
            }
        }
        Arrays.fill(views, n, count < n ? n : count, null);
        count = n;
        if (changed) {
            prefixBlocks = -1;
        }
    }

    /** The first {@code blocks} views ({@code 1 ≤ blocks ≤} the blocks held), as an immutable list. */
    List<MemorySegment> prefix(int blocks) {
        if (blocks < 1 || blocks > count) {
            throw new IllegalArgumentException("a KV view of " + blocks + " blocks of a sequence holding " + count);
        }
        if (blocks != prefixBlocks) {
            prefix = List.of(Arrays.copyOf(views, blocks));
            prefixBlocks = blocks;
        }
        return prefix;
    }
}
