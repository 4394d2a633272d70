package dev.strata.node.peer;

import static dev.strata.node.peer.LendingFileLayout.*;

/**
 * A lending file as of one scan: regions by state, the agent's demand and its counters. Regions
 * in a run count one each (a run of 3 LENT regions is 1 LENT head and 2 MEMBERs).
 *
 * <p>Immutable value; any thread.
 *
 * @param regions      regions in the file
 * @param regionSize   bytes per region
 * @param free         FREE regions (lendable now)
 * @param claiming     regions a borrower is claiming
 * @param lent         LENT heads
 * @param members      MEMBER regions (the rest of lent runs)
 * @param revoking     REVOKING heads
 * @param fenced       FENCED heads (waiting for an access of the fenced lending to end)
 * @param held         HELD regions (the agent's own)
 * @param demandBytes  the agent's demand at its last tick
 * @param revocations  revocations requested so far
 * @param acknowledged revocations acknowledged by their borrowers
 * @param fences       leases fenced at their deadline
 * @param reaped       leases of dead borrowers taken back
 */
public record LendingStats(long regions, long regionSize, long free, long claiming, long lent, long members, long revoking,
                           long fenced, long held, long demandBytes, long revocations, long acknowledged, long fences,
                           long reaped) {

    static LendingStats of(LendingTable table, long demandBytes) {
        long[] byState = new long[16];
        long n = table.regionCount();
        for (long r = 0; r < n; r++) {
            byState[state(table.stateWord(r))]++;
        }
        var f = table.file();
        return new LendingStats(n, table.geometry().regionSize(), byState[FREE], byState[CLAIMING], byState[LENT],
                byState[MEMBER], byState[REVOKING], byState[FENCED], byState[HELD], demandBytes,
                (long) LONG.getVolatile(f, REVOCATIONS_OFFSET), (long) LONG.getVolatile(f, ACKNOWLEDGED_OFFSET),
                (long) LONG.getVolatile(f, FENCES_OFFSET), (long) LONG.getVolatile(f, REAPED_OFFSET));
    }

    /** Regions not FREE and not HELD: lent, being claimed, revoked or fenced. */
    public long borrowed() {
        return regions - free - held;
    }

    @Override
    public String toString() {
        return "regions " + regions + " (free " + free + ", lent " + lent + " heads + " + members + " members, revoking "
                + revoking + ", fenced " + fenced + ", held " + held + ", claiming " + claiming + "), demand " + demandBytes
                + " B, revocations " + revocations + ", acknowledged " + acknowledged + ", fences " + fences + ", reaped "
                + reaped;
    }
}
