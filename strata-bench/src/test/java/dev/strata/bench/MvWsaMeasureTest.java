package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.strata.cache.split.MissCosts;
import dev.strata.cache.split.SplitProblem;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class MvWsaMeasureTest {

    @Test
    void quickRunGivesEveryFigureWithABaselineAndPrintsTheTable() {
        ByteArrayOutputStream table = new ByteArrayOutputStream();
        List<Figure> figures = MvWsaMeasure.figures(true, new PrintStream(table, true, StandardCharsets.UTF_8));
        assertThat(figures).extracting(Figure::name).containsExactlyInAnyOrder(
                "mvwsa_online_vs_oracle_expert_heavy", "mvwsa_offline_vs_oracle_expert_heavy",
                "mvwsa_online_vs_fifty_fifty_expert_heavy", "mvwsa_online_vs_kv_blind_expert_heavy",
                "mvwsa_online_vs_oracle_kv_heavy", "mvwsa_offline_vs_oracle_kv_heavy",
                "mvwsa_online_vs_fifty_fifty_kv_heavy", "mvwsa_online_vs_kv_blind_kv_heavy",
                "mvwsa_online_vs_oracle_shifting", "mvwsa_offline_vs_oracle_shifting",
                "mvwsa_online_vs_fifty_fifty_shifting", "mvwsa_online_vs_kv_blind_shifting",
                "mvwsa_online_vs_oracle_qwen3_like", "mvwsa_offline_vs_oracle_qwen3_like",
                "mvwsa_online_vs_fifty_fifty_qwen3_like", "mvwsa_online_vs_kv_blind_qwen3_like");
        for (Figure f : figures) {
            assertThat(f.unit()).isEqualTo("s");
            assertThat(f.value()).isPositive();
            assertThat(f.baselineValue()).isPositive();
            assertThat(f.ratio()).isCloseTo(f.value() / f.baselineValue(), within(1e-12));
            assertThat(f.goal()).isIn("<= 1.05", "<= 1.0");
            assertThat(f.baseline()).isNotBlank();
        }
        assertThat(table.toString(StandardCharsets.UTF_8)).contains("policy").contains("MV-WSA online").contains("50-50")
                .contains("Flux-prop").contains("oracle");
    }

    @Test
    void staticSplitsSimulatedWithLruCachesCostWhatTheExactCurvesPredict() {
        SplitWorkload.Profile p = new SplitWorkload.Profile("t", 9, 0.85, 5, 11, 1, 17, 5);
        checkStaticSplits(SplitWorkload.generate(3, 24, 2, 60, 77, p));
        // a trace of the routing workload generator: prefill steps route a union of experts per layer
        var d = dev.strata.analysis.routing.RoutingWorkload.defaults();
        var small = new dev.strata.analysis.routing.RoutingWorkload(3, 20, 2, "t", 5, 2, 2, 6, 20, 5, d.skew(), d.skewSpread(),
                d.support(), d.burstLocality(), 4, d.drift(), d.driftPeriod(), d.driftRate(), 4, d.coupling(), 3, d.pathStickiness());
        var generator = new dev.strata.analysis.routing.RoutingTraceGenerator(small);
        checkStaticSplits(SplitWorkload.fromRouting(generator.header(), generator,
                new dev.strata.analysis.routing.SyntheticKvBlockStream(6, 2, 3, 2, 9, 2, 1, 8)));
    }

    private static void checkStaticSplits(SplitWorkload w) {
        MissCosts costs = MissCosts.given(1e-4, 3e-4);
        long slot = 3 * 4096 + 100;
        long block = 1000 + 7;
        long budget = 10 * slot + 45 * block;
        SplitSimulation sim = new SplitSimulation(w, budget, slot, block, costs, 17);
        SplitProblem exact = sim.exactProblem();
        for (int k = 2; k <= exact.highestCap(); k++) {
            assertThat(sim.simulatedStatic(k)).as("cap %d", k).isCloseTo(exact.predictedSeconds(k), within(1e-9));
        }
    }
}
