package dev.strata.node.index;

import static dev.strata.node.index.IndexRegion.PIN_SIZE;
import static dev.strata.node.index.IndexRegion.L_DEADLINE;
import static dev.strata.node.index.IndexRegion.L_TAG;
import static dev.strata.node.index.IndexRegion.RANGE_HEADER_SIZE;
import static dev.strata.node.index.IndexRegion.R_HIGH_WATER;
import static dev.strata.node.index.IndexRegion.R_INCARNATION;

import java.lang.foreign.MemorySegment;

/**
 * The pin records of a block index ({@link IndexRegion}: one range per process slot) and the
 * pin protocol between readers and evictors.
 *
 * <p>Design note (a Dekker handshake over volatile accesses, which Java orders totally):
 * <ul>
 *   <li><b>Pin</b> (reader, having read the entry's state word {@code w} = PUBLISHED): raise its
 *       range's high-water mark if needed (CAS), CAS a free record of its range from 0 to
 *       {@code seq << 32 | entry + 1}, then volatile-read the entry's state word again. Unchanged:
 *       the block is pinned. Changed (an evictor got there first): free the record and give up.</li>
 *   <li><b>Begin eviction</b> (evictor): CAS the entry's state word from {@code w} to EVICTING, then
 *       volatile-read every range's high-water mark and its records below it. A live record for the
 *       entry: CAS the state back to {@code w} (readers that saw {@code w} before see it again);
 *       none: the evictor may free the block.</li>
 * </ul>
 * Either the reader's second read comes after the evictor's CAS (the reader sees EVICTING and
 * gives up) or the reader's record CAS comes before the evictor's scan (the evictor sees it and
 * backs off); both may happen, never neither. {@code PinTableStress} checks this under JCStress.
 * A free record always has deadline 0 (the deadline is cleared before the tag), and 0 means "just
 * claimed, pins", so a reader between its claim and its deadline store is never mistaken for an
 * expired pin. A record pins while its deadline has not passed and its range's owner (process
 * slot + incarnation) is alive.
 *
 * <p>Threads: any, in any process; every change is a CAS or a volatile store on the shared segment.
 */
final class PinTable {
    /** Whether the process of a slot with an incarnation is alive. */
    @FunctionalInterface
    interface Liveness {
        boolean alive(int slot, long incarnation);
    }

    /** {@link #pin}: no free record in the caller's range. */
    static final long NO_RECORD = -1;
    /** {@link #pin}: the entry changed before the pin took hold. */
    static final long CHANGED = -2;

    private final MemorySegment region;
    private final long base; // pinTableOffset
    private final int processSlots;
    private final int pinsPerProcess;
    private final long rangeSize;

    PinTable(MemorySegment region, long base, int processSlots, int pinsPerProcess) {
        this.region = region;
        this.base = base;
        this.processSlots = processSlots;
        this.pinsPerProcess = pinsPerProcess;
        this.rangeSize = IndexRegion.rangeSize(pinsPerProcess);
    }

    int pinsPerProcess() {
        return pinsPerProcess;
    }

    long range(int slot) {
        return base + slot * rangeSize;
    }

    long recordAt(int slot, long record) {
        return range(slot) + RANGE_HEADER_SIZE + record * PIN_SIZE;
    }

    long tag(int slot, long record) {
        return IndexRegion.getVolatile(region, recordAt(slot, record) + L_TAG);
    }

    long deadline(int slot, long record) {
        return IndexRegion.getVolatile(region, recordAt(slot, record) + L_DEADLINE);
    }

    long highWater(int slot) {
        return Math.min(IndexRegion.getVolatile(region, range(slot) + R_HIGH_WATER), pinsPerProcess);
    }

    long incarnation(int slot) {
        return IndexRegion.getAcquire(region, range(slot) + R_INCARNATION);
    }

    /** Clears the range of {@code slot} and hands it to {@code incarnation} (the new occupant of the slot). */
    void takeOver(int slot, long incarnation) {
        if (incarnation(slot) == incarnation) {
            return;
        }
        for (long i = 0; i < pinsPerProcess; i++) {
            long at = recordAt(slot, i);
            IndexRegion.LONG.setVolatile(region, at + L_DEADLINE, 0L);
            IndexRegion.LONG.setVolatile(region, at + L_TAG, 0L);
        }
        IndexRegion.LONG.setVolatile(region, range(slot) + R_HIGH_WATER, 0L);
        IndexRegion.setRelease(region, range(slot) + R_INCARNATION, incarnation);
    }

    /**
     * Reader side: pins entry {@code entry}, whose state word at {@code stateAt} the caller read
     * as {@code w}, with a record of {@code slot}'s range tagged {@code seq}.
     *
     * @return the record, {@link #NO_RECORD} or {@link #CHANGED}
     */
    long pin(long stateAt, long w, long entry, int slot, int seq) {
        long tag = ((long) seq << 32) | (entry + 1);
        for (long i = 0; i < pinsPerProcess; i++) {
            long at = recordAt(slot, i);
            if (IndexRegion.get(region, at + L_TAG) != 0) {
                continue;
            }
            raiseHighWater(slot, i + 1);
            if (IndexRegion.cas(region, at + L_TAG, 0L, tag)) {
                if (IndexRegion.getVolatile(region, stateAt) != w) {
                    free(slot, i, tag);
                    return CHANGED;
                }
                return i;
            }
        }
        return NO_RECORD;
    }

    /** Sets the deadline of a record just pinned (until then it pins without expiring). */
    void arm(int slot, long record, long deadlineMillis) {
        IndexRegion.LONG.setVolatile(region, recordAt(slot, record) + L_DEADLINE, deadlineMillis);
    }

    private void raiseHighWater(int slot, long n) {
        long at = range(slot) + R_HIGH_WATER;
        while (true) {
            long hw = IndexRegion.getVolatile(region, at);
            if (hw >= n || IndexRegion.cas(region, at, hw, n)) {
                return;
            }
        }
    }

    /** Frees a record whose tag is {@code tag}: its deadline to 0 first. True if this call freed it. */
    boolean free(int slot, long record, long tag) {
        long at = recordAt(slot, record);
        IndexRegion.LONG.setVolatile(region, at + L_DEADLINE, 0L);
        return IndexRegion.cas(region, at + L_TAG, tag, 0L);
    }

    /**
     * Frees a record whose pin expired (its deadline still {@code deadline}, passed) or whose
     * process is dead; true if this call freed it.
     */
    boolean clear(int slot, long record, long tag, long deadline, boolean ownerDead) {
        long at = recordAt(slot, record);
        if (!ownerDead && !IndexRegion.cas(region, at + L_DEADLINE, deadline, 0L)) {
            return false;
        }
        if (ownerDead) {
            IndexRegion.LONG.setVolatile(region, at + L_DEADLINE, 0L);
        }
        return IndexRegion.cas(region, at + L_TAG, tag, 0L);
    }

    /**
     * Evictor side: moves the entry's state word at {@code stateAt} from {@code w} to
     * {@code evicting} unless a live pin holds entry {@code entry}.
     *
     * @return true if the entry is now {@code evicting} and unpinned: the caller frees the block
     */
    boolean beginEviction(long stateAt, long w, long evicting, long entry, long nowMillis, int mySlot, Liveness liveness) {
        if (!IndexRegion.cas(region, stateAt, w, evicting)) {
            return false;
        }
        if (pinned(entry, nowMillis, mySlot, liveness)) {
            IndexRegion.cas(region, stateAt, evicting, w);
            return false;
        }
        return true;
    }

    /** True if a live pin (unexpired, its process alive) names entry {@code entry}. */
    boolean pinned(long entry, long nowMillis, int mySlot, Liveness liveness) {
        for (int s = 0; s < processSlots; s++) {
            long hw = highWater(s);
            for (long i = 0; i < hw; i++) {
                long tag = tag(s, i);
                if (tag == 0 || (tag & 0xFFFF_FFFFL) != entry + 1) {
                    continue;
                }
                long deadline = deadline(s, i);
                if (deadline != 0 && deadline <= nowMillis) {
                    continue;
                }
                if (s != mySlot && !liveness.alive(s, incarnation(s))) {
                    continue;
                }
                return true;
            }
        }
        return false;
    }
}
