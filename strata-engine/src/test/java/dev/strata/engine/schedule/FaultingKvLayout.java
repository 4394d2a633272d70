package dev.strata.engine.schedule;

import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvLayout;
import dev.strata.cache.kv.TokenSelection;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A KV layout over another whose tier can be made to fault: while faulting, every lookup of a
 * slot's memory throws, as it does when the tier holding the slots has lost its mapping; views of
 * blocks looked up before keep working (the runner looks a block up when the block is added to a
 * sequence). Test thread and the scheduler thread, one at a time.
 */
final class FaultingKvLayout implements KvLayout {
    private final KvLayout inner;
    private boolean faulting;
    private int faults; // lookups refused so far

    FaultingKvLayout(KvLayout inner) {
        this.inner = inner;
    }

    /** Makes every lookup from now on throw ({@code true}) or pass through again ({@code false}). */
    void fault(boolean on) {
        faulting = on;
    }

    /** Lookups refused so far. */
    int faults() {
        return faults;
    }

    @Override
    public KvGeometry geometry() {
        return inner.geometry();
    }

    @Override
    public int slots() {
        return inner.slots();
    }

    @Override
    public void segments(int slot, TokenSelection selection, List<MemorySegment> out) {
        if (faulting) {
            faults++;
            throw new IllegalStateException("KV slot " + slot + " is unreadable: its tier faulted");
        }
        inner.segments(slot, selection, out);
    }

    @Override
    public String toString() {
        return "faulting " + inner;
    }
}
