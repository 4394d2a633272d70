package dev.strata.node.peer;

import static dev.strata.node.peer.LendingFileLayout.*;
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
 * JCStress tests of the lease guard ({@link LendingTable#enter} against the agent's revoke, fence
 * and reuse), on the real code over a small heap-backed table (the code is the same for the
 * lending file's mapping).
 *
 * <p>Run in the regular suite by {@code LendingTableStressTest} in JCStress's quick mode.
 */
public final class LendingTableStress {
    static final long PID = 4242;
    static final long EPOCH = 7;
    static final long HEAD = 1;
    static final Geometry GEOMETRY = new Geometry(2, 64);
    static final long LENT_WORD = word(LENT, PID, EPOCH);

    private LendingTableStress() {
    }

    /** A table of two regions whose region 1 is LENT to {@link #PID} at {@link #EPOCH}, its gate open. */
    static LendingTable lentTable() {
        MemorySegment file = MemorySegment.ofArray(new long[(int) (GEOMETRY.totalSize() / 8)]);
        LendingTable table = new LendingTable(file, GEOMETRY);
        long rec = GEOMETRY.record(HEAD);
        LONG.set(file, rec + R_RUN_LENGTH, 1L);
        LONG.set(file, rec + R_HEAD, HEAD);
        LONG.set(file, rec + R_ACCESS, access(EPOCH, 0));
        LONG.setRelease(file, rec + R_STATE, LENT_WORD);
        return table;
    }

    /**
     * Enter against revoke: the agent publishes REVOKING, then the borrower's drain reads the
     * in-flight count. Never an access that entered and a drain that saw none. r1: 1 entered (the
     * access stays open), 0 refused; r2: the count the drain saw.
     */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "entered first; the drain waits for it")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "revocation first; the enter was refused")
    @Outcome(id = "0, 1", expect = ACCEPTABLE_INTERESTING, desc = "the drain saw a refused enter's passing increment")
    @Outcome(id = "1, 0", expect = FORBIDDEN, desc = "an access entered after the drain saw none: it would touch reclaimed memory")
    @State
    public static class EnterAgainstRevoke {
        final LendingTable table = lentTable();

        @Actor
        public void borrower(II_Result r) {
            r.r1 = table.enter(HEAD, EPOCH, LENT_WORD) ? 1 : 0;
        }

        @Actor
        public void agent(II_Result r) {
            table.revoke(HEAD, LENT_WORD, 1000, 1);
            r.r2 = (int) table.inFlight(HEAD, EPOCH);
        }
    }

    /**
     * Enter against fence and reuse: the agent fences (epoch + 1) and tries to shut the gate; if it
     * does, it reuses the memory. Never both an open access and a reuse. r1: 1 entered (stays
     * open); r2: 1 the gate was shut (memory reused).
     */
    @JCStressTest
    @Outcome(id = "1, 0", expect = ACCEPTABLE, desc = "entered first; the gate stays open, no reuse")
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "fenced first; enter refused, memory reused")
    @Outcome(id = "0, 0", expect = ACCEPTABLE_INTERESTING, desc = "a refused enter's passing increment kept the gate open")
    @Outcome(id = "1, 1", expect = FORBIDDEN, desc = "memory reused under an open access")
    @State
    public static class EnterAgainstFence {
        final LendingTable table = lentTable();

        @Actor
        public void borrower(II_Result r) {
            r.r1 = table.enter(HEAD, EPOCH, LENT_WORD) ? 1 : 0;
        }

        @Actor
        public void agent(II_Result r) {
            table.fence(HEAD, LENT_WORD);
            r.r2 = table.finishFence(HEAD, table.stateWord(HEAD), false) ? 1 : 0;
        }
    }

    /**
     * Enter-exit against fence and reuse: the borrower writes, exits; the agent reuses (stamps)
     * only after shutting the gate. A successful access reads its own write, never the agent's
     * stamp. r1: what the access read back (-1 refused); r2: 1 the agent reused.
     */
    @JCStressTest
    @Outcome(id = "11, 0", expect = ACCEPTABLE, desc = "access first, gate still open when the agent looked")
    @Outcome(id = "11, 1", expect = ACCEPTABLE, desc = "access done, then reuse")
    @Outcome(id = "-1, 1", expect = ACCEPTABLE, desc = "fence first: refused, memory reused")
    @Outcome(id = "-1, 0", expect = ACCEPTABLE_INTERESTING, desc = "refused; its passing increment kept the gate open")
    @Outcome(id = "99, .*", expect = FORBIDDEN, desc = "an access saw the agent's reuse")
    @State
    public static class AccessAgainstReuse {
        final LendingTable table = lentTable();
        final long data = GEOMETRY.data(HEAD);

        @Actor
        public void borrower(JJ_Result r) {
            if (table.enter(HEAD, EPOCH, LENT_WORD)) {
                LONG.setOpaque(table.file(), data, 11L);
                r.r1 = (long) LONG.getOpaque(table.file(), data);
                table.exit(HEAD, EPOCH);
            } else {
                r.r1 = -1;
            }
        }

        @Actor
        public void agent(JJ_Result r) {
            table.fence(HEAD, LENT_WORD);
            if (table.finishFence(HEAD, table.stateWord(HEAD), false)) {
                LONG.setOpaque(table.file(), data, 99L);
                r.r2 = 1;
            }
        }
    }
}
