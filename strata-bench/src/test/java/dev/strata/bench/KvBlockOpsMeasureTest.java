package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The KV block measure runs in quick mode and yields well-formed figures (never judged on speed). */
class KvBlockOpsMeasureTest {

    @Test
    void quickRunYieldsWellFormedFigures() {
        List<Figure> figures = KvBlockOpsMeasure.figures(true);
        assertThat(figures).extracting(Figure::name)
                .containsExactly("kv_block_match_commit_release_ops", "kv_block_match_share_release_ops");
        for (Figure f : figures) {
            assertThat(f.unit()).isEqualTo("ops/s");
            assertThat(f.value()).isPositive().isFinite();
            assertThat(f.baselineValue()).isPositive().isFinite();
            FigureChecks.assertConsistent(f);
            assertThat(f.goal()).isEqualTo(KvBlockOpsMeasure.GOAL);
            assertThat(f.baseline()).contains("HashMap");
            assertThat(f.note()).isNotBlank();
        }
    }
}
