package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Runs the pool load measure in quick mode and checks its figures are well formed (not their speed). */
class PoolLoadMeasureTest {

    @Test
    void quickRunYieldsOneWellFormedFigurePerBlockSize() {
        List<Figure> figures = PoolLoadMeasure.figures(true);
        assertThat(figures).extracting(Figure::name)
                .containsExactly("pool_block_load_cross_process_256KiB", "pool_block_load_cross_process_1280KiB");
        for (Figure f : figures) {
            assertThat(f.note()).as(f.name()).doesNotStartWith("not measured");
            assertThat(f.unit()).isEqualTo("GB/s");
            assertThat(f.baseline()).isEqualTo(PoolLoadMeasure.BASELINE);
            assertThat(f.goal()).isEqualTo(">= 0.85");
            assertThat(f.value()).as(f.name()).isPositive().isFinite();
            assertThat(f.baselineValue()).as(f.name()).isPositive().isFinite();
            FigureChecks.assertConsistent(f);
            assertThat(f.note()).contains("published by another JVM");
        }
    }
}
