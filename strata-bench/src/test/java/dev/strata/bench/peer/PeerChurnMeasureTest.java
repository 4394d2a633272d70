package dev.strata.bench.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.analysis.peer.AvailabilityTraceGenerator;
import dev.strata.analysis.peer.AvailabilityTraceStats;
import dev.strata.analysis.routing.RoutingWorkload;
import dev.strata.analysis.routing.SyntheticKvBlockStream;
import dev.strata.bench.Figure;
import dev.strata.cache.peer.trace.AvailabilityTrace;
import dev.strata.memory.Sizes;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PeerChurnMeasureTest {

    /** Two 8 MiB peers for a minute of trace with frequent reclaims; small KV and expert workloads. */
    private static PeerChurnMeasure.Setup tiny() {
        long cap = 8 * Sizes.MiB;
        var trace = AvailabilityTraceGenerator.Parameters.defaults().withPeers(2).withCapacity(cap).withTime(60, 1)
                .withDiurnal(0.3, 60).withReclaims(120, 0.5, 10).withSeed(3);
        return new PeerChurnMeasure.Setup(2, cap, Sizes.MiB, trace,
                64 * Sizes.KiB + 192, 12, 32 * Sizes.MiB, new SyntheticKvBlockStream(12, 6, 3, 2, 8, 2, 1, 5),
                96 * Sizes.KiB + 64, 16, 16 * Sizes.MiB,
                RoutingWorkload.defaults().withShape(4, 24, 4).withLength(1, 1, 8, 48, 8).withSeed(7));
    }

    /** A setup's trace, its statistics and both workloads' references, as the measure derives them. */
    private record Workloads(PeerChurnMeasure.Setup setup, AvailabilityTrace trace, AvailabilityTraceStats stats, long[] kv,
                             List<int[]> experts) {
        static Workloads of(PeerChurnMeasure.Setup s) {
            AvailabilityTrace trace = new AvailabilityTraceGenerator(s.trace()).toTrace();
            return new Workloads(s, trace, AvailabilityTraceStats.of(trace, s.peerCapacity(), 0.1),
                    PeerChurnMeasure.kvReferences(s.kvStream()),
                    PeerChurnMeasure.expertCalls(s.routing(), s.expertDeviceSlots() / s.routing().layers()));
        }
    }

    private static void assertAccounted(PeerChurnMeasure.Run run, int references) {
        FetchTally t = run.tally();
        assertThat(t.references()).isEqualTo(references);
        assertThat(t.deviceHits() + t.cold() + t.fetches()).isEqualTo(references);
        assertThat(t.wrongBytes()).isZero();
        assertThat(t.refusedOffloads()).isZero();
    }

    @Test
    void everyReferenceIsAccountedForAndRevocationsOnlyCostUnderChurn() {
        Workloads w = Workloads.of(tiny());
        PeerChurnMeasure.Setup s = w.setup();
        AvailabilityTrace trace = w.trace();
        AvailabilityTraceStats stats = w.stats();
        long[] kv = w.kv();
        List<int[]> experts = w.experts();
        assertThat(kv).isNotEmpty();
        assertThat(experts).isNotEmpty();
        int routed = experts.stream().mapToInt(c -> c.length - 1).sum();

        PeerChurnMeasure.Run[] kvRuns = new PeerChurnMeasure.Run[3];
        PeerChurnMeasure.Run[] expertRuns = new PeerChurnMeasure.Run[3];
        for (PeerChurnMeasure.Peers p : PeerChurnMeasure.Peers.values()) {
            kvRuns[p.ordinal()] = PeerChurnMeasure.replayKv(s, trace, stats, p, kv);
            expertRuns[p.ordinal()] = PeerChurnMeasure.replayExperts(s, trace, stats, p, experts);
            assertAccounted(kvRuns[p.ordinal()], kv.length);
            assertAccounted(expertRuns[p.ordinal()], routed);
        }
        for (PeerChurnMeasure.Run[] runs : List.of(kvRuns, expertRuns)) {
            PeerChurnMeasure.Run churn = runs[0];
            PeerChurnMeasure.Run still = runs[1];
            PeerChurnMeasure.Run none = runs[2];
            // the device cache behaves the same whatever is below it
            assertThat(still.tally().deviceHits()).isEqualTo(churn.tally().deviceHits()).isEqualTo(none.tally().deviceHits());
            assertThat(still.tally().cold()).isEqualTo(churn.tally().cold()).isEqualTo(none.tally().cold());
            assertThat(churn.revocations()).isPositive();
            assertThat(still.revocations()).isZero();
            assertThat(still.tally().lost()).isZero();
            assertThat(none.tally().peerFetches()).isZero();
            assertThat(none.tally().lost()).isZero();
            assertThat(churn.tally().peerFetches()).isPositive();
            assertThat(churn.tally().peerBytes() + churn.tally().hostBytes())
                    .isLessThanOrEqualTo(none.tally().hostBytes());
        }
        // experts are never lost, whatever the peers do: a revoked copy sends the fetch to the master
        for (PeerChurnMeasure.Run r : expertRuns) {
            assertThat(r.tally().lost()).isZero();
            assertThat(r.tally().cold()).isZero();
        }
        assertThat(expertRuns[0].tally().offloads()).as("experts the rebalancer placed on peers").isPositive();
        assertThat(expertRuns[0].tally().fetches()).isEqualTo(expertRuns[2].tally().fetches());
    }

    /**
     * The churn figures are reported as exact values (no rounds, no spread), so the replay under
     * churn must give the same counts every time: each step's revocations reach the client and
     * end before the step's references, whatever the event threads' timing.
     */
    @Test
    void theReplayUnderChurnGivesTheSameCountsEveryTime() {
        Workloads w = Workloads.of(tiny());
        List<List<Long>> kvCounts = new ArrayList<>();
        List<List<Long>> expertCounts = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            kvCounts.add(counts(PeerChurnMeasure.replayKv(w.setup(), w.trace(), w.stats(), PeerChurnMeasure.Peers.CHURN, w.kv())));
            expertCounts.add(counts(PeerChurnMeasure.replayExperts(w.setup(), w.trace(), w.stats(), PeerChurnMeasure.Peers.CHURN,
                    w.experts())));
        }
        assertThat(kvCounts).as("KV: peer fetches, host fetches, lost, revocations, LOSSY drops").containsOnly(kvCounts.getFirst());
        assertThat(expertCounts).as("experts: peer fetches, host fetches, lost, revocations").containsOnly(expertCounts.getFirst());
        assertThat(kvCounts.getFirst().get(2)).as("blocks lost to revocations").isPositive();
    }

    private static List<Long> counts(PeerChurnMeasure.Run run) {
        FetchTally t = run.tally();
        return List.of(t.peerFetches(), t.hostFetches(), t.lost(), run.revocations(), run.lossyDropped());
    }

    @Test
    void figuresCarryBaselinesAndLabelTheModelledCosts() {
        List<String> notes = new ArrayList<>();
        List<Figure> figures = PeerChurnMeasure.figures(tiny(), new PrintStream(new ByteArrayOutputStream()), notes);
        assertThat(figures).extracting(Figure::name).containsExactly("kv_peer_fetch_share_churn", "kv_host_link_bytes_churn",
                "kv_fetch_time_modelled_churn", "kv_lost_share_churn", "expert_peer_fetch_share_churn",
                "expert_host_link_bytes_churn", "expert_fetch_time_modelled_churn");
        for (Figure f : figures) {
            assertThat(f.value()).as(f.name()).isFinite().isGreaterThanOrEqualTo(0);
            assertThat(f.baselineValue()).as(f.name()).isFinite().isGreaterThanOrEqualTo(0);
            assertThat(f.baseline()).isNotBlank();
        }
        Figure modelled = figures.stream().filter(f -> f.name().equals("expert_fetch_time_modelled_churn")).findFirst().orElseThrow();
        assertThat(modelled.unit()).contains("modelled");
        assertThat(modelled.note()).startsWith("modelled, not measured");
        assertThat(notes).anyMatch(n -> n.contains("availability trace"));
    }
}
