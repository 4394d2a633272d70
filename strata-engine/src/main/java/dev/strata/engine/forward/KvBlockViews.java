package dev.strata.engine.forward;

import dev.strata.cache.kv.KvLayout;
import dev.strata.cache.kv.KvSequence;
import dev.strata.cache.kv.ResizableKvLayout;
import dev.strata.cache.kv.TokenSelection;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One sequence's KV blocks as views read through the KV manager's layout (one contiguous segment
 * per block, checked by the runner), kept from step to step: with a fixed layout (the block-major
 * arena) a view is made when a block is added or its slot changes (a preemption and resume), not on
 * every forward call; with a {@link ResizableKvLayout} (slots are separate allocations that a live
 * split frees and allocates anew between steps) every held block's segment is looked up again at
 * each sync and its view replaced when the memory differs. The immutable list of the first
 * {@code b} views that attention reads is remade only when {@code b} or a view changes (once per
 * {@code blockTokens} decode steps).
 *
 * <p>Threads: the thread driving the sequence's runner.
 */
final class KvBlockViews {
    private final KvLayout layout; // the manager's layout: a block is one segment of its canonical bytes
    private final boolean resizable; // slots' memory may change between syncs: look every block up again
    private final TokenSelection allTokens; // every token of a block: a block's KV is read whole
    private final List<MemorySegment> found = new ArrayList<>(1); // scratch for one lookup
    private int count; // views held, [0, count) valid
    private int[] slots = new int[4]; // [count] the slot each view was made for
    private MemorySegment[] views = new MemorySegment[4]; // [count] block i of the sequence
    private int prefixBlocks = -1; // blocks in prefix; −1 when it must be remade
    private List<MemorySegment> prefix; // the first prefixBlocks views, immutable

    KvBlockViews(KvLayout layout) {
        this.layout = layout;
        this.resizable = layout instanceof ResizableKvLayout;
        this.allTokens = TokenSelection.all(layout.geometry().blockTokens());
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
                views[i] = view(slot); // before the slot: a lookup that throws leaves view i to be made again
                slots[i] = slot;
                changed = true;
            } else if (resizable) {
                MemorySegment now = view(slot);
                if (!now.equals(views[i])) {
                    views[i] = now;
                    changed = true;
                }
            }
        }
        Arrays.fill(views, n, count < n ? n : count, null);
        count = n;
        if (changed) {
            prefixBlocks = -1;
        }
    }

    /** The one segment holding {@code slot}'s block. */
    private MemorySegment view(int slot) {
        found.clear();
        layout.segments(slot, allTokens, found);
        if (found.size() != 1) {
            throw new IllegalStateException("the KV layout " + layout + " gives slot " + slot + " in " + found.size()
                    + " segments, not one");
        }
        MemorySegment segment = found.get(0);
        found.clear();
        return segment;
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
