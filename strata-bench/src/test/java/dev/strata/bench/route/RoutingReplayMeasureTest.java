package dev.strata.bench.route;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.bench.Figure;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RoutingReplayMeasureTest {

    @Test
    void quickModeWithoutATraceGivesTheGeneratedTracesFiguresAgainstCacheAwareRoutingWithoutAPool() {
        List<String> notes = new ArrayList<>();
        List<Figure> figures = RoutingReplayMeasure.figures((Path) null, notes, true);
        String p = "synthetic_routing_";
        assertThat(figures).extracting(Figure::name).containsExactly(
                p + "p99_ttft_cache_aware_no_pool", p + "hit_ratio_cache_aware_no_pool", p + "load_imbalance_cache_aware_no_pool",
                p + "p99_ttft_load_only_no_pool", p + "hit_ratio_load_only_no_pool", p + "load_imbalance_load_only_no_pool",
                p + "p99_ttft_load_only_with_pool", p + "mean_ttft_load_only_with_pool", p + "hit_ratio_load_only_with_pool",
                p + "load_imbalance_load_only_with_pool",
                p + "p99_ttft_cache_aware_with_pool", p + "hit_ratio_cache_aware_with_pool", p + "load_imbalance_cache_aware_with_pool");
        assertThat(notes).first().asString().contains("no Mooncake trace");
        assertThat(notes).hasSize(5);
        assertThat(notes.subList(1, 5)).allSatisfy(n -> assertThat(n).contains("(modelled) synthetic"));
        for (Figure f : figures) {
            assertThat(f.baseline()).isEqualTo("cache-aware routing without a pool (modelled)");
            assertThat(f.value()).isNotNaN().isGreaterThanOrEqualTo(0.0);
            assertThat(f.baselineValue()).isNotNaN();
            assertThat(f.note()).startsWith("modelled");
            assertThat(f.unit()).isEqualTo(f.name().contains("ttft") ? "s" : "");
            boolean judged = f.name().endsWith("load_only_with_pool");
            if (judged) {
                assertThat(f.goal()).isEqualTo(f.name().contains("hit_ratio") ? ">= 1.0" : "<= 1.0");
            } else {
                assertThat(f.goal()).isEqualTo(">= 0");
                assertThat(f.met()).isTrue();
            }
        }
        for (Figure f : figures.subList(0, 3)) { // the baseline arm against itself
            assertThat(f.ratio()).isEqualTo(1.0);
        }
    }
}
