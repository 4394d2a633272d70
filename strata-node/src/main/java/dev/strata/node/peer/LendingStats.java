package dev.strata.node.peer;

import static dev.strata.node.peer.LendingFileLayout.*;

import dev.strata.memory.metrics.PrometheusText;

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

    /**
     * Writes the stats of the lending file of peer {@code peer} into {@code out}:
     * {@code strata_peer_regions{peer,state}}, {@code strata_peer_region_bytes},
     * {@code strata_peer_demand_bytes} and the counters {@code strata_peer_revocations_total},
     * {@code strata_peer_acknowledged_total}, {@code strata_peer_fences_total},
     * {@code strata_peer_reaped_total}.
     */
    public void writeTo(PrometheusText out, String peer) {
        out.family("strata_peer_regions", PrometheusText.Type.GAUGE, "Regions of the peer's lending file by state");
        long[] counts = {free, claiming, lent, members, revoking, fenced, held};
        String[] states = {"free", "claiming", "lent", "member", "revoking", "fenced", "held"};
        for (int i = 0; i < states.length; i++) {
            out.sample("strata_peer_regions", counts[i], "peer", peer, "state", states[i]);
        }
        out.family("strata_peer_region_bytes", PrometheusText.Type.GAUGE, "Bytes per region")
                .sample("strata_peer_region_bytes", regionSize, "peer", peer);
        out.family("strata_peer_demand_bytes", PrometheusText.Type.GAUGE, "The agent's own demand at its last tick")
                .sample("strata_peer_demand_bytes", demandBytes, "peer", peer);
        out.family("strata_peer_revocations_total", PrometheusText.Type.COUNTER, "Revocations the agent requested")
                .sample("strata_peer_revocations_total", revocations, "peer", peer);
        out.family("strata_peer_acknowledged_total", PrometheusText.Type.COUNTER, "Revocations acknowledged by borrowers in time")
                .sample("strata_peer_acknowledged_total", acknowledged, "peer", peer);
        out.family("strata_peer_fences_total", PrometheusText.Type.COUNTER, "Leases fenced at their deadline")
                .sample("strata_peer_fences_total", fences, "peer", peer);
        out.family("strata_peer_reaped_total", PrometheusText.Type.COUNTER, "Leases of dead borrowers taken back")
                .sample("strata_peer_reaped_total", reaped, "peer", peer);
    }

    /** The stats alone in the Prometheus text format. */
    public String toPrometheus(String peer) {
        PrometheusText out = new PrometheusText();
        writeTo(out, peer);
        return out.toString();
    }

    @Override
    public String toString() {
        return "regions " + regions + " (free " + free + ", lent " + lent + " heads + " + members + " members, revoking "
                + revoking + ", fenced " + fenced + ", held " + held + ", claiming " + claiming + "), demand " + demandBytes
                + " B, revocations " + revocations + ", acknowledged " + acknowledged + ", fences " + fences + ", reaped "
                + reaped;
    }
}
