package dev.strata.cache;

import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.host.HostTier;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** The store's gather-put and the per-tier admission filter for demoted copies. */
class TieredStoreGatherAdmissionTest {

    @Test
    void gatherPutStoresTheConcatenationOfItsParts() {
        try (HostTier host = HostTier.create("gather-host", 64 * 1024)) {
            TieredStore store = TieredStore.builder().tier(host).build();
            SplittableRandom r = new SplittableRandom(3);
            byte[][] parts = {TestBytes.random(r, 37), TestBytes.random(r, 1000), TestBytes.random(r, 5)};
            List<MemorySegment> segs = new ArrayList<>();
            for (byte[] p : parts) {
                segs.add(TestBytes.segment(p));
            }
            ObjectKey key = ObjectKey.of(9);
            assertThat(store.put(key, ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.RECENT, segs, 0))
                    .isEqualTo(PutStatus.STORED);
            byte[] expected = new byte[37 + 1000 + 5];
            System.arraycopy(parts[0], 0, expected, 0, 37);
            System.arraycopy(parts[1], 0, expected, 37, 1000);
            System.arraycopy(parts[2], 0, expected, 1037, 5);
            try (ObjectView v = store.get(key)) {
                assertThat(v.sizeBytes()).isEqualTo(expected.length);
                assertThat(TestBytes.toArray(v.bytes())).isEqualTo(expected);
            }
            store.close();
        }
    }

    @Test
    void aTierTakesOnlyTheDemotedCopiesItsFilterAdmits() {
        Set<ObjectKey> dropped = new HashSet<>();
        try (HostTier top = HostTier.slab("adm-top", 4 * 1024, 1024);
             HostTier low = HostTier.slab("adm-low", 16 * 1024, 1024)) {
            TieredStore store = TieredStore.builder()
                    .dropListener((key, kind, durability, size, reason) -> assertThat(dropped.add(key)).isTrue())
                    .tier(top, 1.0, 1.0, PolicyKind.LRU)
                    .tier(low, 1.0, 1.0, PolicyKind.LRU)
                    .admission((key, kind, size) -> key.low() % 2 == 0) // only even ids go down
                    .build();
            SplittableRandom r = new SplittableRandom(4);
            for (long id = 1; id <= 8; id++) {
                Durability d = id == 3 ? Durability.BACKED : Durability.LOSSY;
                store.put(ObjectKey.of(id), ObjectKind.KV_BLOCK, d, PriorityClass.RECENT,
                        TestBytes.segment(TestBytes.random(r, 900)), 0);
            }
            for (long id = 1; id <= 8; id++) {
                ObjectKey k = ObjectKey.of(id);
                int mask = store.tierMask(k);
                if ((mask & 2) != 0) {
                    assertThat(id % 2).as("only admitted ids reach the lower tier").isZero();
                }
                if (id == 3) {
                    assertThat(store.contains(k)).as("a BACKED object is never dropped").isTrue();
                }
                assertThat(store.contains(k) ^ dropped.contains(k)).as("id %d stored or reported dropped, once", id).isTrue();
            }
            assertThat(dropped).as("odd LOSSY ids pushed out of the top tier are dropped")
                    .contains(ObjectKey.of(1)).doesNotContain(ObjectKey.of(2), ObjectKey.of(3));
            store.checkPlacement();
            store.close();
        }
    }
}
