package dev.strata.node.index;

import dev.strata.cache.ObjectKey;
import java.lang.foreign.MemorySegment;
import java.util.BitSet;

/**
 * Counts a block index's entries by state and its live pins, by one scan of the region; shared
 * by {@link PoolBlockIndex#stats()} and the read-only {@link PoolIndexInspector}.
 *
 * <p>Stateless; any thread. The result is a snapshot, not atomic with concurrent changes.
 */
final class IndexScan {

    /** Whether the process that held (or holds) a process slot with an incarnation is alive. */
    @FunctionalInterface
    interface Liveness {
        boolean alive(int slot, long incarnation);
    }

    private IndexScan() {
    }

    static IndexStats stats(MemorySegment region, IndexRegion.Geometry g, long nowMillis, Liveness liveness) {
        BitSet pinnedEntries = new BitSet();
        long livePins = 0;
        long rangeSize = g.rangeSize();
        for (int s = 0; s < g.processSlots(); s++) {
            long range = g.pinTableOffset() + s * rangeSize;
            long hw = Math.min(IndexRegion.getVolatile(region, range + IndexRegion.R_HIGH_WATER), g.pinsPerProcess());
            if (hw == 0) {
                continue;
            }
            long incarnation = IndexRegion.getAcquire(region, range + IndexRegion.R_INCARNATION);
            boolean checked = false;
            boolean alive = false;
            for (long i = 0; i < hw; i++) {
                long at = range + IndexRegion.RANGE_HEADER_SIZE + i * IndexRegion.PIN_SIZE;
                long tag = IndexRegion.getVolatile(region, at + IndexRegion.L_TAG);
                if (tag == 0) {
                    continue;
                }
                long deadline = IndexRegion.getVolatile(region, at + IndexRegion.L_DEADLINE);
                if (deadline != 0 && deadline <= nowMillis) {
                    continue;
                }
                if (!checked) {
                    alive = liveness.alive(s, incarnation);
                    checked = true;
                }
                if (alive) {
                    livePins++;
                    long entry = (tag & 0xFFFF_FFFFL) - 1;
                    if (entry >= 0 && entry < g.entryCount()) {
                        pinnedEntries.set((int) entry);
                    }
                }
            }
        }
        long published = 0;
        long writing = 0;
        long evicting = 0;
        long quarantined = 0;
        long pinned = 0;
        long bytes = 0;
        for (long e = 0; e < g.entryCount(); e++) {
            long a = g.entryTableOffset() + e * IndexRegion.ENTRY_SIZE;
            long w = IndexRegion.getAcquire(region, a + IndexRegion.E_STATE);
            switch (IndexRegion.state(w)) {
                case IndexRegion.PUBLISHED -> {
                    published++;
                    bytes += IndexRegion.get(region, a + IndexRegion.E_LENGTH);
                    if (pinnedEntries.get((int) e)) {
                        pinned++;
                    }
                }
                case IndexRegion.WRITING -> writing++;
                case IndexRegion.EVICTING -> evicting++;
                case IndexRegion.EMPTY, IndexRegion.TOMBSTONE -> {
                }
                default -> quarantined++; // QUARANTINED, or an impossible state not yet quarantined
            }
        }
        ObjectKey model = new ObjectKey(IndexRegion.get(region, IndexRegion.MODEL_HIGH_OFFSET),
                IndexRegion.get(region, IndexRegion.MODEL_LOW_OFFSET));
        return new IndexStats((int) IndexRegion.get(region, IndexRegion.HASH_VERSION_OFFSET), model, g.entryCount(),
                published, writing, evicting, quarantined, pinned, livePins, bytes);
    }
}
