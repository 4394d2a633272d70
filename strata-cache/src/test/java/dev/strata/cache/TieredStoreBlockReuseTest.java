package dev.strata.cache;

import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Tier;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.host.MemoryAudit;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The blocks a pressure pass evicts from a tier of uniform blocks (a slab) are kept, still
 * allocated, and serve the store's next puts there ({@link ReusableBlocks}); kept blocks are
 * bounded by the room between the watermarks, accounted, reported, and returned when the store
 * closes; no block ever holds two objects.
 */
class TieredStoreBlockReuseTest {

    private static final int BLOCK = 1024;

    /** Payload of object {@code id}: every byte derived from the id, so a mix-up shows. */
    private static MemorySegment payload(Arena arena, long id, int size) {
        MemorySegment s = arena.allocate(size);
        for (int i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (id * 31 + i * 7));
        }
        return s;
    }

    private static void assertReadsBack(TieredStore store, long id, int size) {
        try (ObjectView v = store.get(ObjectKey.of(id))) {
            assertThat(v).as("object %d", id).isNotNull();
            assertThat(v.sizeBytes()).isEqualTo(size);
            for (int i = 0; i < size; i++) {
                assertThat(v.bytes().get(ValueLayout.JAVA_BYTE, i)).as("object %d byte %d", id, i).isEqualTo((byte) (id * 31 + i * 7));
            }
        }
    }

    private static long handleOf(TieredStore store, long id) {
        List<ResidencyInfo> r = store.residencies(ObjectKey.of(id));
        assertThat(r).as("copies of object %d", id).hasSize(1);
        return r.get(0).handle();
    }

    @Test
    void aPassKeepsTheRoomBetweenTheWatermarksAndThePutsThatFollowTakeIt() {
        // 16 blocks; high 1.0, low 0.75: a pass evicts down to 12 blocks less the new object's one,
        // and may keep (16 - 12) = 4 of its victims' blocks.
        try (Arena arena = Arena.ofConfined();
             HostTier host = HostTier.slab("reuse-host", 16 * BLOCK, BLOCK)) {
            List<ObjectKey> dropped = new ArrayList<>();
            TieredStore store = TieredStore.builder().tier(host, 1.0, 0.75, PolicyKind.LRU)
                    .dropListener((key, kind, durability, size, reason) -> dropped.add(key)).build();
            Set<Long> handles = new HashSet<>();
            for (long id = 0; id < 16; id++) {
                assertThat(store.put(ObjectKey.of(id), ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE,
                        payload(arena, id, 1000))).isEqualTo(PutStatus.STORED);
                handles.add(handleOf(store, id));
            }
            assertThat(host.used()).isEqualTo(16L * BLOCK);
            assertThat(store.stats().tier("reuse-host").reusableBytes()).isZero();

            // the pass: 5 victims (0..4, least recently used), 4 blocks kept, one freed; the put takes a kept one
            assertThat(store.put(ObjectKey.of(16), ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE,
                    payload(arena, 16, 1000))).isEqualTo(PutStatus.STORED);
            assertThat(dropped).containsExactly(ObjectKey.of(0), ObjectKey.of(1), ObjectKey.of(2), ObjectKey.of(3), ObjectKey.of(4));
            StoreTierStats t = store.stats().tier("reuse-host");
            assertThat(t.reusableBytes()).as("kept after the pass").isEqualTo(3L * BLOCK);
            assertThat(t.reservedBytes()).isEqualTo(12L * BLOCK);
            assertThat(host.used()).as("the tier's bytes: the copies and the kept blocks").isEqualTo(15L * BLOCK)
                    .isEqualTo(t.reservedBytes() + t.reusableBytes());
            Set<Long> reused = new HashSet<>();
            reused.add(handleOf(store, 16));

            // three more puts take the three kept blocks: no eviction, no new block
            for (long id = 17; id < 20; id++) {
                assertThat(store.put(ObjectKey.of(id), ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE,
                        payload(arena, id, 1000))).isEqualTo(PutStatus.STORED);
                reused.add(handleOf(store, id));
            }
            assertThat(reused).as("four distinct blocks, each a victim's").hasSize(4).isSubsetOf(handles);
            assertThat(dropped).hasSize(5);
            t = store.stats().tier("reuse-host");
            assertThat(t.reusableBytes()).isZero();
            assertThat(host.used()).isEqualTo(15L * BLOCK).isEqualTo(t.reservedBytes());

            // the next put allocates the one block the pass freed; the one after starts a new pass
            assertThat(store.put(ObjectKey.of(20), ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE,
                    payload(arena, 20, 1000))).isEqualTo(PutStatus.STORED);
            assertThat(dropped).hasSize(5);
            assertThat(store.put(ObjectKey.of(21), ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE,
                    payload(arena, 21, 1000))).isEqualTo(PutStatus.STORED);
            assertThat(dropped).hasSize(10);
            for (long id = 5; id < 22; id++) {
                if (store.contains(ObjectKey.of(id))) {
                    assertReadsBack(store, id, 1000);
                }
            }
            t = store.stats().tier("reuse-host");
            assertThat(host.used()).isEqualTo(t.reservedBytes() + t.reusableBytes()).isLessThanOrEqualTo(16L * BLOCK);
            assertThat(t.reusableBytes()).isLessThanOrEqualTo(4L * BLOCK);

            String text = new MetricsSnapshot(List.of(), List.of(), store.stats(), MemoryAudit.usage()).toPrometheus();
            assertThat(text).contains("# TYPE strata_store_reusable_bytes gauge")
                    .contains("strata_store_reusable_bytes{tier=\"reuse-host\",kind=\"host\"} " + t.reusableBytes());

            store.close();
            assertThat(host.used()).as("closing the store returns the kept blocks").isZero();
        }
    }

    @Test
    void aTierWhoseWatermarksMeetHandsEachVictimsBlockToThePutThatEvictedIt() {
        try (Arena arena = Arena.ofConfined();
             HostTier host = HostTier.slab("reuse-tight", 8 * BLOCK, BLOCK)) {
            TieredStore store = TieredStore.builder().tier(host, 1.0, 1.0, PolicyKind.LRU).build();
            for (long id = 0; id < 8; id++) {
                store.put(ObjectKey.of(id), ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE, payload(arena, id, 512));
            }
            for (long id = 8; id < 40; id++) {
                long victimHandle = handleOf(store, id - 8); // LRU: the oldest goes
                assertThat(store.put(ObjectKey.of(id), ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE,
                        payload(arena, id, 512))).isEqualTo(PutStatus.STORED);
                assertThat(store.contains(ObjectKey.of(id - 8))).isFalse();
                assertThat(handleOf(store, id)).as("object %d lands in its victim's block", id).isEqualTo(victimHandle);
                assertThat(store.stats().tier("reuse-tight").reusableBytes()).isZero();
                assertThat(host.used()).isEqualTo(8L * BLOCK);
            }
            for (long id = 32; id < 40; id++) {
                assertReadsBack(store, id, 512);
            }
            store.close();
            assertThat(host.used()).isZero();
        }
    }

    @Test
    void aTierOfRequestSizedAllocationsKeepsNothing() {
        try (Arena arena = Arena.ofConfined();
             HostTier host = HostTier.create("reuse-sized", 16 * BLOCK)) {
            assertThat(host.uniformAllocationBytes()).isZero();
            TieredStore store = TieredStore.builder().tier(host, 1.0, 0.5, PolicyKind.LRU).build();
            for (long id = 0; id < 64; id++) {
                store.put(ObjectKey.of(id), ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE, payload(arena, id, 1000));
                StoreTierStats t = store.stats().tier("reuse-sized");
                assertThat(t.reusableBytes()).isZero();
                assertThat(host.used()).isEqualTo(t.reservedBytes());
            }
            store.close();
            assertThat(host.used()).isZero();
        }
    }

    @Test
    void concurrentPutsGetsAndRemovesNeverShareABlockAndTheAccountsAddUp() throws Exception {
        // a slab top tier over a request-sized lower tier: LOSSY objects drop, BACKED ones demote
        int threads = 4;
        int opsPerThread = 6_000;
        try (HostTier top = HostTier.slab("reuse-top", 64 * BLOCK, BLOCK);
             HostTier low = HostTier.create("reuse-low", 512 * BLOCK)) {
            Map<ObjectKey, Boolean> droppedKeys = new ConcurrentHashMap<>();
            TieredStore store = TieredStore.builder().tier(top, 0.9, 0.7, PolicyKind.PRIORITY_LRU).tier(low, 1.0, 0.9, PolicyKind.LRU)
                    .dropListener((key, kind, durability, size, reason) -> droppedKeys.put(key, Boolean.TRUE)).build();
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int w = 0; w < threads; w++) {
                    int worker = w;
                    futures.add(pool.submit(() -> {
                        SplittableRandom random = new SplittableRandom(100 + worker);
                        try (Arena arena = Arena.ofConfined()) {
                            for (int op = 0; op < opsPerThread; op++) {
                                long id = worker * 1_000_000L + random.nextInt(400);
                                int size = sizeOf(id);
                                int action = random.nextInt(10);
                                if (action < 6) {
                                    Durability d = (id & 3) == 0 ? Durability.BACKED : Durability.LOSSY;
                                    store.put(ObjectKey.of(id), ObjectKind.KV_BLOCK, d, PriorityClass.EVICTABLE, payload(arena, id, size));
                                } else if (action < 9) {
                                    try (ObjectView v = store.get(ObjectKey.of(id))) {
                                        if (v != null) {
                                            assertThat(v.sizeBytes()).isEqualTo(size);
                                            for (int i = 0; i < size; i += 97) {
                                                assertThat(v.bytes().get(ValueLayout.JAVA_BYTE, i)).as("object %d byte %d", id, i)
                                                        .isEqualTo((byte) (id * 31 + i * 7));
                                            }
                                        }
                                    }
                                } else {
                                    store.remove(ObjectKey.of(id));
                                }
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : futures) {
                    f.get(2, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdown();
            }
            StoreStats stats = store.stats();
            StoreTierStats t = stats.tier("reuse-top");
            assertThat(t.evictions()).as("the top tier was under pressure").isPositive();
            assertThat(stats.tier("reuse-top").demotions()).as("BACKED objects were demoted").isPositive();
            assertThat(top.used()).as("top: copies plus kept blocks").isEqualTo(t.reservedBytes() + t.reusableBytes());
            assertThat(t.reusableBytes()).isLessThanOrEqualTo((long) (64 * BLOCK * 0.9) - (long) (64 * BLOCK * 0.7));
            assertThat(low.used()).isEqualTo(stats.tier("reuse-low").reservedBytes());
            Set<Long> topHandles = new HashSet<>();
            for (int w = 0; w < threads; w++) {
                for (long n = 0; n < 400; n++) {
                    long id = w * 1_000_000L + n;
                    for (ResidencyInfo r : store.residencies(ObjectKey.of(id))) {
                        if (r.chainIndex() == 0) {
                            assertThat(topHandles.add(r.handle())).as("block %d holds one object", r.handle()).isTrue();
                        }
                    }
                    if (store.contains(ObjectKey.of(id))) {
                        assertReadsBack(store, id, sizeOf(id));
                    }
                }
            }
            store.close();
            assertThat(top.used()).isZero();
            assertThat(low.used()).isZero();
        }
    }

    private static int sizeOf(long id) {
        return 200 + (int) (id % 800);
    }

    @Test
    void theTierSaysWhenItsAllocationsAreUniformBlocks() {
        try (HostTier slab = HostTier.slab("u-slab", 8 * BLOCK, BLOCK);
             HostTier sized = HostTier.create("u-sized", 8 * BLOCK)) {
            Tier s = slab;
            assertThat(s.uniformAllocationBytes()).isEqualTo(BLOCK);
            long h = s.allocate(10);
            assertThat(s.allocationSize(h)).isEqualTo(s.uniformAllocationBytes());
            s.free(h);
            assertThat(sized.uniformAllocationBytes()).isZero();
        }
    }
}
