package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Runs the expert pager figures in quick mode and checks their shape (never their speed). */
class ExpertPagerMeasureTest {

    @Test
    void quickRunGivesWellFormedFigures() {
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        List<Figure> figures = ExpertPagerMeasure.measure(true, new PrintStream(progress, true));
        assertThat(figures).extracting(Figure::name)
                .containsExactly("expert_pager_step_all_hits_top8_of_128", "expert_pager_step_one_miss_4KiB",
                        "expert_pager_step_one_miss_9MiB");
        for (Figure f : figures) {
            assertThat(f.unit()).isEqualTo("ns");
            assertThat(f.value()).as(f.name()).isPositive().isFinite();
            assertThat(f.baselineValue()).as(f.name()).isPositive().isFinite();
            FigureChecks.assertConsistent(f);
            assertThat(f.baseline()).isNotBlank();
            assertThat(Goal.parse(f.goal()).onValue()).isTrue();
            assertThat(f.note()).isNotBlank();
        }
        assertThat(progress.toString()).contains("all-hit steps").contains("one-miss steps");
    }
}
