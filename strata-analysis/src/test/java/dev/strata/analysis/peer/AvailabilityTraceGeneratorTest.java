package dev.strata.analysis.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.strata.cache.peer.trace.AvailabilitySample;
import dev.strata.cache.peer.trace.AvailabilityTrace;
import dev.strata.memory.Sizes;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class AvailabilityTraceGeneratorTest {

    /** 16 peers for two hours at a 2 s step, with a 20-minute diurnal period so whole cycles are covered. */
    private static AvailabilityTraceGenerator.Parameters compressed() {
        return AvailabilityTraceGenerator.Parameters.defaults().withPeers(16).withTime(7200, 2).withDiurnal(0.3, 1200);
    }

    @Test
    void sameSeedSameTraceOtherSeedAnotherTrace() {
        var p = AvailabilityTraceGenerator.Parameters.defaults().withPeers(5).withTime(600, 1.5).withSeed(42);
        List<AvailabilitySample> a = new ArrayList<>();
        new AvailabilityTraceGenerator(p).forEachRemaining(a::add);
        List<AvailabilitySample> b = new ArrayList<>();
        new AvailabilityTraceGenerator(p).forEachRemaining(b::add);
        assertThat(a).isEqualTo(b);
        List<AvailabilitySample> c = new ArrayList<>();
        new AvailabilityTraceGenerator(p.withSeed(43)).forEachRemaining(c::add);
        assertThat(c).hasSameSizeAs(a).isNotEqualTo(a);
    }

    @Test
    void samplesCoverEveryPeerAtEveryStepInOrderAndStayWithinTheDevice() {
        var p = AvailabilityTraceGenerator.Parameters.defaults().withPeers(7).withTime(100.5, 3).withCapacity(24 * Sizes.GiB + 12345);
        var g = new AvailabilityTraceGenerator(p);
        AvailabilityTrace trace = g.toTrace();
        assertThat(p.sampleTimes()).isEqualTo(35); // 0, 3, ..., 99, then 100.5
        assertThat(trace.samples()).hasSize(7 * 35);
        assertThat(g.samples()).isEqualTo(7 * 35);
        assertThat(trace.duration()).isEqualTo(100.5);
        assertThat(trace.peers()).containsExactly("gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6");
        for (AvailabilitySample s : trace.samples()) {
            assertThat(s.free()).isBetween(0L, p.capacity());
            assertThat(s.free() % Sizes.MiB).isZero();
        }
        assertThat(g.hasNext()).isFalse();
        assertThatThrownBy(g::next).hasMessageContaining("past its last sample");
    }

    @Test
    void meanUtilisationMatchesTheParameter() {
        for (double mean : new double[] {0.2, 0.43, 0.7}) {
            for (long seed : new long[] {1, 2}) {
                var p = compressed().withUtilisation(mean, 1.6).withReclaims(mean > 0.5 ? 1 : 2, 0.3, 120).withSeed(seed);
                var g = new AvailabilityTraceGenerator(p);
                assertThat(mean(g.baseUtilisations())).isCloseTo(p.baseUtilisation(), within(1e-9));
                AvailabilityTraceStats s = AvailabilityTraceStats.of(g.toTrace(), p.capacity(), 0.1);
                assertThat(s.meanUtilisation()).as("mean %s seed %s", mean, seed).isCloseTo(mean, within(0.02));
            }
        }
    }

    @Test
    void theDefaultsGiveTheCitedMeanOverTheirDay() {
        var p = AvailabilityTraceGenerator.Parameters.defaults();
        var g = new AvailabilityTraceGenerator(p);
        AvailabilityTraceStats s = AvailabilityTraceStats.of(g.toTrace(), p.capacity(), 0.1);
        assertThat(s.duration()).isEqualTo(86_400);
        assertThat(s.meanUtilisation()).isCloseTo(0.43, within(0.02));
        assertThat(s.reclaims()).isPositive();
    }

    @Test
    void reclaimsAppearAsSuddenFallsAtAboutTheConfiguredRate() {
        var p = compressed().withReclaims(6, 0.5, 200).withSeed(9);
        var g = new AvailabilityTraceGenerator(p);
        AvailabilityTraceStats s = AvailabilityTraceStats.of(g.toTrace(), p.capacity(), 0.1);
        double expected = p.peers() * p.duration() / 3600 * p.reclaimsPerPeerHour(); // 192 arrivals
        // landings are Poisson: within 4 standard deviations, less the few that leave between samples or find no room
        assertThat((double) g.reclaims()).isBetween(expected * 0.6, expected + 4 * Math.sqrt(expected));
        // each seen landing takes at least a quarter of the device in one step; the falls seen are those landings
        assertThat(s.reclaims()).isGreaterThan(0).isLessThanOrEqualTo((int) g.reclaims());
        assertThat((double) s.reclaims()).isGreaterThanOrEqualTo(0.7 * g.reclaims());
        assertThat(s.peers().stream().mapToLong(AvailabilityTraceStats.PeerStats::largestDrop).max().orElseThrow())
                .isGreaterThan(p.capacity() / 4);
    }

    @Test
    void withoutReclaimsNoSampleStepFallsByATenthOfTheDevice() {
        var p = compressed().withReclaims(0, 0.5, 200);
        var g = new AvailabilityTraceGenerator(p);
        AvailabilityTraceStats s = AvailabilityTraceStats.of(g.toTrace(), p.capacity(), 0.1);
        assertThat(g.reclaims()).isZero();
        assertThat(s.reclaims()).isZero();
        assertThat(s.meanUtilisation()).isCloseTo(p.meanUtilisation(), within(0.02));
    }

    @Test
    void theDiurnalSwingMovesTheClusterMeanByTheAmplitude() {
        var p = AvailabilityTraceGenerator.Parameters.defaults().withPeers(32).withTime(3600, 10).withDiurnal(0.4, 3600)
                .withReclaims(0, 0.5, 200).withJitter(0);
        AvailabilityTrace trace = new AvailabilityTraceGenerator(p).toTrace();
        double lo = Double.MAX_VALUE;
        double hi = 0;
        for (double t = 0; t <= 3600; t += 10) {
            double used = 0;
            for (String peer : trace.peers()) {
                used += p.capacity() - trace.freeAt(peer, t);
            }
            double u = used / trace.peers().size() / p.capacity();
            lo = Math.min(lo, u);
            hi = Math.max(hi, u);
        }
        // base × (1 ± 0.4): peak minus trough is 0.8 × base; MiB rounding moves it by a hair
        assertThat(hi - lo).isCloseTo(0.8 * p.baseUtilisation(), within(0.01));
    }

    @Test
    void peerBasesFollowTheAlibabaShapeAtItsMean() {
        // Harvest's Figure 2 (gpu-v2020): ~68% of machines use <= 20% of GPU memory, ~87% <= 50%; the spread's
        // default concentration came from fitting a Beta to those two points, whose mean is 0.184
        var p = AvailabilityTraceGenerator.Parameters.defaults().withPeers(4000).withUtilisation(0.184, 1.6)
                .withReclaims(0, 0.5, 200).withDiurnal(0, 86_400).withTime(1, 1);
        double[] b = new AvailabilityTraceGenerator(p).baseUtilisations();
        assertThat(fraction(b, 0.2)).isCloseTo(0.68, within(0.05));
        assertThat(fraction(b, 0.5)).isCloseTo(0.87, within(0.04));
        for (double x : b) {
            assertThat(x).isBetween(AvailabilityTraceGenerator.Parameters.BASE_FLOOR, AvailabilityTraceGenerator.Parameters.BASE_CEILING);
        }
    }

    @Test
    void normaliseHitsTheTargetAndKeepsBoundsAndOrder() {
        SplittableRandom r = new SplittableRandom(3);
        for (int trial = 0; trial < 200; trial++) {
            double[] v = new double[1 + r.nextInt(50)];
            for (int i = 0; i < v.length; i++) {
                v[i] = r.nextDouble();
            }
            double target = 0.05 + r.nextDouble() * 0.85;
            double[] before = v.clone();
            AvailabilityTraceGenerator.normalise(v, target, 0.02, 0.95);
            assertThat(mean(v)).isCloseTo(target, within(1e-9));
            for (int i = 0; i < v.length; i++) {
                assertThat(v[i]).isBetween(0.02, 0.95);
                for (int j = 0; j < v.length; j++) {
                    if (before[i] < before[j]) {
                        assertThat(v[i]).isLessThanOrEqualTo(v[j]);
                    }
                }
            }
        }
    }

    @Test
    void parametersThatCannotBeMetAreRefusedWithTheirValues() {
        var d = AvailabilityTraceGenerator.Parameters.defaults();
        assertThatThrownBy(() -> d.withReclaims(20, 0.8, 600)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("mean utilisation 0.43 minus the reclaim load 2.6667").hasMessageContaining("lower the reclaim");
        assertThatThrownBy(() -> d.withUtilisation(1.2, 1.6)).hasMessage("mean utilisation must be in (0, 1), got 1.2");
        assertThatThrownBy(() -> d.withTime(10, 20)).hasMessageContaining("step must be in (0, duration = 10.0] seconds, got 20.0");
        assertThatThrownBy(() -> d.withPeers(0)).hasMessage("peers must be in [1, 65536], got 0");
        assertThatThrownBy(() -> d.withDiurnal(1.0, 10)).hasMessageContaining("diurnal amplitude must be in [0, 1), got 1.0");
        assertThatThrownBy(() -> d.withJitter(0.5)).hasMessageContaining("jitter must be in [0, 0.1]");
    }

    private static double fraction(double[] v, double atMost) {
        int n = 0;
        for (double x : v) {
            if (x <= atMost) {
                n++;
            }
        }
        return (double) n / v.length;
    }

    private static double mean(double[] v) {
        double s = 0;
        for (double x : v) {
            s += x;
        }
        return s / v.length;
    }
}
