package dev.strata.analysis.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.curve.ReuseDistanceTracker;
import dev.strata.cache.routing.BurstStart;
import dev.strata.cache.routing.RequestStart;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RoutingTraceGeneratorTest {

    /** A small model and a short workload, so each knob's effect shows in well under a second. */
    static RoutingWorkload small() {
        return RoutingWorkload.defaults().withShape(8, 64, 4).withLength(3, 3, 16, 96, 32);
    }

    static List<RoutingRecord> generate(RoutingWorkload w) {
        List<RoutingRecord> out = new ArrayList<>();
        new RoutingTraceGenerator(w).forEachRemaining(out::add);
        return out;
    }

    static RoutingTraceStats.Report stats(RoutingWorkload w, boolean predict) {
        RoutingTraceStats s = new RoutingTraceStats(w.header(), predict);
        new RoutingTraceGenerator(w).forEachRemaining(s::accept);
        return s.report();
    }

    /** Miss ratio of per-layer LRU caches of {@code cap} slots, first sights included. */
    static double missRatio(RoutingWorkload w, int cap) {
        RoutingReuseDistances d = new RoutingReuseDistances(w.header());
        new RoutingTraceGenerator(w).forEachRemaining(d::accept);
        double refs = 0;
        for (int l = 0; l < w.layers(); l++) {
            refs += d.layerCurve(l).references();
        }
        return d.perLayerMisses(cap) / refs;
    }

    @Test
    void sameSeedSameTraceOtherSeedOtherTrace() {
        RoutingWorkload w = small().withDrift(RoutingWorkload.Drift.GRADUAL, 100, 0.3);
        List<RoutingRecord> a = generate(w);
        assertThat(generate(w)).isEqualTo(a);
        assertThat(generate(w.withSeed(2))).isNotEqualTo(a);
        assertThat(a.stream().filter(r -> r instanceof RoutingStep).count()).isEqualTo(w.totalSteps());
        assertThat(a.stream().filter(r -> r instanceof RequestStart).count()).isEqualTo(9);
        assertThat(a.getFirst()).isEqualTo(new RequestStart(0, 0));
        // a prefill burst and three decode bursts per request
        assertThat(a.stream().filter(r -> r instanceof BurstStart).count()).isEqualTo(9 * 4);
    }

    @Test
    void higherSkewMeansFewerMissesAtAFixedCap() {
        RoutingWorkload base = small().withBursts(0, 8).withPaths(4, 0, 8, 0.8);
        double flat = missRatio(base.withSkew(0.2, 0), 16);
        double skewed = missRatio(base.withSkew(1.4, 0), 16);
        assertThat(skewed).isLessThan(flat * 0.7);
        // the per-layer knob: with spread, the most skewed layer misses less than the least skewed
        RoutingWorkload spread = base.withSkew(1.0, 1.0);
        RoutingTraceGenerator g = new RoutingTraceGenerator(spread);
        int most = 0;
        int least = 0;
        for (int l = 0; l < spread.layers(); l++) {
            most = g.layerExponent(l) > g.layerExponent(most) ? l : most;
            least = g.layerExponent(l) < g.layerExponent(least) ? l : least;
        }
        assertThat(g.layerExponent(most)).isGreaterThan(3 * g.layerExponent(least) + 0.5);
        RoutingReuseDistances d = new RoutingReuseDistances(spread.header());
        g.forEachRemaining(d::accept);
        assertThat(d.layerCurve(most).misses(16)).isLessThan(d.layerCurve(least).misses(16) * 0.7);
    }

    @Test
    void burstLocalityShrinksTheBurstUnion() {
        RoutingWorkload base = small().withSkew(0.6, 0).withPaths(4, 0, 8, 0.8);
        RoutingTraceStats.Report none = stats(base.withBursts(0, 8), false);
        RoutingTraceStats.Report local = stats(base.withBursts(0.9, 8), false);
        assertThat(local.burstUnion()).isLessThan(none.burstUnion() * 0.6);
        // and reuse within bursts makes a small cache hit more
        assertThat(missRatio(base.withBursts(0.9, 8), 8)).isLessThan(missRatio(base.withBursts(0, 8), 8));
    }

    @Test
    void driftMovesThePopularSet() {
        RoutingWorkload base = small().withSkew(1.2, 0).withBursts(0, 8).withPaths(4, 0, 8, 0.8);
        double still = missRatio(base, 24);
        double abrupt = missRatio(base.withDrift(RoutingWorkload.Drift.ABRUPT, 10, 0), 24);
        double gradual = missRatio(base.withDrift(RoutingWorkload.Drift.GRADUAL, 1, 1.0), 24);
        assertThat(abrupt).isGreaterThan(still * 1.3);
        assertThat(gradual).isGreaterThan(still * 1.3);
        // a session's footprint grows when the popular set moves
        assertThat(stats(base.withDrift(RoutingWorkload.Drift.ABRUPT, 10, 0), false).footprint())
                .isGreaterThan(stats(base, false).footprint());
    }

    @Test
    void coActivationStructureIsPredictableAndItsAbsenceIsNot() {
        RoutingWorkload base = small().withLength(4, 4, 0, 160, 32).withSkew(0.4, 0).withBursts(0.2, 8);
        RoutingWorkload structured = base.withPaths(8, 0.8, 6, 0.9);
        RoutingWorkload unstructured = base.withPaths(8, 0.0, 6, 0.9);
        List<RoutingRecord> s = generate(structured);
        List<RoutingRecord> u = generate(unstructured);
        PredictionQuality ps = PredictionQuality.evaluate(structured.header(), s, 2, 0.5, 64);
        PredictionQuality pu = PredictionQuality.evaluate(unstructured.header(), u, 2, 0.5, 64);
        assertThat(ps.precision()).isGreaterThan(ps.frequencyPrecision() + 0.15);
        assertThat(pu.precision()).isLessThan(pu.frequencyPrecision() + 0.03);
        assertThat(ps.precision()).isGreaterThan(pu.precision() + 0.2);
    }

    @Test
    void supportBoundsTheSessionFootprintAndTheSupportEstimate() {
        RoutingWorkload base = small().withSkew(0.5, 0).withBursts(0.3, 8).withPaths(4, 0.3, 6, 0.8);
        RoutingTraceStats.Report wide = stats(base.withSupport(1.0), false);
        RoutingTraceStats.Report narrow = stats(base.withSupport(0.4), false);
        assertThat(narrow.footprint()).isLessThanOrEqualTo(Math.ceil(0.4 * 64) / 64).isLessThan(wide.footprint() * 0.6);
        assertThat(narrow.support99()).isLessThanOrEqualTo((int) Math.ceil(0.4 * 64));
        assertThat(wide.support99()).isGreaterThan(narrow.support99());
        // right-sized caps keep the cache near-lossless on reuse
        assertThat(narrow.supportWarmHit()).isGreaterThan(0.9);
        assertThat(wide.supportWarmHit()).isGreaterThan(0.9);
    }

    @Test
    void badKnobsAreNamed() {
        RoutingWorkload d = RoutingWorkload.defaults();
        assertThatThrownBy(() -> d.withBursts(1.5, 8)).hasMessageContaining("burst-locality must be in [0.0, 1.0], got 1.5");
        assertThatThrownBy(() -> d.withBursts(0.5, 3)).hasMessageContaining("burst-set must be in top-k..128 (8..128), got 3");
        assertThatThrownBy(() -> d.withShape(4, 8, 9)).hasMessageContaining("top-k must be in 1..experts (8), got 9");
        assertThatThrownBy(() -> d.withLength(1, 1, 0, 0, 4)).hasMessageContaining("both are 0");
    }

    @Test
    void syntheticKvStreamReusesContextsAcrossTurns() {
        SyntheticKvBlockStream kv = new SyntheticKvBlockStream(5, 2, 3, 4, 6, 2, 1, 9);
        List<Long> refs = new ArrayList<>();
        kv.forEach(refs::add);
        List<Long> again = new ArrayList<>();
        kv.forEach(again::add);
        assertThat(again).isEqualTo(refs);
        // per session: turn 1 reads 4 + 6 and writes 1, turn 2 reads 4 + 9 and writes 1, turn 3 reads 4 + 12 and writes 1
        assertThat(refs).hasSize(5 * (11 + 14 + 17));
        assertThat(refs.stream().distinct().count()).isEqualTo(4 + 5 * 13);
        dev.strata.cache.curve.ReuseDistanceTracker t = new dev.strata.cache.curve.ReuseDistanceTracker();
        refs.forEach(t::access);
        // with room for two sessions' contexts, only first sights miss
        assertThat(t.missCurve().warmMisses(4 + 2 * 13)).isZero();
        assertThat(t.missCurve().warmMisses(8)).isPositive();
    }
}
