package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.analysis.kvsim.BeladyBound;
import dev.strata.analysis.kvsim.PrefixTrace;
import dev.strata.analysis.kvsim.SyntheticPrefixTraceGenerator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TraceReplayMeasureTest {

    @Test
    void figuresArePolicyHitRatiosAgainstBeladyWithTheGoalAboveLru() {
        PrefixTrace t = PrefixTrace.of(SyntheticPrefixTraceGenerator.generate(SyntheticPrefixTraceGenerator.Knobs.agents(1500), 9));
        List<Figure> figures = TraceReplayMeasure.figures(t, "agents");
        assertThat(figures).extracting(Figure::name).containsExactly(
                "agents_hit_ratio_1k_lru", "agents_hit_ratio_1k_priority_lru", "agents_hit_ratio_1k_tiny_lfu", "agents_hit_ratio_1k_prefix_aware",
                "agents_hit_ratio_5k_lru", "agents_hit_ratio_5k_priority_lru", "agents_hit_ratio_5k_tiny_lfu", "agents_hit_ratio_5k_prefix_aware",
                "agents_hit_ratio_20k_lru", "agents_hit_ratio_20k_priority_lru", "agents_hit_ratio_20k_tiny_lfu", "agents_hit_ratio_20k_prefix_aware");
        for (int i = 0; i < figures.size(); i += 4) {
            Figure lru = figures.get(i);
            Figure pa = figures.get(i + 3);
            assertThat(lru.baselineValue()).isEqualTo(pa.baselineValue());
            assertThat(pa.baselineValue()).isEqualTo(BeladyBound.hitRatio(t, TraceReplayMeasure.CAPACITIES[i / 4]));
            assertThat(pa.ratio()).isLessThanOrEqualTo(1.0);
            assertThat(lru.goal()).isEqualTo(">= 0");
            assertThat(lru.met()).isTrue();
            assertThat(pa.goal()).isEqualTo(">= " + Math.nextUp(lru.ratio()));
            assertThat(pa.met()).isEqualTo(pa.ratio() > lru.ratio());
        }
    }

    @Test
    void withoutATraceFileItReplaysAGeneratedTraceAndSaysSo() {
        List<String> notes = new ArrayList<>();
        List<Figure> figures = TraceReplayMeasure.figures((java.nio.file.Path) null, notes);
        assertThat(notes).singleElement().asString().contains("Mooncake trace not found");
        assertThat(figures).hasSize(12).allSatisfy(f -> assertThat(f.name()).startsWith("synthetic_hit_ratio_"));
        assertThat(figures.stream().filter(f -> f.name().endsWith("prefix_aware"))).allSatisfy(f -> assertThat(f.met()).isTrue());
    }
}
