package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.transfer.LinkStats;
import dev.strata.memory.transfer.TransferEngine;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExpertPagerTest {

    /** Four tensors of odd sizes: weights and a scale, as a quantised expert has. */
    static final ExpertLayout LAYOUT = ExpertLayout.of("gate", 1001, "up", 1001, "down", 999, "scales", 37);

    @TempDir
    Path dir;

    @Test
    void missesFetchOnlyWhatIsMissingAndResidentSlotsEqualTheirMasters() {
        try (ExpertFixture f = new ExpertFixture(LAYOUT, 2, 16, 1 << 20, 1);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(4).build()) {
            int[] map = pager.page(0, new int[] {1, 2, 2, 3});
            assertThat(map).isSameAs(pager.expertMap(0)).hasSize(16);
            assertThat(new int[] {map[1], map[2], map[3]}).doesNotHaveDuplicates();
            assertThat(Arrays.stream(new int[] {map[1], map[2], map[3]}).boxed().toList()).allSatisfy(s -> assertThat(s).isBetween(0, 3));
            assertThat(Arrays.stream(map).filter(s -> s >= 0).count()).isEqualTo(3);
            ExpertPagerStats.Layer l0 = pager.stats().layers().get(0);
            assertThat(l0.misses()).isEqualTo(3);
            assertThat(l0.hits()).isZero();
            assertThat(l0.bytesFetched()).isEqualTo(3 * LAYOUT.bytes());
            assertThat(pager.page(0, new int[] {3, 2, 1})).isSameAs(map);
            l0 = pager.stats().layers().get(0);
            assertThat(l0.hits()).isEqualTo(3);
            assertThat(l0.misses()).isEqualTo(3);
            assertThat(pager.stats().layers().get(1).hits() + pager.stats().layers().get(1).misses()).isZero();
            assertThat(pager.verifyResidentBytes()).isEqualTo(3);
            int down = LAYOUT.indexOf("down");
            MemorySegment tensor = pager.tensor(0, map[2], down);
            assertThat(tensor.byteSize()).isEqualTo(999);
            assertThat(tensor.mismatch(LAYOUT.slice(f.masters.view(0, 2), down))).isEqualTo(-1);
            pager.checkInvariants();
        }
    }

    @Test
    void leastRecentlyUsedExpertOfTheLayerGivesUpItsSlot() {
        try (ExpertFixture f = new ExpertFixture(LAYOUT, 2, 16, 1 << 20, 2);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(4).build()) {
            pager.page(0, new int[] {0, 1, 2, 3});
            pager.page(1, new int[] {0, 1, 2, 3});
            pager.page(0, new int[] {1, 0, 3});
            int slotOf2 = pager.slotOf(0, 2);
            int[] map = pager.page(0, new int[] {9});
            assertThat(map[2]).isEqualTo(-1);
            assertThat(map[9]).isEqualTo(slotOf2);
            assertThat(pager.resident(1)).as("per-layer scope: layer 1 untouched").isEqualTo(4);
            assertThat(pager.stats().layers().get(0).evictions()).isEqualTo(1);
            pager.verifyResidentBytes();
            pager.checkInvariants();
        }
    }

    @Test
    void unionAboveCapacityIsRefusedAndChangesNothing() {
        try (ExpertFixture f = new ExpertFixture(LAYOUT, 1, 16, 1 << 20, 3);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(4).build()) {
            pager.page(0, new int[] {5, 6});
            int[] before = pager.expertMap(0).clone();
            var statsBefore = pager.stats();
            assertThatThrownBy(() -> pager.page(0, new int[] {1, 2, 3, 4, 5}))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("5 distinct experts").hasMessageContaining("4 slots");
            assertThat(pager.expertMap(0)).containsExactly(before);
            assertThat(pager.stats()).isEqualTo(statsBefore);
            assertThatThrownBy(() -> pager.page(0, new int[] {16})).hasMessageContaining("routed expert 16");
            assertThatThrownBy(() -> pager.page(1, new int[] {0})).hasMessageContaining("layer 1");
            assertThatThrownBy(() -> pager.page(0, new int[] {-1})).hasMessageContaining("routed expert -1");
            pager.checkInvariants();
        }
    }

    @Test
    void settingsOutsideTheirRangeAreRefusedWithTheValue() {
        try (ExpertFixture f = new ExpertFixture(LAYOUT, 1, 8, 16 * 1024, 4)) {
            assertThatThrownBy(() -> ExpertPager.builder(f.masters, f.device).topK(3).slotsPerLayer(2).build())
                    .hasMessageContaining("got 2");
            assertThatThrownBy(() -> ExpertPager.builder(f.masters, f.device).topK(9).slotsPerLayer(9).build())
                    .hasMessageContaining("got 9");
            assertThatThrownBy(() -> ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(8).build())
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("cannot hold 8 slots");
            assertThat(f.device.used()).as("a refused build frees what it took").isZero();
        }
    }

    @Test
    void sharedPoolLetsOneLayerTakeMoreThanItsShare() {
        try (ExpertFixture f = new ExpertFixture(LAYOUT, 3, 16, 1 << 20, 5);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(3).scope(SlotScope.SHARED).build()) {
            assertThat(pager.layerCapacity(0)).isEqualTo(9);
            assertThat(pager.slots()).isEqualTo(9);
            pager.page(0, new int[] {0, 1, 2, 3, 4, 5, 6, 7});
            pager.page(1, new int[] {0});
            assertThat(pager.resident(0)).isEqualTo(8);
            int[] map2 = pager.page(2, new int[] {1, 2});
            assertThat(pager.resident(0)).as("shared pool: layer 2 evicts the two oldest, both of layer 0").isEqualTo(6);
            assertThat(pager.slotOf(0, 0)).isEqualTo(-1);
            assertThat(pager.slotOf(0, 1)).isEqualTo(-1);
            assertThat(pager.slotOf(1, 0)).isNotNegative();
            assertThat(map2[1]).isNotEqualTo(map2[2]);
            assertThat(pager.stats().layers().get(0).evictions()).isEqualTo(2);
            pager.verifyResidentBytes();
            pager.checkInvariants();
        }
    }

    @Test
    void diskMastersArriveThroughTheTransferEngineSeveralInFlight() {
        int layers = 2;
        int experts = 12;
        try (DiskTier disk = DiskTier.open(DiskTierOptions.in(dir.resolve("disk"), 8L << 20).name("disk"));
             var host = dev.strata.memory.host.HostTier.create("host", 1 << 20);
             var device = dev.strata.memory.device.DeviceTier.cpu("device", 1 << 20);
             TransferEngine engine = new TransferEngine();
             ExpertMasters masters = ExpertMasters.allocate(disk, LAYOUT, layers, experts)) {
            ExpertFixture.fill(masters, 6);
            assertThatThrownBy(() -> ExpertPager.builder(masters, device).topK(2).slotsPerLayer(6).build())
                    .hasMessageContaining("transfer engine");
            try (ExpertPager pager = ExpertPager.builder(masters, device).topK(2).slotsPerLayer(6).transferEngine(engine).build()) {
                pager.page(0, new int[] {0, 1, 2, 3, 4, 5});
                pager.page(1, new int[] {11, 10, 9});
                pager.page(0, new int[] {6, 7, 0});
                assertThat(pager.verifyResidentBytes()).isEqualTo(9);
                long linked = engine.linkStats().stream().filter(s -> s.source().equals("disk") && s.destination().equals("device"))
                        .mapToLong(LinkStats::bytes).sum();
                assertThat(linked).isEqualTo(11 * LAYOUT.bytes());
                assertThat(pager.stats().bytesFetched()).isEqualTo(11 * LAYOUT.bytes());
                pager.checkInvariants();
            }
            assertThat(device.used()).isZero();
            assertThat(host.used()).isZero();
        }
    }

    @Test
    void aMasterThatCannotBeReadFailsItsFetchAndLeavesThePagerUsable() {
        try (DiskTier disk = DiskTier.open(DiskTierOptions.in(dir.resolve("disk2"), 8L << 20).name("disk"));
             var device = dev.strata.memory.device.DeviceTier.cpu("device", 1 << 20);
             TransferEngine engine = new TransferEngine();
             ExpertMasters masters = ExpertMasters.allocate(disk, LAYOUT, 1, 6)) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment image = arena.allocate(LAYOUT.bytes(), 4096);
                for (int e = 0; e < 6; e++) {
                    if (e != 4) { // expert 4's master is never written
                        image.fill((byte) (e + 1));
                        masters.write(0, e, image);
                    }
                }
            }
            try (ExpertPager pager = ExpertPager.builder(masters, device).topK(1).slotsPerLayer(3).transferEngine(engine).build()) {
                assertThatThrownBy(() -> pager.page(0, new int[] {3, 4, 5}))
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining("expert 4").hasMessageContaining("NOT_FOUND");
                assertThat(pager.slotOf(0, 4)).isEqualTo(-1);
                assertThat(pager.slotOf(0, 3)).isNotNegative();
                pager.checkInvariants();
                pager.page(0, new int[] {0, 1, 3});
                assertThat(pager.verifyResidentBytes()).isEqualTo(3);
                pager.checkInvariants();
                engine.close();
                assertThatThrownBy(() -> pager.page(0, new int[] {2, 5})).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("could not submit").hasMessageContaining("expert 2");
                assertThat(pager.slotOf(0, 2)).isEqualTo(-1);
                assertThat(pager.slotOf(0, 5)).isEqualTo(-1);
                pager.checkInvariants();
                // The two misses evicted the two least recently used (3, then 0) before the submission failed.
                assertThat(pager.resident(0)).isEqualTo(1);
                assertThat(pager.slotOf(0, 3)).isEqualTo(-1);
                assertThat(pager.page(0, new int[] {1})[1]).as("hits need no engine").isNotNegative();
                assertThat(pager.verifyResidentBytes()).isEqualTo(1);
            }
        }
    }

    @Test
    void statsRenderAsPrometheusFamiliesPerLayer() {
        try (ExpertFixture f = new ExpertFixture(LAYOUT, 2, 8, 1 << 20, 7);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).name("qwen").topK(2).slotsPerLayer(4)
                     .policy(new LfuExpertPolicy()).build()) {
            pager.page(0, new int[] {1, 2});
            pager.page(0, new int[] {1, 3});
            String text = pager.stats().toPrometheus();
            assertThat(text).contains("# TYPE strata_expert_hits_total counter")
                    .contains("strata_expert_hits_total{pager=\"qwen\",policy=\"lfu-aging\",scope=\"per_layer\",layer=\"0\"} 1")
                    .contains("strata_expert_misses_total{pager=\"qwen\",policy=\"lfu-aging\",scope=\"per_layer\",layer=\"0\"} 3")
                    .contains("strata_expert_fetched_bytes_total{pager=\"qwen\",policy=\"lfu-aging\",scope=\"per_layer\",layer=\"0\"} "
                            + 3 * LAYOUT.bytes())
                    .contains("strata_expert_resident{pager=\"qwen\",policy=\"lfu-aging\",scope=\"per_layer\",layer=\"1\"} 0")
                    .contains("strata_expert_slots{pager=\"qwen\",policy=\"lfu-aging\",scope=\"per_layer\"} 8")
                    .contains("strata_expert_device_bytes{pager=\"qwen\",policy=\"lfu-aging\",scope=\"per_layer\"} "
                            + 8 * ExpertFixture.slotBytes(LAYOUT));
            assertThat(pager.stats().hitRatio()).isEqualTo(0.25);
        }
    }

    @Test
    void closeFreesEverySlotAndTheAuditFindsNothingLeft() {
        var before = MemoryAudit.liveRegions().stream().map(MemoryAudit.LiveRegion::id).toList();
        ExpertFixture f = new ExpertFixture(LAYOUT, 2, 8, 1 << 20, 8);
        ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(4).scope(SlotScope.SHARED).build();
        pager.page(0, new int[] {1, 2, 3});
        pager.page(1, new int[] {4, 5});
        assertThat(f.device.allocationCount()).isEqualTo(8);
        pager.close();
        pager.close();
        assertThat(f.device.allocationCount()).isZero();
        assertThat(f.device.used()).isZero();
        assertThatThrownBy(() -> pager.page(0, new int[] {1})).hasMessageContaining("closed");
        f.masters.close();
        assertThat(f.host.used()).isZero();
        f.close();
        assertThat(MemoryAudit.liveRegions().stream().filter(r -> !before.contains(r.id()))).isEmpty();
    }

    @Test
    void allHitStepsAllocateNothing() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (ExpertFixture f = new ExpertFixture(ExpertLayout.single(512), 1, 128, 1 << 20, 9)) {
            for (ExpertPolicy policy : List.of(new LruExpertPolicy(), new LfuExpertPolicy())) {
                try (ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(8).slotsPerLayer(32).policy(policy).build()) {
                    int[][] steps = new int[16][8];
                    for (int s = 0; s < steps.length; s++) {
                        for (int i = 0; i < 8; i++) {
                            steps[s][i] = (s * 3 + i * 5) % 32;
                        }
                    }
                    for (int[] step : steps) {
                        pager.page(0, step);
                    }
                    long sink = 0;
                    for (int i = 0; i < 300_000; i++) {
                        sink += pager.page(0, steps[i & 15])[steps[i & 15][0]];
                    }
                    long id = Thread.currentThread().threadId();
                    long before = threads.getThreadAllocatedBytes(id);
                    for (int i = 0; i < 100_000; i++) {
                        sink += pager.page(0, steps[i & 15])[steps[i & 15][0]];
                    }
                    long allocated = threads.getThreadAllocatedBytes(id) - before;
                    assertThat(sink).isPositive();
                    assertThat(allocated).as("bytes allocated by 100k all-hit steps with %s", policy.name()).isLessThan(1024);
                    assertThat(pager.stats().misses()).isEqualTo(32);
                }
            }
        }
    }

    /**
     * Under a split, expert slots share a DEVICE tier with KV slots: a slot granule makes every
     * slot allocation, first and grown, a whole number of granules, so a freed expert slot holds
     * whole KV slots; the images and what the model reads are unchanged.
     */
    @Test
    void aSlotGranuleMakesEverySlotAWholeNumberOfGranules() {
        long granule = 3 * 4096; // not a divisor of the image (3038 bytes, one page when aligned)
        try (ExpertFixture f = new ExpertFixture(LAYOUT, 2, 16, 1 << 20, 3);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(3).slotGranule(granule).build()) {
            long before = f.device.used();
            assertThat(pager.bytesPerUnit()).as("one slot per layer, two layers").isEqualTo(2 * granule);
            assertThat(pager.resize(pager.units() + 1)).isTrue();
            assertThat(f.device.used() - before).as("grown slots are granules too").isEqualTo(2 * granule);
            int[] map = pager.page(1, new int[] {5, 7});
            assertThat(pager.verifyResidentBytes()).isEqualTo(2);
            assertThat(pager.tensor(1, map[7], LAYOUT.indexOf("down")).mismatch(LAYOUT.slice(f.masters.view(1, 7), LAYOUT.indexOf("down"))))
                    .isEqualTo(-1);
            pager.checkInvariants();
        }
        try (ExpertFixture f = new ExpertFixture(LAYOUT, 2, 16, 1 << 20, 3)) {
            assertThatThrownBy(() -> ExpertPager.builder(f.masters, f.device).slotGranule(0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("slot granule 0");
        }
    }
}
