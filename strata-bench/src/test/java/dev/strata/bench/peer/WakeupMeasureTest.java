package dev.strata.bench.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.strata.bench.Figure;
import dev.strata.memory.shm.Doorbell;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WakeupMeasureTest {
    @TempDir
    Path dir;

    @Test
    void wakeUpsOfAnotherProcessAreRecordedAndRevocationFiguresBecomeRatiosToThem() throws Exception {
        assumeThat(Doorbell.available()).as(Doorbell.unavailableReason()).isTrue();
        List<Figure> revocation = List.of(Figure.exact("peer_revoke_to_callback_p50_cross_process", 300, "us", "hand-off p50", 10, "<= 3"),
                Figure.exact("peer_revoke_to_callback_p99_cross_process", 900, "us", "hand-off p99", 30, "<= 3"));
        try (WakeupMeasure m = WakeupMeasure.start(dir)) {
            m.sample(15);
            m.sample(15);
            assertThat(m.histogram().getTotalCount()).as("warm-up rounds are not recorded").isEqualTo(30);
            assertThat(m.histogram().getMinValue()).isPositive();
            List<Figure> ratios = m.ratios(revocation, "cross_process");
            assertThat(ratios).extracting(Figure::name).containsExactly("peer_revoke_to_callback_p50_cross_process_vs_wakeup",
                    "peer_revoke_to_callback_p99_cross_process_vs_wakeup");
            assertThat(ratios).extracting(Figure::goal).containsExactly("<= 3", "<= 10");
            assertThat(ratios.get(0).value()).isEqualTo(300);
            assertThat(ratios.get(0).baselineValue()).isEqualTo(m.histogram().getValueAtPercentile(50) / 1e3);
            assertThat(ratios.get(1).baselineValue()).isEqualTo(m.histogram().getValueAtPercentile(99) / 1e3);
            assertThat(ratios.get(1).ratio()).isEqualTo(900 / ratios.get(1).baselineValue());
        }
        try (var files = Files.list(dir)) {
            assertThat(files).as("the shared file is removed").isEmpty();
        }
    }

    @Test
    void aMissingRevocationFigureIsReportedMissingByName() throws Exception {
        try (WakeupMeasure m = WakeupMeasure.start(dir)) {
            m.sample(5);
            List<Figure> ratios = m.ratios(List.of(), "cross_process");
            assertThat(ratios).hasSize(2).allSatisfy(f -> {
                assertThat(f.value()).isNaN();
                assertThat(f.met()).isFalse();
                assertThat(f.note()).contains("no figure peer_revoke_to_callback_p");
            });
        }
    }
}
