package dev.strata.analysis.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.strata.cache.routing.RoutingPhase;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceHeader;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class CoActivationPredictorTest {
    private static final RoutingTraceHeader H = new RoutingTraceHeader(3, 6, 1, "");

    private static RoutingStep token(int... perLayer) {
        return RoutingStep.of(H, RoutingPhase.DECODE, 1, perLayer);
    }

    @Test
    void scoresAreDistanceDecayedSumsOfConditionals() {
        CoActivationPredictor p = new CoActivationPredictor(H, 2, 0.5);
        // expert 0 at layer 0 was followed by 1 at layer 1 three times and by 2 once; by 4 at layer 2 twice, 5 twice
        p.observe(token(0, 1, 4));
        p.observe(token(0, 1, 4));
        p.observe(token(0, 1, 5));
        p.observe(token(0, 2, 5));
        p.observe(token(3, 2, 5));
        double[] s = new double[6];
        p.scores(token(0, 1, 4), 0, 1, s);
        assertThat(s[1]).isCloseTo(0.75, within(1e-12));
        assertThat(s[2]).isCloseTo(0.25, within(1e-12));
        assertThat(s[0] + s[3] + s[4] + s[5]).isZero();
        // target 2 from layer 1 (weight 1, expert 1: 4 twice, 5 once) and layer 0 (weight 0.5, expert 0: 4 twice, 5 twice)
        p.scores(token(0, 1, 4), 0, 2, s);
        assertThat(s[4]).isCloseTo(2.0 / 3 + 0.5 * 0.5, within(1e-12));
        assertThat(s[5]).isCloseTo(1.0 / 3 + 0.5 * 0.5, within(1e-12));
        int[] best = new int[2];
        p.predict(token(0, 1, 4), 0, 2, 2, best, s);
        assertThat(best).containsExactly(4, 5);
        p.predictByFrequency(2, 2, best);
        assertThat(best).containsExactly(5, 4); // 5 fired three times at layer 2, 4 twice
        assertThat(p.marginal(0, 0)).isEqualTo(4);
        p.halve();
        assertThat(p.marginal(0, 0)).isEqualTo(2);
        assertThat(p.tokens()).isEqualTo(5);
    }

    @Test
    void topNBreaksTiesToTheLowerIdAndHandlesAnEmptyTable() {
        int[] out = new int[3];
        CoActivationPredictor.topN(new double[] {1, 3, 3, 0, 7}, 5, 3, out);
        assertThat(out).containsExactly(4, 1, 2);
        CoActivationPredictor.topN(new double[5], 5, 3, out);
        assertThat(out).containsExactly(0, 1, 2);
        CoActivationPredictor.topN(new double[] {0.5, 0.25, 0.75, 1, 0}, 5, 5, out = new int[5]);
        assertThat(out).containsExactly(3, 2, 0, 1, 4);
    }

    @Test
    void supportCapCoversTheRequestedMass() {
        RoutingTraceHeader h = new RoutingTraceHeader(2, 50, 2, "");
        CoActivationPredictor p = new CoActivationPredictor(h, 1, 1);
        SplittableRandom r = new SplittableRandom(4);
        // layer 0 routes to 10 experts only, layer 1 to all 50 evenly
        for (int i = 0; i < 3000; i++) {
            int a = r.nextInt(10);
            int b = (a + 1 + r.nextInt(9)) % 10;
            int c = r.nextInt(50);
            int d = (c + 1 + r.nextInt(49)) % 50;
            p.observe(RoutingStep.of(h, RoutingPhase.DECODE, 1, new int[] {a, b, c, d}));
        }
        assertThat(p.supportCap(0, 0.99)).isEqualTo(10);
        assertThat(p.supportCap(1, 0.99)).isBetween(45, 50);
        assertThat(p.supportCap(1, 0.5)).isBetween(20, 30);
        assertThat(p.supportCaps(0.99)).hasSize(2);
        assertThat(new CoActivationPredictor(h, 1, 1).supportCap(0, 0.99)).isZero();
        assertThatThrownBy(() -> p.supportCap(0, 0)).hasMessageContaining("massFraction must be in (0, 1], got 0.0");
    }

    @Test
    void structuredRoutingIsPredictedBetterThanByFrequency() {
        // a hidden path picks each layer's experts; without the path the layers are independent
        RoutingTraceHeader h = new RoutingTraceHeader(6, 24, 2, "");
        SplittableRandom r = new SplittableRandom(12);
        List<RoutingRecord> structured = new ArrayList<>();
        List<RoutingRecord> independent = new ArrayList<>();
        for (int i = 0; i < 1500; i++) {
            int path = r.nextInt(6);
            int[] a = new int[12];
            int[] b = new int[12];
            for (int l = 0; l < 6; l++) {
                a[2 * l] = (path * 4 + l) % 24;
                a[2 * l + 1] = (path * 4 + l + 1 + r.nextInt(3)) % 24;
                int other = r.nextInt(6);
                b[2 * l] = (other * 4 + l) % 24;
                b[2 * l + 1] = (other * 4 + l + 1 + r.nextInt(3)) % 24;
            }
            structured.add(RoutingStep.of(h, RoutingPhase.DECODE, 1, a));
            independent.add(RoutingStep.of(h, RoutingPhase.DECODE, 1, b));
        }
        PredictionQuality s = PredictionQuality.evaluate(h, structured, 2, 0.5, 50);
        PredictionQuality u = PredictionQuality.evaluate(h, independent, 2, 0.5, 50);
        assertThat(s.precision()).isGreaterThan(0.6).isGreaterThan(s.frequencyPrecision() + 0.3);
        assertThat(u.precision()).isLessThan(u.frequencyPrecision() + 0.05);
        assertThat(s.randomPrecision()).isEqualTo(2.0 / 24);
        assertThat(s.predictions()).isEqualTo(1450L * 5);
    }

    @Test
    void oversizedTablesAndBadSettingsAreRefused() {
        RoutingTraceHeader big = new RoutingTraceHeader(512, 65536, 8, "");
        assertThatThrownBy(() -> new CoActivationPredictor(big, 2, 0.5)).hasMessageContaining("lower maxDistance");
        assertThatThrownBy(() -> new CoActivationPredictor(H, 0, 0.5)).hasMessageContaining("maxDistance must be at least 1");
        assertThatThrownBy(() -> new CoActivationPredictor(H, 1, 1.5)).hasMessageContaining("distanceDecay must be in (0, 1]");
    }
}
