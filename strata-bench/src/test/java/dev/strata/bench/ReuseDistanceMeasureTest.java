package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.List;
import org.junit.jupiter.api.Test;

class ReuseDistanceMeasureTest {

    @Test
    void quickRunGivesBothFiguresAgainstTheStackWalk() {
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        List<Figure> figures = ReuseDistanceMeasure.figures(true, new PrintStream(progress, true));
        assertThat(figures).extracting(Figure::name)
                .containsExactly("reuse_distance_rate_expert_stream", "reuse_distance_rate_kv_stream");
        for (Figure f : figures) {
            assertThat(f.unit()).isEqualTo("refs/s");
            assertThat(f.baseline()).isEqualTo("naive stack-walk LRU distances");
            assertThat(f.value()).isPositive().isFinite();
            assertThat(f.baselineValue()).isPositive().isFinite();
            FigureChecks.assertConsistent(f);
            assertThat(f.goal()).isEqualTo(">= 10000000 refs/s");
            assertThat(f.note()).contains("references").contains("distinct");
        }
        assertThat(progress.toString()).contains("[  4/4");
    }

    @Test
    void stackWalkChecksumCountsDistancesPlusOne() {
        // a b c a b c: the last three references each have distance 2 -> 3 × 3
        assertThat(ReuseDistanceMeasure.naiveChecksum(new long[] {1, 2, 3, 1, 2, 3}, 6)).isEqualTo(9);
        assertThat(ReuseDistanceMeasure.naiveChecksum(new long[] {5, 5, 5}, 3)).isEqualTo(2);
    }
}
