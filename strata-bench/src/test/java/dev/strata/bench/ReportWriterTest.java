package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportWriterTest {

    @TempDir
    Path dir;

    @Test
    void jsonHasTheSharedShapeAndWritesMissingNumbersAsNull() throws Exception {
        BenchReport report = new BenchReport("tiers", "test machine", true, List.of(
                Figure.of("host_to_device_copy_256KiB", 9.1, "GB/s", "raw MemorySegment.copy", 9.6, ">= 0.9"),
                Figure.of("store_put_ops", 4.0e6, "ops/s", "ConcurrentHashMap.put", 2.0e7, ">= 5000000 ops/s"),
                Figure.missing("disk_read_256KiB_qd4", "GB/s", "fio", ">= 0.9", "fio absent")), List.of("a note"));
        Path json = ReportWriter.write(report, dir);
        JsonNode root = new ObjectMapper().readTree(json.toFile());
        assertThat(root.fieldNames()).toIterable().containsExactly("scenario", "machine", "quick", "figures", "notes");
        JsonNode first = root.path("figures").path(0);
        assertThat(first.fieldNames()).toIterable().containsExactly(
                "name", "value", "unit", "baseline", "baseline_value", "ratio", "goal", "met", "note");
        assertThat(first.path("ratio").asDouble()).isCloseTo(9.1 / 9.6, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(first.path("met").asBoolean()).isTrue();
        assertThat(root.path("figures").path(1).path("met").asBoolean()).as("goal on the value").isFalse();
        assertThat(root.path("figures").path(2).path("value").isNull()).isTrue();
        assertThat(root.path("figures").path(2).path("met").asBoolean()).isFalse();
        assertThat(ReportWriter.read(json).figures()).hasSize(3);
        String html = Files.readString(dir.resolve("tiers.html"));
        assertThat(html).contains("host_to_device_copy_256KiB").contains("<svg").contains("fio absent");
    }

    @Test
    void goalsApplyToRatioOrValue() {
        assertThat(Goal.parse(">= 0.9").met(1.0, 0.95)).isTrue();
        assertThat(Goal.parse(">= 0.9").met(100, 0.85)).isFalse();
        assertThat(Goal.parse(">= 5000000 ops/s").met(6e6, 0.1)).isTrue();
        assertThat(Goal.parse("<= 2").met(0, 3)).isFalse();
        assertThat(Goal.parse(">= 0.9").met(1, Double.NaN)).isFalse();
        assertThatThrownBy(() -> Goal.parse("about 1")).hasMessageContaining("'about 1'");
    }

    @Test
    void trialsTakeMedians() {
        assertThat(Trials.median(new double[] {3, 1, 2})).isEqualTo(2);
        assertThat(Trials.median(new double[] {4, 1, 2, 3})).isEqualTo(2.5);
        int[] calls = new int[2];
        double[] m = Trials.alternate(4, () -> ++calls[0], () -> 10 + ++calls[1]);
        assertThat(calls).as("one warm-up run each, then four").containsExactly(5, 5);
        assertThat(m).containsExactly(3.5, 13.5);
    }
}
