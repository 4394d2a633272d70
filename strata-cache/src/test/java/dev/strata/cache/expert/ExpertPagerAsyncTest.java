package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.testing.Property;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ExpertPager#pageAsync}: the same residency, map, policy order and counters as
 * {@link ExpertPager#page} for the same calls; an expert being fetched is in its master's bytes
 * once awaited; later calls wait for what is in flight; a failed fetch is reported once, its
 * expert left non-resident, the pager usable.
 */
class ExpertPagerAsyncTest {
    private static final ExpertLayout LAYOUT = ExpertPagerTest.LAYOUT;

    @TempDir
    Path dir;

    @Test
    void asyncPagingMatchesSynchronousPagingStepByStep() {
        int layers = 3;
        int experts = 10;
        try (DiskTier disk = DiskTier.open(DiskTierOptions.in(dir.resolve("disk"), 16L << 20).name("disk"));
             var deviceA = dev.strata.memory.device.DeviceTier.cpu("device-a", 1 << 20);
             var deviceB = dev.strata.memory.device.DeviceTier.cpu("device-b", 1 << 20);
             TransferEngine engine = new TransferEngine();
             ExpertMasters masters = ExpertMasters.allocate(disk, LAYOUT, layers, experts)) {
            ExpertFixture.fill(masters, 17);
            Property.forAll("pageAsync vs page", 3, r -> {
                SlotScope scope = r.nextBoolean() ? SlotScope.PER_LAYER : SlotScope.SHARED;
                try (ExpertPager sync = ExpertPager.builder(masters, deviceA).topK(2).slotsPerLayer(3).scope(scope)
                        .transferEngine(engine).build();
                     ExpertPager async = ExpertPager.builder(masters, deviceB).topK(2).slotsPerLayer(3).scope(scope)
                        .transferEngine(engine).build()) {
                    for (int step = 0; step < 40; step++) {
                        int layer = r.nextInt(layers);
                        int[] routed = new int[1 + r.nextInt(3)];
                        for (int i = 0; i < routed.length; i++) {
                            routed[i] = r.nextInt(experts);
                        }
                        Set<Integer> missing = new HashSet<>();
                        for (int e : routed) {
                            if (async.slotOf(layer, e) < 0) {
                                missing.add(e);
                            }
                        }
                        int[] want = sync.page(layer, routed).clone();
                        int[] got = async.pageAsync(layer, routed, routed.length);
                        assertThat(got).as("step %d layer %d routed %s", step, layer, java.util.Arrays.toString(routed))
                                .isEqualTo(want);
                        for (int e = 0; e < experts; e++) {
                            assertThat(async.fetching(layer, e)).as("expert %d fetching (missing: %s)", e, missing)
                                    .isEqualTo(missing.contains(e));
                        }
                        for (int e : routed) { // each routed expert, once awaited, holds its master's bytes
                            async.awaitExpert(layer, e);
                            assertThat(async.fetching(layer, e)).isFalse();
                            MemorySegment slot = async.slot(layer, got[e]);
                            assertThat(slot.asSlice(0, LAYOUT.bytes()).mismatch(sync.slot(layer, want[e]).asSlice(0, LAYOUT.bytes())))
                                    .as("layer %d expert %d", layer, e).isEqualTo(-1L);
                        }
                        if (r.nextInt(4) == 0) {
                            async.checkInvariants();
                            sync.checkInvariants();
                        }
                    }
                    async.awaitFetches();
                    assertThat(async.stats().bytesFetched()).isEqualTo(sync.stats().bytesFetched());
                    assertThat(async.stats().hitRatio()).isEqualTo(sync.stats().hitRatio());
                    assertThat(async.verifyResidentBytes()).isEqualTo(sync.verifyResidentBytes());
                    async.checkInvariants();
                }
            });
            assertThat(deviceA.used()).isZero();
            assertThat(deviceB.used()).isZero();
        }
    }

    @Test
    void aFailedFetchIsReportedWhenAwaitedAndLeavesItsExpertNonResident() {
        try (DiskTier disk = DiskTier.open(DiskTierOptions.in(dir.resolve("disk2"), 8L << 20).name("disk"));
             var device = dev.strata.memory.device.DeviceTier.cpu("device", 1 << 20);
             TransferEngine engine = new TransferEngine();
             ExpertMasters masters = ExpertMasters.allocate(disk, LAYOUT, 1, 6)) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment image = arena.allocate(LAYOUT.bytes(), 4096);
                for (int e = 0; e < 6; e++) {
                    if (e != 4) { // expert 4's master is never written
                        image.fill((byte) (e + 7));
                        masters.write(0, e, image);
                    }
                }
            }
            try (ExpertPager pager = ExpertPager.builder(masters, device).topK(1).slotsPerLayer(3).transferEngine(engine).build()) {
                int[] map = pager.pageAsync(0, new int[] {3, 4, 5}, 3);
                assertThat(map[3]).isNotNegative();
                assertThat(map[4]).as("mapped while in flight").isNotNegative();
                pager.awaitExpert(0, 3); // expert 3 arrived whatever expert 4 does
                assertThatThrownBy(() -> pager.awaitExpert(0, 4)).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("expert 4").hasMessageContaining("NOT_FOUND");
                assertThat(pager.slotOf(0, 4)).isEqualTo(-1);
                assertThat(pager.fetching(0, 5)).as("every fetch settled before the failure was reported").isFalse();
                pager.checkInvariants(); // reported once: nothing left to throw
                assertThat(pager.verifyResidentBytes()).isEqualTo(2);
                // a failure not awaited by the engine surfaces at the next call of the driving thread
                pager.pageAsync(0, new int[] {4}, 1);
                assertThatThrownBy(() -> pager.page(0, new int[] {0})).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("expert 4");
                assertThat(pager.slotOf(0, 4)).isEqualTo(-1);
                pager.page(0, new int[] {0});
                assertThat(pager.verifyResidentBytes()).isEqualTo(3);
                pager.checkInvariants();
            }
            assertThat(device.used()).isZero();
        }
    }
}
