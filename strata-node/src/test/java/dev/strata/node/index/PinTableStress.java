package dev.strata.node.index;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.lang.foreign.MemorySegment;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;
import org.openjdk.jcstress.infra.results.JJ_Result;

/**
 * JCStress tests of the block index's pin protocol ({@link PinTable#pin} against
 * {@link PinTable#beginEviction}) and of its entry publication, on the real code over a small
 * heap-backed region (the code is the same for the pool's mapping).
 *
 * <p>Run in the regular suite by {@code PinTableStressTest} in JCStress's quick mode.
 */
public final class PinTableStress {
    static final int SLOTS = 2;
    static final int PINS = 2;
    static final long ENTRY = 3; // the entry under test
    static final long STATE_AT = 0; // its state word lives at the region's start
    static final long PIN_BASE = 64;
    static final long PUBLISHED = IndexRegion.word(IndexRegion.PUBLISHED, IndexRegion.ownerBitsOf(0, 1), 7);
    static final long EVICTING = IndexRegion.word(IndexRegion.EVICTING, IndexRegion.ownerBitsOf(1, 1), 7);

    private PinTableStress() {
    }

    static MemorySegment region() {
        return MemorySegment.ofArray(new long[(int) ((PIN_BASE + SLOTS * IndexRegion.rangeSize(PINS)) / 8)]);
    }

    /**
     * A reader pins the entry while an evictor tries to evict it: never both "pinned" and
     * "evicted". r1: 1 the reader holds a pin, 0 it gave up (saw the eviction); r2: 1 the evictor
     * may free the block, 0 it backed off.
     */
    @JCStressTest
    @Outcome(id = "1, 0", expect = ACCEPTABLE, desc = "reader pinned first; evictor saw the pin and backed off")
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "evictor first; reader saw EVICTING and gave up")
    @Outcome(id = "0, 0", expect = ACCEPTABLE_INTERESTING, desc = "both saw each other: reader gave up, evictor backed off")
    @Outcome(id = "1, 1", expect = FORBIDDEN, desc = "a pinned block was evicted")
    @State
    public static class PinAgainstEviction {
        final MemorySegment region = region();
        final PinTable pins = new PinTable(region, PIN_BASE, SLOTS, PINS);

        public PinAgainstEviction() {
            IndexRegion.set(region, STATE_AT, PUBLISHED);
        }

        @Actor
        public void reader(II_Result r) {
            long w = IndexRegion.getAcquire(region, STATE_AT);
            if (IndexRegion.state(w) != IndexRegion.PUBLISHED) {
                r.r1 = 0;
                return;
            }
            long record = pins.pin(STATE_AT, w, ENTRY, 0, 5);
            r.r1 = record >= 0 ? 1 : 0;
        }

        @Actor
        public void evictor(II_Result r) {
            r.r2 = pins.beginEviction(STATE_AT, PUBLISHED, EVICTING, ENTRY, 0, 1, (slot, incarnation) -> true) ? 1 : 0;
        }
    }

    /**
     * Entry publication: the writer stores the block's fields, then CASes WRITING -&gt; PUBLISHED;
     * a reader that acquire-loads PUBLISHED sees the fields. r1: the state seen (2 published),
     * r2: the length seen.
     */
    @JCStressTest
    @Outcome(id = "1, .*", expect = ACCEPTABLE, desc = "not yet published")
    @Outcome(id = "2, 4242", expect = ACCEPTABLE_INTERESTING, desc = "published with its fields")
    @Outcome(id = "2, .*", expect = FORBIDDEN, desc = "published state seen before the fields")
    @State
    public static class EntryPublication {
        final MemorySegment region = MemorySegment.ofArray(new long[16]);
        static final long WRITING = IndexRegion.word(IndexRegion.WRITING, IndexRegion.ownerBitsOf(0, 1), 9);

        public EntryPublication() {
            IndexRegion.set(region, IndexRegion.E_STATE, WRITING);
        }

        @Actor
        public void writer() {
            IndexRegion.set(region, IndexRegion.E_LENGTH, 4242L);
            IndexRegion.set(region, IndexRegion.E_CHECK, 77L);
            IndexRegion.cas(region, IndexRegion.E_STATE, WRITING,
                    IndexRegion.word(IndexRegion.PUBLISHED, IndexRegion.ownerBitsOf(0, 1), 9));
        }

        @Actor
        public void reader(JJ_Result r) {
            long w = IndexRegion.getAcquire(region, IndexRegion.E_STATE);
            r.r1 = IndexRegion.state(w);
            r.r2 = IndexRegion.get(region, IndexRegion.E_LENGTH);
        }
    }
}
