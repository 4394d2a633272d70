package dev.strata.memory.host;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class OffHeapRegionTest {

    private static final Path THP_SETTING = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");

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
    void largeRegionsAskForTransparentHugePagesBeforeTheirFirstTouch() throws IOException {
        assumeTrue(Files.exists(THP_SETTING), "this kernel has no transparent huge pages");
        try (OffHeapRegion large = OffHeapRegion.allocate("large-thp", OffHeapRegion.HUGE_THRESHOLD + 12_345, true);
             OffHeapRegion small = OffHeapRegion.allocate("small-thp", 1 << 20, true)) {
            assertThat(large.hugePagesAdvised()).isTrue();
            assertThat(small.hugePagesAdvised()).isFalse();
            assertThat(large.byteSize()).isEqualTo(OffHeapRegion.HUGE_THRESHOLD + 12_345);
            assertThat(large.segment().address() % OffHeapRegion.HUGE_PAGE).isZero();
            // the kernel records the advice on the mapping itself: VmFlags "hg" in /proc/self/smaps
            assertThat(vmFlagsAt(large.segment().address())).contains("hg");
            assertThat(vmFlagsAt(large.segment().address() + large.byteSize() - 1)).contains("hg");
            MemorySegment m = large.segment();
            for (long p = 0; p < m.byteSize(); p += OffHeapRegion.HUGE_PAGE / 2) {
                assertThat(m.get(ValueLayout.JAVA_BYTE, p)).as("pre-touch leaves zero").isZero();
            }
            m.set(ValueLayout.JAVA_BYTE, m.byteSize() - 1, (byte) 7);
            assertThat(m.get(ValueLayout.JAVA_BYTE, m.byteSize() - 1)).isEqualTo((byte) 7);
        }
    }

    @Test
    void memoryReservedInACallersArenaGetsHugePagesTooAndGoesWithTheArena() throws IOException {
        assumeTrue(Files.exists(THP_SETTING), "this kernel has no transparent huge pages");
        MemorySegment large;
        MemorySegment small;
        try (Arena arena = Arena.ofShared()) {
            large = OffHeapRegion.reserve(OffHeapRegion.HUGE_THRESHOLD, 4096, arena, true);
            small = OffHeapRegion.reserve(100_000, 64, arena, false);
            assertThat(large.byteSize()).isEqualTo(OffHeapRegion.HUGE_THRESHOLD);
            assertThat(large.address() % OffHeapRegion.HUGE_PAGE).isZero();
            assertThat(vmFlagsAt(large.address())).contains("hg");
            assertThat(small.address() % 64).isZero();
            assertThat(large.get(ValueLayout.JAVA_BYTE, large.byteSize() - 1)).isZero();
            assertThat(small.get(ValueLayout.JAVA_BYTE, 99_999)).isZero();
        }
        MemorySegment freed = large;
        assertThatThrownBy(() -> freed.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> OffHeapRegion.reserve(1 << 20, 3, Arena.global(), false)).hasMessageContaining("3");
        assertThatThrownBy(() -> OffHeapRegion.reserve(0, 64, Arena.global(), false)).hasMessageContaining("0");
    }

    @Test
    void withHugePagesOffLargeRegionsAskForNothing() throws IOException {
        OffHeapRegion.HugePages before = OffHeapRegion.hugePages();
        OffHeapRegion.hugePages(OffHeapRegion.HugePages.OFF);
        try (OffHeapRegion large = OffHeapRegion.allocate("large-no-thp", OffHeapRegion.HUGE_THRESHOLD, true)) {
            assertThat(large.hugePagesAdvised()).isFalse();
            assertThat(large.segment().address() % OffHeapRegion.HUGE_PAGE).isZero();
            assertThat(vmFlagsAt(large.segment().address())).doesNotContain("hg");
            assertThat(MemoryAudit.liveRegions()).anyMatch(r -> r.name().equals("large-no-thp") && !r.hugePagesAdvised());
        } finally {
            OffHeapRegion.hugePages(before);
        }
    }

    /** The VmFlags of the mapping of this process that contains {@code address}. */
    private static List<String> vmFlagsAt(long address) throws IOException {
        boolean inside = false;
        for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
            int dash = line.indexOf('-');
            int space = line.indexOf(' ');
            if (dash > 0 && space > dash && line.substring(0, dash).chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
                long from = Long.parseUnsignedLong(line.substring(0, dash), 16);
                long to = Long.parseUnsignedLong(line.substring(dash + 1, space), 16);
                inside = Long.compareUnsigned(address, from) >= 0 && Long.compareUnsigned(address, to) < 0;
            } else if (inside && line.startsWith("VmFlags:")) {
                return List.of(line.substring("VmFlags:".length()).trim().split("\\s+"));
            }
        }
        throw new AssertionError("no mapping of this process contains 0x" + Long.toHexString(address));
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
