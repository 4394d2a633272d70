package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.strata.cache.split.MissCosts;
import dev.strata.cache.split.Split;
import dev.strata.cache.split.SplitProblem;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.assertj.core.data.Percentage;
import org.junit.jupiter.api.Test;

class MvWsaMeasureTest {

    @Test
    void quickRunGivesEveryFigureWithABaselineAndPrintsTheTable() {
        ByteArrayOutputStream table = new ByteArrayOutputStream();
        List<Figure> figures = MvWsaMeasure.figures(true, new PrintStream(table, true, StandardCharsets.UTF_8));
        assertThat(figures).extracting(Figure::name).containsExactlyInAnyOrder(
                "mvwsa_online_vs_oracle_expert_heavy", "mvwsa_cold_online_vs_oracle_expert_heavy", "mvwsa_offline_vs_oracle_expert_heavy",
                "mvwsa_online_vs_fifty_fifty_expert_heavy", "mvwsa_online_vs_kv_blind_expert_heavy",
                "mvwsa_online_vs_oracle_kv_heavy", "mvwsa_cold_online_vs_oracle_kv_heavy", "mvwsa_offline_vs_oracle_kv_heavy",
                "mvwsa_online_vs_fifty_fifty_kv_heavy", "mvwsa_online_vs_kv_blind_kv_heavy",
                "mvwsa_online_vs_oracle_shifting", "mvwsa_cold_online_vs_oracle_shifting", "mvwsa_offline_vs_oracle_shifting",
                "mvwsa_online_vs_fifty_fifty_shifting", "mvwsa_online_vs_kv_blind_shifting",
                "mvwsa_online_vs_oracle_qwen3_like", "mvwsa_cold_online_vs_oracle_qwen3_like", "mvwsa_offline_vs_oracle_qwen3_like",
                "mvwsa_online_vs_fifty_fifty_qwen3_like", "mvwsa_online_vs_kv_blind_qwen3_like");
        for (Figure f : figures) {
            assertThat(f.unit()).isEqualTo("s");
            assertThat(f.value()).isPositive();
            assertThat(f.baselineValue()).isPositive();
            assertThat(f.ratio()).isCloseTo(f.value() / f.baselineValue(), within(1e-12));
            assertThat(f.goal()).isIn("<= 1.05", "<= 1.0");
            assertThat(f.baseline()).isNotBlank();
        }
        for (Figure f : figures) {
            if (f.name().startsWith("mvwsa_online_vs_oracle_")) {
                // as deployed: from the configurator's split, chosen on a shorter trace of the same workload
                String workload = f.name().substring("mvwsa_online_vs_oracle_".length());
                Figure offline = figures.stream().filter(g -> g.name().equals("mvwsa_offline_vs_oracle_" + workload)).findFirst()
                        .orElseThrow();
                String offlineCap = offline.note().substring(offline.note().indexOf("cap ")).split(",")[0];
                assertThat(f.note()).as(f.name()).contains("started at the offline configurator's split (" + offlineCap + ")");
            }
            if (f.name().startsWith("mvwsa_cold_online_vs_oracle_")) {
                assertThat(f.note()).as(f.name()).contains("started at the 50-50 split (cap ");
            }
        }
        assertThat(table.toString(StandardCharsets.UTF_8)).contains("policy").contains("MV-WSA online").contains("50-50")
                .contains("Flux-prop").contains("oracle");
    }

    @Test
    void baselinesAreDeployableAndTheNoteKeepsTheRulesOwnSplit() {
        int clamped = 0;
        for (MvWsaMeasure.Workload w : MvWsaMeasure.workloads()) {
            MvWsaMeasure.Outcome o = MvWsaMeasure.measure(w, true, 0x5EED + w.name().hashCode());
            Split oracle = o.splits().get("oracle");
            for (String policy : List.of("50-50", "Flux-prop")) {
                Split deployable = o.splits().get(policy);
                Split proposed = o.proposed().get(policy);
                assertThat(deployable.admissible()).as("%s on %s", policy, w.name()).isTrue();
                assertThat(deployable.kvBlocks()).isGreaterThanOrEqualTo(o.floor());
                assertThat(deployable.predictedSeconds()).isGreaterThanOrEqualTo(oracle.predictedSeconds());
                String note = MvWsaMeasure.splitNote(o, policy);
                if (proposed.admissible()) {
                    assertThat(deployable).isEqualTo(proposed);
                    assertThat(note).doesNotContain("would not start");
                } else {
                    clamped++;
                    assertThat(deployable.expertCap()).isLessThan(proposed.expertCap());
                    assertThat(note).contains("would not start").contains("cap " + proposed.expertCap() + ", "
                            + proposed.kvBlocks() + " KV blocks").contains(String.format(Locale.ROOT, "%.1f s",
                            proposed.predictedSeconds()));
                }
            }
            assertThat(o.splits().get("Flux-prop, floor ignored")).isEqualTo(o.proposed().get("Flux-prop"));
        }
        assertThat(clamped).as("some workload's KV-blind split falls below the floor").isPositive();
    }

    @Test
    void theQuickQwen3LikeTraceHasTheMixOfTheFullOne() {
        // the offline configurator is given the quick trace: it must be the same workload, only shorter
        long seed = 0x5EED + "qwen3_like".hashCode();
        SplitWorkload full = MvWsaMeasure.qwen3Like(false, seed);
        SplitWorkload quick = MvWsaMeasure.qwen3Like(true, ~seed);
        assertThat(quick.bursts.size()).isLessThan(full.bursts.size());
        assertThat(kvReferencesPerExpertReference(quick)).isCloseTo(kvReferencesPerExpertReference(full),
                Percentage.withPercentage(5));
    }

    private static double kvReferencesPerExpertReference(SplitWorkload w) {
        long expert = 0;
        long kv = 0;
        for (SplitWorkload.Burst b : w.bursts) {
            for (int[][] step : b.experts()) {
                for (int[] layer : step) {
                    expert += layer.length;
                }
            }
            kv += b.kvBlocks().length;
        }
        return (double) kv / expert;
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
