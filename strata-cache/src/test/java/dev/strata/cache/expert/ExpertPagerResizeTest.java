package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ExpertPagerResizeTest {

    static final ExpertLayout LAYOUT = ExpertLayout.of("up", 3001, "down", 2999, "scales", 61);
    static final long SLOT = ExpertFixture.slotBytes(LAYOUT);

    @Test
    void growIntoATooSmallDeviceIsRefusedAndThePagerStaysAsItWas() {
        int layers = 2;
        long budget = (layers * 4 + 1) * SLOT; // room for k = 4 and one spare slot, not for k = 5
        try (ExpertFixture f = new ExpertFixture(LAYOUT, layers, 16, budget, 11);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(4).build()) {
            pager.page(0, new int[] {1, 2, 3, 4});
            pager.page(1, new int[] {5, 6});
            int[] map0 = pager.expertMap(0).clone();
            int[] map1 = pager.expertMap(1).clone();
            long used = f.device.used();
            assertThat(pager.resize(5)).isFalse();
            assertThat(pager.units()).isEqualTo(4);
            assertThat(pager.slots()).isEqualTo(8);
            assertThat(pager.expertMap(0)).containsExactly(map0);
            assertThat(pager.expertMap(1)).containsExactly(map1);
            assertThat(f.device.used()).isEqualTo(used);
            assertThat(f.device.allocationCount()).isEqualTo(8);
            assertThat(pager.stats().failedResizes()).isEqualTo(1);
            assertThat(pager.stats().resizes()).isZero();
            pager.checkInvariants();
            pager.page(0, new int[] {1, 7}); // still usable
            assertThat(pager.verifyResidentBytes()).isEqualTo(6);
            assertThatThrownBy(() -> pager.page(0, new int[] {1, 2, 3, 4, 7})).hasMessageContaining("4 slots");
            pager.checkInvariants();
        }
    }

    @Test
    void shrinkEvictsByPolicyRepagesSurvivorsBelowTheNewCapacityAndReleasesBytesBeforeReturning() {
        int layers = 2;
        try (ExpertFixture f = new ExpertFixture(LAYOUT, layers, 16, layers * 8 * SLOT, 12);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(8).build()) {
            pager.page(0, new int[] {0, 1, 2, 3, 4, 5, 6, 7});
            pager.page(0, new int[] {7, 6, 5});
            pager.page(1, new int[] {9, 10});
            assertThat(f.device.used()).isEqualTo(16 * SLOT);
            assertThat(pager.resize(3)).isTrue();
            assertThat(f.device.used()).as("a shrink frees before it returns").isEqualTo(layers * 3 * SLOT);
            assertThat(f.device.allocationCount()).isEqualTo(6);
            assertThat(pager.bytesPerUnit()).isEqualTo(layers * SLOT);
            int[] map0 = pager.expertMap(0);
            for (int e = 0; e < 16; e++) {
                boolean shouldStay = e == 5 || e == 6 || e == 7; // the three most recently used
                assertThat(map0[e] >= 0).as("layer 0 expert %d resident", e).isEqualTo(shouldStay);
                assertThat(map0[e]).isLessThan(3);
            }
            assertThat(pager.resident(1)).isEqualTo(2);
            assertThat(pager.verifyResidentBytes()).isEqualTo(5);
            assertThat(pager.stats().layers().get(0).evictions()).isEqualTo(5);
            pager.checkInvariants();
            assertThat(pager.page(0, new int[] {5, 6, 7})[5]).isNotNegative();
            assertThat(pager.stats().layers().get(0).misses()).as("survivors are hits after the shrink").isEqualTo(8);
            assertThat(pager.resize(8)).isTrue();
            pager.page(0, new int[] {0, 1, 2, 3, 4});
            assertThat(pager.resident(0)).isEqualTo(8);
            assertThat(pager.verifyResidentBytes()).isEqualTo(10);
            assertThat(pager.stats().resizes()).isEqualTo(2);
            pager.checkInvariants();
        }
    }

    @Test
    void sharedPoolResizesInUnitsOfOneSlotPerLayer() {
        int layers = 3;
        try (ExpertFixture f = new ExpertFixture(LAYOUT, layers, 10, layers * 10 * SLOT, 13);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(1).slotsPerLayer(2).scope(SlotScope.SHARED).build()) {
            pager.page(0, new int[] {0, 1, 2, 3, 4, 5});
            assertThat(pager.resize(4)).isTrue();
            assertThat(pager.slots()).isEqualTo(12);
            assertThat(pager.layerCapacity(0)).isEqualTo(10);
            pager.page(1, new int[] {0, 1, 2, 3, 4, 5});
            assertThat(pager.resident(0) + pager.resident(1)).isEqualTo(12);
            assertThat(pager.resize(1)).isTrue();
            assertThat(f.device.used()).isEqualTo(3 * SLOT);
            assertThat(pager.resident(0)).isZero();
            assertThat(pager.resident(1)).isEqualTo(3);
            assertThat(pager.verifyResidentBytes()).isEqualTo(3);
            pager.checkInvariants();
        }
    }

    @Test
    void resizeOutsideTheUnitRangeIsMisuse() {
        try (ExpertFixture f = new ExpertFixture(LAYOUT, 1, 8, 8 * SLOT, 14);
             ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(2).slotsPerLayer(4).build()) {
            assertThat(pager.minUnits()).isEqualTo(2);
            assertThat(pager.maxUnits()).isEqualTo(8);
            assertThat(pager.name()).isEqualTo("experts");
            assertThatThrownBy(() -> pager.resize(1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 slots");
            assertThatThrownBy(() -> pager.resize(9)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("9 slots");
            assertThat(pager.resize(4)).isTrue();
        }
    }
}
