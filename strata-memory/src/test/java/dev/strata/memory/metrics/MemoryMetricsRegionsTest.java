package dev.strata.memory.metrics;

import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.transfer.NonTemporalCopy;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class MemoryMetricsRegionsTest {

    @Test
    void regionFamiliesCountLiveRegionsAndTheirHugePages() {
        long large = OffHeapRegion.HUGE_THRESHOLD * 2;
        MemoryAudit.Usage during;
        try (OffHeapRegion region = OffHeapRegion.allocate("metrics-thp", large, true);
             OffHeapRegion small = OffHeapRegion.allocate("metrics-small", 64 * 1024, true)) {
            during = MemoryAudit.usage();
            PrometheusText out = new PrometheusText();
            MemoryMetrics.writeRegions(out, during);
            Map<String, Double> samples = samples(out.toString());
            assertThat(samples.get("strata_memory_region_bytes")).isEqualTo((double) during.regionBytes());
            assertThat(samples.get("strata_memory_huge_page_advised_bytes")).isEqualTo((double) during.hugePageAdvisedBytes());
            assertThat(during.regionBytes()).isGreaterThanOrEqualTo(large + 64 * 1024);
            assertThat(MemoryAudit.liveRegions())
                    .anyMatch(r -> r.name().equals("metrics-thp") && r.bytes() == large
                            && r.hugePagesAdvised() == region.hugePagesAdvised())
                    .anyMatch(r -> r.name().equals("metrics-small") && !r.hugePagesAdvised());
            if (Files.exists(Path.of("/sys/kernel/mm/transparent_hugepage/enabled"))) {
                assertThat(region.hugePagesAdvised()).isTrue();
                assertThat(during.hugePageAdvisedBytes()).isGreaterThanOrEqualTo(large);
            }
            if (Files.exists(Path.of("/proc/self/smaps_rollup"))) {
                assertThat(during.anonHugePageBytes()).isNotNegative();
                assertThat(samples.get("strata_memory_anon_huge_page_bytes")).isEqualTo((double) during.anonHugePageBytes());
            }
            assertThat(out.toString()).contains("# TYPE strata_memory_region_bytes gauge");

            // a copy between two regions streams, and the counter says how many bytes did
            NonTemporalCopy.copy(region.segment(), 0, small.segment(), 0, small.byteSize());
            MemoryAudit.Usage after = MemoryAudit.usage();
            assertThat(after.streamedBytes() - during.streamedBytes())
                    .isEqualTo(NonTemporalCopy.available() ? small.byteSize() : 0);
            PrometheusText again = new PrometheusText();
            MemoryMetrics.writeRegions(again, after);
            assertThat(samples(again.toString()).get("strata_memory_non_temporal_copy_bytes_total"))
                    .isEqualTo((double) after.streamedBytes());
            assertThat(again.toString()).contains("# TYPE strata_memory_non_temporal_copy_bytes_total counter");
        }
        assertThat(MemoryAudit.liveRegions()).noneMatch(r -> r.name().startsWith("metrics-"));
    }

    private static Map<String, Double> samples(String text) {
        Map<String, Double> out = new HashMap<>();
        for (String line : text.split("\n")) {
            if (!line.isBlank() && !line.startsWith("#")) {
                int space = line.lastIndexOf(' ');
                out.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
            }
        }
        return out;
    }
}
