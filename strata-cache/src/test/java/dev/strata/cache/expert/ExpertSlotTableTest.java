package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.testing.Property;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link ExpertSlotTable} on its own, without DEVICE memory: random sequences of paged calls,
 * released slots (failed fetches), grows and shrinks keep each expert in at most one slot, the map
 * and its inverse in agreement and within capacity; the experts a call routes are never chosen as
 * victims; a call too wide for the layer changes nothing; a policy that offers a pinned or absent
 * victim is refused. A failing sequence names its seed (replay with {@code -Dstrata.seed}).
 */
class ExpertSlotTableTest {

    @Test
    void mapAndInverseAgreeAfterRandomOperations() {
        Property.forAll("expert slot table operations", 120, random -> {
            int layers = 1 + random.nextInt(4);
            int experts = 2 + random.nextInt(19);
            int k = 1 + random.nextInt(experts);
            SlotScope scope = random.nextBoolean() ? SlotScope.PER_LAYER : SlotScope.SHARED;
            ExpertPolicy policy = random.nextBoolean() ? new LruExpertPolicy() : new LfuExpertPolicy(1 + random.nextInt(30));
            ExpertPagerCounters counters = new ExpertPagerCounters(layers, experts);
            ExpertSlotTable table = new ExpertSlotTable("t", scope, layers, experts, k, policy, counters);
            String context = "layers=" + layers + " experts=" + experts + " k=" + k + " " + scope + " " + policy.name();
            assertConsistent(table, layers, experts, scope, context + " at start");
            for (int op = 0; op < 150; op++) {
                String at = context + " op " + op;
                int choice = random.nextInt(10);
                if (choice < 7) {
                    pageOneCall(table, counters, random, layers, experts, at);
                } else if (choice == 7) {
                    releaseOne(table, random, layers, experts);
                } else {
                    resize(table, 1 + random.nextInt(experts), at);
                }
                assertConsistent(table, layers, experts, scope, at);
            }
        });
    }

    /** Routes a random call, admits its misses, and checks the call's experts are all resident in distinct slots. */
    private static void pageOneCall(ExpertSlotTable table, ExpertPagerCounters counters, SplittableRandom random, int layers,
                                    int experts, String at) {
        int layer = random.nextInt(layers);
        int count = 1 + random.nextInt(Math.min(experts, table.layerCapacity() + 2) + 1);
        int[] routed = new int[count];
        for (int i = 0; i < count; i++) {
            routed[i] = random.nextInt(experts);
        }
        Set<Integer> distinct = new LinkedHashSet<>();
        for (int e : routed) {
            distinct.add(e);
        }
        int[][] mapsBefore = maps(table, layers);
        long[] before = layerCounts(counters, layer);
        long routesBefore = counters.routeCount(layer * experts + routed[0]);
        int[] missing = new int[experts];
        if (distinct.size() > table.layerCapacity()) {
            assertThatThrownBy(() -> table.route(layer, routed, count, missing)).as(at).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("routes " + distinct.size() + " distinct experts");
            assertThat(maps(table, layers)).as(at + ": a refused call changes no map").isDeepEqualTo(mapsBefore);
            assertThat(layerCounts(counters, layer)).as(at + ": a refused call changes no count").isEqualTo(before);
            assertThat(counters.routeCount(layer * experts + routed[0])).isEqualTo(routesBefore);
            return;
        }
        int misses = table.route(layer, routed, count, missing);
        long hits = distinct.stream().filter(e -> mapsBefore[layer][e] >= 0).count();
        assertThat(misses).as(at + ": misses").isEqualTo(distinct.size() - (int) hits);
        int m = 0;
        for (int e : distinct) { // missing experts come in first-routed order
            if (mapsBefore[layer][e] < 0) {
                assertThat(missing[m++]).as(at + ": missing expert").isEqualTo(e);
            }
        }
        for (int e : distinct) {
            assertThat(table.pinned(layer * experts + e)).as(at + ": routed expert " + e + " pinned").isTrue();
        }
        for (int i = 0; i < misses; i++) {
            int slot = table.admit(layer, missing[i]);
            assertThat(slot).isBetween(0, table.capacity() - 1);
        }
        Set<Integer> slots = new LinkedHashSet<>();
        for (int e : distinct) {
            int slot = table.map(layer)[e];
            assertThat(slot).as(at + ": routed expert " + e + " of layer " + layer + " resident (never a victim)").isNotNegative();
            slots.add(slot);
        }
        assertThat(slots).as(at + ": routed experts in distinct slots").hasSize(distinct.size());
        long[] after = layerCounts(counters, layer);
        assertThat(after[0] - before[0]).as(at + ": hits counted").isEqualTo(hits);
        assertThat(after[1] - before[1]).as(at + ": misses counted").isEqualTo(misses);
        assertThat(counters.routeCount(layer * experts + routed[0])).as(at + ": route count").isEqualTo(routesBefore + 1);
    }

    /** Releases one resident expert, if any (as a failed fetch does). */
    private static void releaseOne(ExpertSlotTable table, SplittableRandom random, int layers, int experts) {
        int layer = random.nextInt(layers);
        int start = random.nextInt(experts);
        for (int i = 0; i < experts; i++) {
            int e = (start + i) % experts;
            if (table.map(layer)[e] >= 0) {
                int slot = table.map(layer)[e];
                int g = table.group(layer);
                table.release(layer, e);
                assertThat(table.map(layer)[e]).isEqualTo(-1);
                assertThat(table.keyIn(g, slot)).isEqualTo(-1);
                return;
            }
        }
    }

    /** Resizes the table as {@link ExpertResizer} does, without bytes to move. */
    private static void resize(ExpertSlotTable table, int units, String at) {
        if (units > table.units()) {
            table.grow(units);
        } else if (units < table.units()) {
            int oldCap = table.capacity();
            int newCap = table.capacityFor(units);
            for (int g = 0; g < table.groups(); g++) {
                table.evictDownTo(g, newCap);
                assertThat(table.residents(g)).as(at + ": group " + g + " after eviction").isLessThanOrEqualTo(newCap);
                int target = 0;
                for (int s = newCap; s < oldCap; s++) {
                    if (table.keyIn(g, s) >= 0) {
                        while (table.keyIn(g, target) >= 0) {
                            target++;
                        }
                        int key = table.keyIn(g, s);
                        table.move(g, s, target);
                        assertThat(table.keyIn(g, target)).isEqualTo(key);
                    }
                }
                table.truncate(g, newCap);
            }
            table.setUnits(units);
        }
        assertThat(table.units()).isEqualTo(units);
    }

    /** The table's own check, and the same properties recomputed here from the maps and the inverse. */
    private static void assertConsistent(ExpertSlotTable table, int layers, int experts, SlotScope scope, String at) {
        table.checkInvariants();
        int cap = table.capacity();
        int[][] fromMaps = new int[table.groups()][cap];
        for (int[] row : fromMaps) {
            Arrays.fill(row, -1);
        }
        for (int l = 0; l < layers; l++) {
            int g = table.group(l);
            int mapped = 0;
            for (int e = 0; e < experts; e++) {
                int s = table.map(l)[e];
                if (s < 0) {
                    continue;
                }
                mapped++;
                assertThat(s).as(at + ": slot of layer " + l + " expert " + e).isLessThan(cap);
                assertThat(fromMaps[g][s]).as(at + ": slot " + s + " of group " + g + " mapped twice").isEqualTo(-1);
                fromMaps[g][s] = l * experts + e;
            }
            if (scope == SlotScope.PER_LAYER) {
                assertThat(mapped).as(at + ": residents of layer " + l).isLessThanOrEqualTo(table.units());
            }
        }
        for (int g = 0; g < table.groups(); g++) {
            int used = 0;
            int[] seen = new int[layers * experts];
            for (int s = 0; s < cap; s++) {
                int key = table.keyIn(g, s);
                assertThat(key).as(at + ": inverse of slot " + s + " of group " + g).isEqualTo(fromMaps[g][s]);
                if (key >= 0) {
                    used++;
                    assertThat(++seen[key]).as(at + ": key " + key + " in at most one slot").isEqualTo(1);
                }
            }
            assertThat(used).as(at + ": residents of group " + g).isEqualTo(table.residents(g)).isLessThanOrEqualTo(cap);
        }
    }

    @Test
    void freeSlotsAreHandedOutLowestFirstAndNewSlotsFirstAfterAGrow() {
        ExpertSlotTable table = new ExpertSlotTable("t", SlotScope.PER_LAYER, 1, 8, 3, new LruExpertPolicy(),
                new ExpertPagerCounters(1, 8));
        int[] missing = new int[8];
        assertThat(table.route(0, new int[] {5, 2, 5}, 3, missing)).isEqualTo(2);
        assertThat(table.admit(0, missing[0])).isZero();
        assertThat(table.admit(0, missing[1])).isEqualTo(1);
        table.grow(5);
        assertThat(table.route(0, new int[] {7, 6, 0}, 3, missing)).isEqualTo(3);
        assertThat(new int[] {table.admit(0, 7), table.admit(0, 6), table.admit(0, 0)}).containsExactly(3, 4, 2);
        table.checkInvariants();
    }

    @Test
    void aFullGroupEvictsTheOldestUnroutedResident() {
        ExpertPagerCounters counters = new ExpertPagerCounters(2, 6);
        ExpertSlotTable table = new ExpertSlotTable("t", SlotScope.SHARED, 2, 6, 1, new LruExpertPolicy(), counters);
        int[] missing = new int[6];
        table.route(0, new int[] {1}, 1, missing);
        table.admit(0, 1);
        table.route(1, new int[] {4}, 1, missing);
        table.admit(1, 4);
        table.route(1, new int[] {4, 2}, 2, missing); // 4 hit; 2 missing: the only unpinned resident is layer 0's expert 1
        int slot = table.admit(1, 2);
        assertThat(table.map(0)[1]).isEqualTo(-1);
        assertThat(table.map(1)[2]).isEqualTo(slot);
        assertThat(table.map(1)[4]).isNotNegative();
        var stats = counters.snapshot("t", "lru", SlotScope.SHARED, 1, 2, 4096);
        assertThat(stats.layers().get(0).evictions()).isEqualTo(1);
        assertThat(stats.layers().get(0).resident()).isZero();
        assertThat(stats.layers().get(1).resident()).isEqualTo(2);
        table.checkInvariants();
    }

    @Test
    void aPolicyOfferingAPinnedVictimIsRefused() {
        ExpertSlotTable table = new ExpertSlotTable("t", SlotScope.PER_LAYER, 1, 6, 2, new NewestFirstPolicy(),
                new ExpertPagerCounters(1, 6));
        int[] missing = new int[6];
        table.route(0, new int[] {0}, 1, missing);
        table.admit(0, 0);
        assertThat(table.route(0, new int[] {3, 4}, 2, missing)).isEqualTo(2);
        table.admit(0, 3); // takes the last free slot; the group is full for 4, and the policy offers 3
        assertThatThrownBy(() -> table.admit(0, 4)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("chose key 3").hasMessageContaining("which the current call routes");
        assertThat(table.map(0)[3]).as("the pinned expert keeps its slot").isNotNegative();
    }

    @Test
    void aPolicyOfferingAnAbsentVictimIsRefused() {
        ExpertSlotTable table = new ExpertSlotTable("t", SlotScope.PER_LAYER, 1, 6, 1, new AbsentVictimPolicy(),
                new ExpertPagerCounters(1, 6));
        int[] missing = new int[6];
        table.route(0, new int[] {0}, 1, missing);
        table.admit(0, 0);
        table.route(0, new int[] {2}, 1, missing);
        assertThatThrownBy(() -> table.admit(0, 2)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("chose key 5").hasMessageContaining("not resident");
    }

    @Test
    void badSizesAreRefusedNamingTheValues() {
        assertThatThrownBy(() -> new ExpertSlotTable("t", SlotScope.PER_LAYER, 2, 4, 5, new LruExpertPolicy(),
                new ExpertPagerCounters(2, 4))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("5 slots per layer");
    }

    private static int[][] maps(ExpertSlotTable table, int layers) {
        int[][] out = new int[layers][];
        for (int l = 0; l < layers; l++) {
            out[l] = table.map(l).clone();
        }
        return out;
    }

    private static long[] layerCounts(ExpertPagerCounters counters, int layer) {
        var l = counters.snapshot("t", "p", SlotScope.PER_LAYER, 1, 1, 1).layers().get(layer);
        return new long[] {l.hits(), l.misses(), l.evictions(), l.resident()};
    }

    /** Breaks the victim contract: offers the newest admission, pinned or not. */
    private static final class NewestFirstPolicy implements ExpertPolicy {
        private final LruExpertPolicy members = new LruExpertPolicy();
        private int newest = -1;

        @Override
        public String name() {
            return "newest";
        }

        @Override
        public void attach(int groups, int keys) {
            members.attach(groups, keys);
        }

        @Override
        public void onHit(int group, int key, long tick) {
            members.onHit(group, key, tick);
        }

        @Override
        public void onAdmit(int group, int key, long tick) {
            members.onAdmit(group, key, tick);
            newest = key;
        }

        @Override
        public void onEvict(int group, int key) {
            members.onEvict(group, key);
        }

        @Override
        public int victim(int group, Pins pins) {
            return newest;
        }

        @Override
        public int size(int group) {
            return members.size(group);
        }
    }

    /** Breaks the victim contract: offers a key that is not resident. */
    private static final class AbsentVictimPolicy implements ExpertPolicy {
        private final LruExpertPolicy members = new LruExpertPolicy();

        @Override
        public String name() {
            return "absent";
        }

        @Override
        public void attach(int groups, int keys) {
            members.attach(groups, keys);
        }

        @Override
        public void onHit(int group, int key, long tick) {
            members.onHit(group, key, tick);
        }

        @Override
        public void onAdmit(int group, int key, long tick) {
            members.onAdmit(group, key, tick);
        }

        @Override
        public void onEvict(int group, int key) {
            members.onEvict(group, key);
        }

        @Override
        public int victim(int group, Pins pins) {
            return 5;
        }

        @Override
        public int size(int group) {
            return members.size(group);
        }
    }
}
