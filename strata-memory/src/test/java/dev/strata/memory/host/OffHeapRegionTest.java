package dev.strata.memory.host;

import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OffHeapRegionTest {

    @Test
    void smallRegionsArePageAlignedAndLargeOnesHugePageAligned() {
        try (OffHeapRegion small = OffHeapRegion.allocate("small", 10_001, true);
             OffHeapRegion large = OffHeapRegion.allocate("large", OffHeapRegion.HUGE_THRESHOLD, false)) {
            assertThat(small.segment().address() % OffHeapRegion.PAGE).isZero();
            assertThat(small.alignment()).isEqualTo(OffHeapRegion.PAGE);
            assertThat(small.byteSize()).isEqualTo(10_001);
            assertThat(large.segment().address() % OffHeapRegion.HUGE_PAGE).isZero();
            assertThat(large.alignment()).isEqualTo(OffHeapRegion.HUGE_PAGE);
            for (long p = 0; p < small.byteSize(); p += OffHeapRegion.PAGE) {
                assertThat(small.segment().get(ValueLayout.JAVA_BYTE, p)).as("pre-touch leaves zero").isZero();
            }
        }
    }

    @Test
    void auditTracksRegionsUntilClosedAndCloseIsOnce() {
        int before = MemoryAudit.liveRegions().size();
        OffHeapRegion r = OffHeapRegion.allocate("audit-probe", 12_345, false);
        assertThat(MemoryAudit.liveRegions()).anyMatch(x -> x.name().equals("audit-probe") && x.bytes() == 12_345);
        assertThat(MemoryAudit.report()).contains("audit-probe").contains("12345");
        r.close();
        r.close();
        assertThat(r.isOpen()).isFalse();
        assertThat(MemoryAudit.liveRegions()).hasSize(before);
        assertThatThrownBy(() -> r.segment().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void nonPositiveSizeIsNamed() {
        assertThatThrownBy(() -> OffHeapRegion.allocate("bad", 0, false)).hasMessageContaining("bad").hasMessageContaining("0");
    }
}
