package dev.strata.cache;

import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Tier;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static dev.strata.cache.Durability.BACKED;
import static dev.strata.cache.Durability.LOSSY;
import static dev.strata.cache.ObjectKind.EXPERT;
import static dev.strata.cache.ObjectKind.KV_BLOCK;
import static dev.strata.cache.PriorityClass.ACTIVE;
import static dev.strata.cache.PriorityClass.EVICTABLE;
import static dev.strata.cache.PriorityClass.IDLE;
import static dev.strata.cache.PriorityClass.RECENT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Behaviour of the tiered store over real DEVICE (CPU backend) and HOST tiers. */
class TieredStoreTest {
    private static final long PAGE = 4096;

    private final SplittableRandom random = new SplittableRandom(0xC0FFEE);
    private final List<Tier> tiers = new ArrayList<>();
    private final Map<ObjectKey, byte[]> written = new HashMap<>();
    private final List<String> drops = new ArrayList<>();

    private DeviceTier device(long pages) {
        DeviceTier t = DeviceTier.cpu("device", pages * PAGE);
        tiers.add(t);
        return t;
    }

    private HostTier host(String name, long pages) {
        HostTier t = HostTier.create(name, pages * PAGE);
        tiers.add(t);
        return t;
    }

    @AfterEach
    void closeTiers() {
        for (Tier t : tiers) {
            t.close();
        }
    }

    private TieredStore.Builder builder() {
        return TieredStore.builder().dropListener((key, kind, durability, size, reason) -> drops.add(key + ":" + reason));
    }

    /** Puts an object of an odd size (one page or less after rounding) with seeded bytes. */
    private PutStatus put(TieredStore store, long id, Durability d, PriorityClass p) {
        return put(store, id, d, p, 1000 + random.nextInt(3000), 0);
    }

    private PutStatus put(TieredStore store, long id, Durability d, PriorityClass p, int size, int target) {
        byte[] bytes = TestBytes.random(random, size);
        ObjectKey key = ObjectKey.of(id);
        PutStatus s = store.put(key, KV_BLOCK, d, p, TestBytes.segment(bytes), target);
        if (s == PutStatus.STORED) {
            written.put(key, bytes);
        }
        return s;
    }

    private void assertBytes(TieredStore store, long id) {
        ObjectKey key = ObjectKey.of(id);
        try (ObjectView v = store.get(key)) {
            assertThat(v).as("object %s", key).isNotNull();
            assertThat(TestBytes.toArray(v.bytes())).isEqualTo(written.get(key));
        }
    }

    private static void assertAccounting(TieredStore store) {
        StoreStats stats = store.stats();
        for (Tier t : store.tiers()) {
            StoreTierStats m = stats.tier(t.name());
            assertThat(m.reservedBytes()).as("reserved bytes of '%s'", t.name()).isEqualTo(t.used());
            assertThat(t.used()).isLessThanOrEqualTo(t.capacity());
        }
    }

    /** contains, tierMask and size run without the lock while another thread's puts evict. */
    @Test
    void lockFreeQueriesSeePinnedObjectsWhilePutsEvict() throws Exception {
        HostTier host = host("host", 64);
        try (TieredStore store = builder().tier(host).build()) {
            int pinned = 8;
            for (int i = 0; i < pinned; i++) {
                assertThat(put(store, 5000 + i, Durability.LOSSY, PriorityClass.IDLE, 300 + i, 0)).isEqualTo(PutStatus.STORED);
                assertThat(store.pin(ObjectKey.of(5000 + i))).isTrue();
            }
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            java.util.concurrent.atomic.AtomicReference<String> failure = new java.util.concurrent.atomic.AtomicReference<>();
            Thread reader = new Thread(() -> {
                long reads = 0;
                while ((!stop.get() || reads < 1000) && failure.get() == null) {
                    ObjectKey key = ObjectKey.of(5000 + reads % pinned);
                    if (!store.contains(key) || store.tierMask(key) != 1) {
                        failure.set("pinned " + key + " not seen in tier 0");
                    }
                    if (store.contains(ObjectKey.of(-1 - reads % 7)) || store.size() < pinned) {
                        failure.set("absent key seen or size below the pinned objects: " + store.size());
                    }
                    reads++;
                }
            });
            reader.start();
            for (int i = 0; i < 4000; i++) {
                assertThat(put(store, 10_000 + i, Durability.LOSSY, PriorityClass.EVICTABLE, 100 + random.nextInt(1900), 0))
                        .isEqualTo(PutStatus.STORED);
            }
            stop.set(true);
            reader.join();
            assertThat(failure.get()).isNull();
            assertThat(drops).isNotEmpty();
            store.checkPlacement();
            for (int i = 0; i < pinned; i++) {
                assertBytes(store, 5000 + i);
                assertThat(store.unpin(ObjectKey.of(5000 + i))).isTrue();
            }
            assertAccounting(store);
        }
    }

    @Test
    void putsBeyondTheTopTierDemoteDownTheChain() {
        DeviceTier dev = device(8);
        HostTier host = host("host", 64);
        try (TieredStore store = builder().tier(dev, 0.9, 0.6, PolicyKind.PRIORITY_LRU).tier(host).build()) {
            for (int i = 0; i < 30; i++) {
                assertThat(put(store, i, BACKED, EVICTABLE)).isEqualTo(PutStatus.STORED);
                assertThat(dev.used()).isLessThanOrEqualTo((long) (0.9 * dev.capacity()));
                assertAccounting(store);
            }
            StoreStats stats = store.stats();
            assertThat(stats.tier("device").demotions()).isGreaterThan(0);
            assertThat(stats.tier("device").residentObjects() + stats.tier("host").residentObjects()).isEqualTo(30);
            assertThat(stats.tier("host").bytesIn()).isEqualTo(stats.tier("device").bytesOut()).isPositive();
            // the most recent objects are on top, the oldest below
            assertThat(store.tierMask(ObjectKey.of(29))).isEqualTo(0b01);
            assertThat(store.tierMask(ObjectKey.of(0))).isEqualTo(0b10);
            for (int i = 0; i < 30; i++) {
                assertBytes(store, i);
            }
            assertThat(drops).isEmpty();
        }
        assertThat(dev.used()).isZero();
        assertThat(host.used()).isZero();
    }

    @Test
    void getFindsLowerCopiesAndPromotesToTheTop() {
        DeviceTier dev = device(4);
        HostTier host = host("host", 32);
        try (TieredStore store = builder().tier(dev, 1.0, 0.75, PolicyKind.LRU).tier(host).promotion(PromotionRule.toTop()).build()) {
            for (int i = 0; i < 10; i++) {
                put(store, i, LOSSY, IDLE);
            }
            assertThat(store.tierMask(ObjectKey.of(0))).isEqualTo(0b10);
            try (ObjectView v = store.get(ObjectKey.of(0))) {
                assertThat(v.tierName()).isEqualTo("device");
                assertThat(TestBytes.toArray(v.bytes())).isEqualTo(written.get(ObjectKey.of(0)));
            }
            assertThat(store.tierMask(ObjectKey.of(0))).isEqualTo(0b11); // inclusive: the host copy stays
            assertThat(store.residencies(ObjectKey.of(0))).extracting(ResidencyInfo::tierName).containsExactly("device", "host");
            StoreStats stats = store.stats();
            assertThat(stats.tier("device").promotions()).isEqualTo(1);
            assertThat(stats.tier("host").hits()).isEqualTo(1);
            assertThat(stats.tier("device").misses()).isEqualTo(1);
            assertThat(drops).isEmpty();
            assertAccounting(store);
        }
    }

    @Test
    void neverPromotingServesFromTheLowerTier() {
        DeviceTier dev = device(4);
        HostTier host = host("host", 32);
        try (TieredStore store = builder().tier(dev, 1.0, 0.5, PolicyKind.PRIORITY_LRU).tier(host)
                .promotion(PromotionRule.never()).build()) {
            for (int i = 0; i < 10; i++) {
                put(store, i, BACKED, RECENT);
            }
            try (ObjectView v = store.get(ObjectKey.of(1))) {
                assertThat(v.tierName()).isEqualTo("host");
            }
            assertThat(store.tierMask(ObjectKey.of(1))).isEqualTo(0b10);
            assertThat(store.stats().tier("device").promotions()).isZero();
        }
    }

    @Test
    void aViewPinsItsObjectUntilClosed() {
        DeviceTier dev = device(4);
        HostTier host = host("host", 64);
        try (TieredStore store = builder().tier(dev, 1.0, 0.5, PolicyKind.PRIORITY_LRU).tier(host).build()) {
            put(store, 100, LOSSY, EVICTABLE);
            ObjectView view = store.get(ObjectKey.of(100));
            assertThat(store.pinCount(ObjectKey.of(100))).isEqualTo(1);
            for (int i = 0; i < 40; i++) {
                put(store, i, LOSSY, RECENT);
            }
            assertThat(store.tierMask(ObjectKey.of(100))).isEqualTo(0b01); // stayed on top through the pressure
            assertThat(TestBytes.toArray(view.bytes())).isEqualTo(written.get(ObjectKey.of(100)));
            view.close();
            view.close(); // idempotent
            assertThat(store.pinCount(ObjectKey.of(100))).isZero();
            assertThatThrownBy(view::bytes).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            for (int i = 40; i < 60; i++) {
                put(store, i, LOSSY, RECENT);
            }
            assertThat(store.tierMask(ObjectKey.of(100))).isEqualTo(0b10); // evictable again
        }
    }

    @Test
    void explicitPinsAndActiveObjectsAreNeverEvicted() {
        DeviceTier dev = device(4);
        HostTier host = host("host", 64);
        try (TieredStore store = builder().tier(dev, 1.0, 0.5, PolicyKind.TINY_LFU).tier(host).build()) {
            put(store, 1, BACKED, ACTIVE, 4000, 0);
            put(store, 2, BACKED, IDLE, 4000, 0);
            assertThat(store.pin(ObjectKey.of(2))).isTrue();
            for (int i = 10; i < 40; i++) {
                assertThat(put(store, i, BACKED, EVICTABLE)).isEqualTo(PutStatus.STORED);
            }
            assertThat(store.tierMask(ObjectKey.of(1))).isEqualTo(0b01);
            assertThat(store.tierMask(ObjectKey.of(2))).isEqualTo(0b01);
            assertThat(store.unpin(ObjectKey.of(2))).isTrue();
            assertThatThrownBy(() -> store.unpin(ObjectKey.of(2))).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(ObjectKey.of(2).toString());
            assertThat(store.setPriority(ObjectKey.of(1), EVICTABLE)).isTrue();
            for (int i = 40; i < 60; i++) {
                put(store, i, BACKED, EVICTABLE);
            }
            assertThat(store.tierMask(ObjectKey.of(1))).isEqualTo(0b10);
            assertBytes(store, 1);
            assertBytes(store, 2);
            assertAccounting(store);
        }
    }

    @Test
    void thePrefixAwarePolicyDrivesTheStoreWithPinsSkipsAndDemotions() {
        DeviceTier dev = device(4);
        HostTier host = host("host", 6);
        try (TieredStore store = builder().tier(dev, 1.0, 0.5, PolicyKind.PREFIX_AWARE)
                .tier(host, 1.0, 1.0, PolicyKind.PREFIX_AWARE).build()) {
            put(store, 1, BACKED, ACTIVE, 4000, 0);
            put(store, 2, BACKED, IDLE, 4000, 0);
            assertThat(store.pin(ObjectKey.of(2))).isTrue();
            int stored = 0;
            for (int i = 10; i < 30; i++) { // fills device, demotes to host, then BACKED victims are skipped and puts refused
                PutStatus st = put(store, i, BACKED, EVICTABLE);
                if (st == PutStatus.STORED) {
                    stored++;
                } else {
                    assertThat(st).isEqualTo(PutStatus.REFUSED_NO_SPACE);
                }
            }
            assertThat(stored).isBetween(4, 8);
            assertThat(store.tierMask(ObjectKey.of(1))).isEqualTo(0b01);
            assertThat(store.tierMask(ObjectKey.of(2))).isEqualTo(0b01);
            assertThat(store.unpin(ObjectKey.of(2))).isTrue();
            assertThat(drops).isEmpty();
            for (ObjectKey k : written.keySet()) {
                assertBytes(store, k.low());
            }
            assertAccounting(store);
        }
    }

    @Test
    void backedObjectsAreRefusedRatherThanDropped() {
        DeviceTier dev = device(3);
        HostTier host = host("host", 5);
        try (TieredStore store = builder().tier(dev).tier(host).build()) {
            int stored = 0;
            for (int i = 0; i < 12; i++) {
                PutStatus s = put(store, i, BACKED, EVICTABLE, 3000, 0);
                if (s == PutStatus.STORED) {
                    stored++;
                } else {
                    assertThat(s).isEqualTo(PutStatus.REFUSED_NO_SPACE);
                }
            }
            assertThat(stored).isBetween(6, 8);
            assertThat(drops).isEmpty();
            for (ObjectKey k : written.keySet()) {
                assertBytes(store, k.low());
            }
            StoreStats stats = store.stats();
            assertThat(stats.refusedPuts()).isEqualTo(12 - stored);
            assertThat(stats.tier("device").refusedPuts()).isEqualTo(12 - stored);
            // a LOSSY object is refused too: making room would drop a BACKED one
            assertThat(put(store, 99, LOSSY, EVICTABLE, 3000, 0)).isEqualTo(PutStatus.REFUSED_NO_SPACE);
            assertThat(put(store, 98, BACKED, EVICTABLE, 50 * 4096, 0)).isEqualTo(PutStatus.REFUSED_TOO_LARGE);
        }
    }

    @Test
    void lossyObjectsLeavingTheLastTierAreReportedOnce() {
        DeviceTier dev = device(3);
        HostTier host = host("host", 5);
        try (TieredStore store = builder().tier(dev).tier(host).build()) {
            for (int i = 0; i < 30; i++) {
                assertThat(put(store, i, LOSSY, EVICTABLE, 2000, 0)).isEqualTo(PutStatus.STORED);
            }
            assertThat(drops).hasSizeGreaterThan(20).doesNotHaveDuplicates().allMatch(s -> s.endsWith(":EVICTED"));
            for (int i = 0; i < 30; i++) {
                ObjectKey k = ObjectKey.of(i);
                boolean dropped = drops.contains(k + ":EVICTED");
                assertThat(store.contains(k)).as("object %s dropped %s", k, dropped).isNotEqualTo(dropped);
            }
            StoreStats stats = store.stats();
            assertThat(stats.dropsReported()).isEqualTo(drops.size());
            assertThat(stats.tier("host").drops()).isEqualTo(drops.size());
            assertThat(stats.objects()).isEqualTo(30 - drops.size());
            assertAccounting(store);
        }
    }

    @Test
    void largeObjectsAreStoredAndDemotedExactly() {
        DeviceTier dev = device(64);
        HostTier host = host("host", 256);
        try (TieredStore store = builder().tier(dev).tier(host).build()) {
            int size = (int) TieredStore.WRITE_OUTSIDE_LOCK_BYTES + 12_345;
            for (int i = 0; i < 8; i++) {
                assertThat(put(store, i, BACKED, IDLE, size, 0)).isEqualTo(PutStatus.STORED);
            }
            assertThat(put(store, 3, BACKED, IDLE, size, 0)).isEqualTo(PutStatus.ALREADY_PRESENT);
            assertThat(store.stats().tier("device").demotions()).isPositive();
            for (int i = 0; i < 8; i++) {
                assertBytes(store, i);
            }
            assertAccounting(store);
        }
    }

    @Test
    void aFailingListenerStillHearsOfEveryDropOnce() {
        DeviceTier dev = device(4);
        List<ObjectKey> heard = new ArrayList<>();
        try (TieredStore store = TieredStore.builder().tier(dev, 1.0, 0.25, PolicyKind.LRU)
                .dropListener((key, kind, durability, size, reason) -> {
                    heard.add(key);
                    throw new IllegalStateException("listener failed for " + key);
                }).build()) {
            for (int i = 0; i < 4; i++) {
                put(store, i, LOSSY, IDLE, 4000, 0);
            }
            assertThatThrownBy(() -> put(store, 4, LOSSY, IDLE, 4000, 0)).hasMessageContaining("listener failed");
            // back to the low watermark (one page) with room for the new object: all four leave
            assertThat(heard).containsExactly(ObjectKey.of(0), ObjectKey.of(1), ObjectKey.of(2), ObjectKey.of(3));
            assertThat(store.contains(ObjectKey.of(4))).isTrue();
            assertThat(store.stats().dropsReported()).isEqualTo(4);
        }
    }

    @Test
    void putOfAStoredKeyLeavesItUnchangedAndATargetTierIsHonoured() {
        DeviceTier dev = device(4);
        HostTier host = host("host", 8);
        try (TieredStore store = builder().tier(dev).tier(host).build()) {
            assertThat(put(store, 7, BACKED, RECENT, 999, 1)).isEqualTo(PutStatus.STORED);
            assertThat(store.tierMask(ObjectKey.of(7))).isEqualTo(0b10);
            byte[] first = written.get(ObjectKey.of(7));
            assertThat(store.put(ObjectKey.of(7), EXPERT, LOSSY, IDLE, TestBytes.segment(new byte[]{1, 2, 3})))
                    .isEqualTo(PutStatus.ALREADY_PRESENT);
            try (ObjectView v = store.get(ObjectKey.of(7))) {
                assertThat(v.kind()).isEqualTo(KV_BLOCK);
                assertThat(TestBytes.toArray(v.bytes())).isEqualTo(first);
            }
            assertThatThrownBy(() -> store.put(ObjectKey.of(8), KV_BLOCK, LOSSY, IDLE, TestBytes.segment(new byte[1]), 2))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tier index 2");
        }
    }

    @Test
    void removeFreesEveryCopyEvenAfterPromotionsAndWhilePinned() {
        DeviceTier dev = device(6);
        HostTier host = host("host", 40);
        try (TieredStore store = builder().tier(dev, 0.9, 0.5, PolicyKind.PRIORITY_LRU).tier(host).build()) {
            for (int i = 0; i < 25; i++) {
                put(store, i, i % 2 == 0 ? BACKED : LOSSY, i % 3 == 0 ? RECENT : IDLE);
            }
            for (int i = 0; i < 25; i += 3) {
                assertBytes(store, i); // promotes
            }
            ObjectView pinned = store.get(ObjectKey.of(4));
            assertThat(store.remove(ObjectKey.of(4))).isTrue();
            assertThat(store.contains(ObjectKey.of(4))).isFalse();
            assertThat(store.remove(ObjectKey.of(4))).isFalse();
            assertThat(TestBytes.toArray(pinned.bytes())).isEqualTo(written.get(ObjectKey.of(4)));
            for (int i = 0; i < 25; i++) {
                store.remove(ObjectKey.of(i));
            }
            assertThat(dev.used() + host.used()).isPositive(); // the pinned object's copies
            pinned.close();
            assertThat(dev.used()).isZero();
            assertThat(host.used()).isZero();
            assertThat(dev.allocationCount() + host.allocationCount()).isZero();
            assertThat(drops).isEmpty();
            assertThat(store.stats().objects()).isZero();
        }
    }

    @Test
    void aCorruptCopyIsDiscardedAndTheNextCopyServes() {
        DeviceTier dev = device(2);
        CorruptingTier mid = new CorruptingTier(host("mid", 8));
        CorruptingTier low = new CorruptingTier(host("low", 8));
        try (TieredStore store = builder().tier(dev).tier(mid).tier(low).promotion(PromotionRule.oneLevelUp()).build()) {
            ObjectKey key = ObjectKey.of(5);
            put(store, 5, BACKED, IDLE, 3333, 2);
            try (ObjectView v = store.get(key)) { // served from low, promoted to mid
                assertThat(v.tierName()).isEqualTo("mid");
                assertThat(TestBytes.toArray(v.bytes())).isEqualTo(written.get(key));
            }
            assertThat(store.tierMask(key)).isEqualTo(0b110);
            mid.corrupt(store.residencies(key).getFirst().handle());
            try (ObjectView v = store.get(key)) {
                assertThat(v.tierName()).isEqualTo("low");
                assertThat(TestBytes.toArray(v.bytes())).isEqualTo(written.get(key));
            }
            StoreStats stats = store.stats();
            assertThat(stats.tier("mid").corruptCopies()).isEqualTo(1);
            assertThat(store.tierMask(key)).isEqualTo(0b100);
            assertThat(drops).isEmpty();

            // the last copy corrupt: a miss, reported once
            low.corrupt(store.residencies(key).getFirst().handle());
            assertThat(store.get(key)).isNull();
            assertThat(store.get(key)).isNull();
            assertThat(drops).containsExactly(key + ":CORRUPT");
            assertThat(store.contains(key)).isFalse();
            assertAccounting(store);
            assertThat(store.stats().tier("low").corruptCopies()).isEqualTo(1);
        }
    }

    @Test
    void aCorruptSourceDuringDemotionDropsALossyObjectOnce() {
        DeviceTier dev = device(8);
        CorruptingTier mid = new CorruptingTier(host("mid", 2));
        HostTier low = host("low", 16);
        try (TieredStore store = builder().tier(dev).tier(mid, 1.0, 0.5, PolicyKind.LRU).tier(low).build()) {
            put(store, 1, LOSSY, IDLE, 3000, 1);
            mid.corrupt(store.residencies(ObjectKey.of(1)).getFirst().handle());
            put(store, 2, LOSSY, IDLE, 3000, 1);
            put(store, 3, LOSSY, IDLE, 3000, 1); // pressure on mid: object 1 cannot be copied down
            assertThat(drops).containsExactly(ObjectKey.of(1) + ":CORRUPT");
            assertThat(store.contains(ObjectKey.of(1))).isFalse();
            assertBytes(store, 2);
            assertBytes(store, 3);
            assertThat(store.stats().tier("mid").corruptCopies()).isEqualTo(1);
            assertAccounting(store);
        }
    }

    @Test
    void configurationMistakesAreNamed() {
        DeviceTier dev = device(2);
        assertThatThrownBy(() -> TieredStore.builder().build()).hasMessageContaining("at least one tier");
        assertThatThrownBy(() -> TieredStore.builder().tier(dev, 0.5, 0.7, PolicyKind.LRU).build())
                .hasMessageContaining("low 0.7, high 0.5");
        assertThatThrownBy(() -> TieredStore.builder().tier(dev).tier(dev).build()).hasMessageContaining("twice");
        assertThatThrownBy(() -> PolicyKind.parse("fifo")).hasMessageContaining("fifo");
        assertThat(PolicyKind.parse("tiny-lfu")).isEqualTo(PolicyKind.TINY_LFU);
    }

    @Test
    void keysPrintAndParseAsHex() {
        ObjectKey k = new ObjectKey(0x0123_4567_89AB_CDEFL, -2L);
        assertThat(k.toString()).isEqualTo("0123456789abcdeffffffffffffffffe");
        assertThat(ObjectKey.parse(k.toString())).isEqualTo(k);
        assertThat(ObjectKey.parse(ObjectKey.of(5).toString())).isEqualTo(ObjectKey.of(5));
        assertThatThrownBy(() -> ObjectKey.parse("xyz")).hasMessageContaining("'xyz'");
        assertThatThrownBy(() -> ObjectKey.parse("0123456789abcdeffffffffffffffffg")).hasMessageContaining("not hex");
    }

    @Test
    void theEvictionSinkSeesEveryCopyLeavingHostWithItsBytesAndNothingElse() {
        Map<ObjectKey, byte[]> seen = new HashMap<>();
        TieredStore store = builder().tier(device(4)).tier(host("host", 4))
                .evictionSink((key, kind, bytes) -> {
                    assertThat(kind).isEqualTo(KV_BLOCK);
                    assertThat(seen.put(key, bytes.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE))).as("once per copy").isNull();
                }).build();
        for (long id = 1; id <= 12; id++) {
            assertThat(put(store, id, LOSSY, RECENT)).isEqualTo(PutStatus.STORED);
        }
        // DEVICE evictions demote into HOST and are not reported; HOST evictions drop, and each is reported first
        assertThat(seen).isNotEmpty();
        assertThat(seen.size()).isEqualTo(drops.size());
        for (Map.Entry<ObjectKey, byte[]> e : seen.entrySet()) {
            assertThat(drops).contains(e.getKey() + ":EVICTED");
            assertThat(e.getValue()).as("the bytes of %s as they were put", e.getKey()).isEqualTo(written.get(e.getKey()));
            assertThat(store.contains(e.getKey())).isFalse();
        }
        store.close();
    }
}
