package dev.strata.analysis.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.peer.trace.AvailabilitySample;
import dev.strata.cache.peer.trace.AvailabilityTrace;
import java.util.List;
import org.junit.jupiter.api.Test;

class AvailabilityTraceStatsTest {
    @Test
    void statsWeighValuesByHowLongTheyHeldAndCountSuddenFalls() {
        long cap = 1000;
        AvailabilityTrace trace = AvailabilityTrace.of(List.of(
                new AvailabilitySample(0, "a", 800),
                new AvailabilitySample(0, "b", 500),
                new AvailabilitySample(10, "a", 790), // a fall of 10: not a reclaim at 10%
                new AvailabilitySample(20, "a", 290), // a fall of 500: a reclaim
                new AvailabilitySample(25, "b", 400), // a fall of 100: a reclaim at exactly 10%
                new AvailabilitySample(30, "a", 800),
                new AvailabilitySample(40, "b", 400)));
        AvailabilityTraceStats s = AvailabilityTraceStats.of(trace, cap, 0.1);
        assertThat(s.duration()).isEqualTo(40);
        assertThat(s.samples()).isEqualTo(7);
        assertThat(s.reclaimThreshold()).isEqualTo(100);
        AvailabilityTraceStats.PeerStats a = s.peers().get(0);
        assertThat(a.meanFree()).isEqualTo((800 * 10 + 790 * 10 + 290 * 10 + 800 * 10) / 40.0);
        assertThat(a.minFree()).isEqualTo(290);
        assertThat(a.maxFree()).isEqualTo(800);
        assertThat(a.reclaims()).isEqualTo(1);
        assertThat(a.reclaimedBytes()).isEqualTo(500);
        assertThat(a.largestDrop()).isEqualTo(500);
        AvailabilityTraceStats.PeerStats b = s.peers().get(1);
        assertThat(b.meanFree()).isEqualTo((500 * 25 + 400 * 15) / 40.0);
        assertThat(b.reclaims()).isEqualTo(1);
        assertThat(s.reclaims()).isEqualTo(2);
        assertThat(s.reclaimsPerPeerHour()).isEqualTo(2 / (2 * 40 / 3600.0));
        assertThat(s.meanUtilisation()).isEqualTo(1 - (a.meanFree() + b.meanFree()) / 2 / cap);
        assertThat(s.report(8)).contains("2 peers, 7 samples, 40.0 s").contains("mean utilisation").contains("reclaims");

        AvailabilityTraceStats unknownCapacity = AvailabilityTraceStats.of(trace, 0, 0.5);
        assertThat(unknownCapacity.reclaimThreshold()).isEqualTo(400); // half the largest free value seen
        assertThat(unknownCapacity.reclaims()).isEqualTo(1);
        assertThat(unknownCapacity.meanUtilisation()).isNaN();
        assertThatThrownBy(() -> AvailabilityTraceStats.of(trace, cap, 0)).hasMessageContaining("reclaim fraction must be in (0, 1], got 0.0");
    }
}
