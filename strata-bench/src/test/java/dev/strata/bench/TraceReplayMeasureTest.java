package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.analysis.kvsim.BeladyBound;
import dev.strata.analysis.kvsim.KvReplaySimulator;
import dev.strata.analysis.kvsim.PrefixTrace;
import dev.strata.analysis.kvsim.SyntheticPrefixTraceGenerator;
import dev.strata.cache.policy.PolicyKind;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

class TraceReplayMeasureTest {

    @Test
    void figuresArePolicyHitRatiosAgainstBeladyWithTheRatioToLruAndTheDefaultsGoal() {
        PrefixTrace t = PrefixTrace.of(SyntheticPrefixTraceGenerator.generate(SyntheticPrefixTraceGenerator.Knobs.agents(1500), 9));
        List<Figure> figures = TraceReplayMeasure.figures(t, "agents");
        long[] capacities = TraceReplayMeasure.capacities(t);
        assertThat(capacities[capacities.length - 1]).isEqualTo(t.blockCount());
        assertThat(capacities).startsWith(250, 500, 1_000).isSorted();
        List<String> names = new ArrayList<>();
        for (long c : capacities) {
            for (PolicyKind k : TraceReplayMeasure.POLICIES) {
                names.add("agents_hit_ratio_" + TraceReplayMeasure.capacityLabel(c) + "_" + k.name().toLowerCase(Locale.ROOT));
            }
        }
        assertThat(figures).extracting(Figure::name).containsExactlyElementsOf(names);
        assertThat(names).contains("agents_hit_ratio_5k_adaptive_reach", "agents_hit_ratio_250_lru");

        int policies = TraceReplayMeasure.POLICIES.size();
        int defaultAt = TraceReplayMeasure.POLICIES.indexOf(PolicyKind.KV_DEFAULT);
        for (int i = 0; i < figures.size(); i += policies) {
            long capacity = capacities[i / policies];
            double optimum = BeladyBound.hitRatio(t, capacity);
            Figure lru = figures.get(i);
            Figure def = figures.get(i + defaultAt);
            assertThat(lru.value()).isEqualTo(
                    KvReplaySimulator.replay(t, KvReplaySimulator.Config.single(capacity, PolicyKind.LRU, 1)).hitRatio());
            for (int k = 0; k < policies; k++) {
                Figure f = figures.get(i + k);
                assertThat(f.baselineValue()).isEqualTo(optimum);
                assertThat(f.ratio()).isLessThanOrEqualTo(1.0);
                assertThat(f.note()).startsWith(String.format(Locale.ROOT, "%.3fx LRU", f.value() / lru.value()));
            }
            assertThat(lru.goal()).isEqualTo(">= 0");
            boolean headline = Arrays.stream(TraceReplayMeasure.HEADLINE_CAPACITIES).anyMatch(c -> c == capacity);
            double over = headline ? TraceReplayMeasure.DEFAULT_GOAL_OVER_LRU : 1.0;
            assertThat(def.goal()).isEqualTo(">= " + over * lru.value() / optimum);
            assertThat(def.met()).isEqualTo(def.ratio() >= over * lru.value() / optimum);
        }
    }

    @Test
    void withoutATraceFileItReplaysAGeneratedTraceAndSaysSo() {
        List<String> notes = new ArrayList<>();
        List<Figure> figures = TraceReplayMeasure.figures((java.nio.file.Path) null, notes);
        assertThat(notes).singleElement().asString().contains("Mooncake trace not found");
        assertThat(figures).hasSizeGreaterThanOrEqualTo(TraceReplayMeasure.POLICIES.size() * 2)
                .allSatisfy(f -> assertThat(f.name()).startsWith("synthetic_hit_ratio_"));
        assertThat(figures.size() % TraceReplayMeasure.POLICIES.size()).isZero();
    }
}
