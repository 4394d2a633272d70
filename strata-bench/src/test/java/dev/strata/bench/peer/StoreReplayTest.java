package dev.strata.bench.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKind;
import dev.strata.cache.TieredStore;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.host.HostTier;
import org.junit.jupiter.api.Test;

class StoreReplayTest {

    @Test
    void aHostOnlyStoreServesEveryRefetchFromTheHostAndCountsEveryReference() {
        long objectBytes = 64 * 1024 + 200;
        try (HostTier host = HostTier.create("host", 64L << 20);
             TieredStore store = TieredStore.builder().tier(host, 0.95, 0.85, PolicyKind.PRIORITY_LRU).build();
             StoreReplay replay = new StoreReplay(store, ObjectKind.KV_BLOCK, Durability.LOSSY, StoreReplay.Mode.OFFLOAD_ON_EVICT,
                     objectBytes, 4, 0x4B56, 7)) {
            FetchTally t = new FetchTally();
            long[] refs = {1, 2, 3, 4, 5, 1, 2, 1, 6, 7, 8, 9, 3};
            for (long id : refs) {
                replay.reference(id, t);
            }
            assertThat(t.references()).isEqualTo(refs.length);
            assertThat(t.cold()).isEqualTo(9); // ids 1..9 first seen
            assertThat(t.deviceHits()).isEqualTo(1); // the second 1 after 2: 1 was refetched into the device, then hit
            assertThat(t.hostFetches()).isEqualTo(3); // 1, 2 (evicted by 5 and 1), 3 (evicted long before)
            assertThat(t.peerFetches()).isZero();
            assertThat(t.lost()).isZero();
            assertThat(t.hostBytes()).isEqualTo(3 * objectBytes);
            assertThat(t.wrongBytes()).isZero();
            assertThat(t.offloads()).isEqualTo(6); // 1, 2, 3, 4, 5, 6 on first eviction; 1 and 2 again are already stored
            assertThat(replay.deviceObjects()).isEqualTo(4);
        }
    }

    @Test
    void mastersAreStoredOnceAndNothingIsWrittenOnEviction() {
        long objectBytes = 32 * 1024 + 8;
        try (HostTier host = HostTier.create("host", 16L << 20);
             TieredStore store = TieredStore.builder().tier(host, 0.95, 0.85, PolicyKind.PRIORITY_LRU).build();
             StoreReplay replay = new StoreReplay(store, ObjectKind.EXPERT, Durability.BACKED, StoreReplay.Mode.MASTERS,
                     objectBytes, 2, 0xE7, 3)) {
            FetchTally t = new FetchTally();
            assertThat(replay.preload(new long[] {10, 11, 12}, t)).isZero();
            for (long id : new long[] {10, 11, 12, 10, 10}) {
                replay.reference(id, t);
            }
            assertThat(t.cold()).isZero();
            assertThat(t.hostFetches()).isEqualTo(4);
            assertThat(t.deviceHits()).isEqualTo(1);
            assertThat(t.offloads()).isZero();
            assertThat(store.size()).isEqualTo(3);
            assertThat(t.wrongBytes()).isZero();
        }
    }
}
