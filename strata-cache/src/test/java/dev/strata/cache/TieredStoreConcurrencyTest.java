package dev.strata.cache;

import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Tier;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several threads doing random operations on one store over a tiny DEVICE → HOST chain, each on
 * its own keys (never reused) so that each thread's model is exact; the pressure, eviction and
 * drops cross threads. Afterwards: every BACKED object not removed is stored with its exact
 * bytes, every LOSSY object is either stored with its exact bytes or reported dropped exactly
 * once, never both; the tiers' used bytes equal the store's copies and return to zero.
 */
class TieredStoreConcurrencyTest {
    private static final long PAGE = 4096;
    private static final int THREADS = 4;
    private static final int OPS = 4000;

    private record Expected(byte[] bytes, Durability durability) {
    }

    /** One thread's objects. */
    private static final class Model {
        final Map<ObjectKey, Expected> live = new HashMap<>(); // stored and not removed (maybe dropped since)
        final Map<ObjectKey, Integer> pins = new HashMap<>();
        final List<ObjectKey> removed = new ArrayList<>(); // removed while stored: never reported
        final List<ObjectKey> removeMissed = new ArrayList<>(); // remove found nothing: must have been dropped
    }

    @Test
    void concurrentOperationsKeepEveryInvariant() throws Exception {
        for (long seed : new long[]{11, 12}) {
            run(seed);
        }
    }

    private void run(long seed) throws Exception {
        ConcurrentHashMap<ObjectKey, AtomicInteger> dropReports = new ConcurrentHashMap<>();
        try (DeviceTier dev = DeviceTier.cpu("device", 16 * PAGE); HostTier host = HostTier.create("host", 40 * PAGE)) {
            TieredStore store = TieredStore.builder()
                    .tier(dev, 0.9, 0.6, PolicyKind.PRIORITY_LRU)
                    .tier(host, 0.95, 0.7, seed % 2 == 0 ? PolicyKind.TINY_LFU : PolicyKind.LRU)
                    .dropListener((key, kind, durability, size, reason) -> {
                        assertThat(durability).isEqualTo(Durability.LOSSY);
                        dropReports.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                    })
                    .build();
            try (store) {
                ExecutorService pool = Executors.newFixedThreadPool(THREADS);
                CyclicBarrier start = new CyclicBarrier(THREADS);
                List<Future<Model>> futures = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    int thread = t;
                    futures.add(pool.submit(() -> {
                        start.await();
                        return work(store, thread, new SplittableRandom(seed * 31 + thread));
                    }));
                }
                List<Model> models = new ArrayList<>();
                for (Future<Model> f : futures) {
                    models.add(f.get(2, TimeUnit.MINUTES));
                }
                pool.shutdown();
                verify(store, models, dropReports, List.of(dev, host));
            }
            assertThat(dev.used()).isZero();
            assertThat(host.used()).isZero();
        }
    }

    @Test
    void largeObjectsRacingForTheSameKeysStayExact() throws Exception {
        try (DeviceTier dev = DeviceTier.cpu("device", 2L << 20); HostTier host = HostTier.create("host", 4L << 20)) {
            TieredStore store = TieredStore.builder().tier(dev, 0.9, 0.6, PolicyKind.PRIORITY_LRU).tier(host).build();
            try (store) {
                ExecutorService pool = Executors.newFixedThreadPool(3);
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < 3; t++) {
                    SplittableRandom random = new SplittableRandom(100 + t);
                    futures.add(pool.submit(() -> {
                        for (int i = 0; i < 300; i++) {
                            int id = random.nextInt(40);
                            ObjectKey key = ObjectKey.of(id);
                            byte[] bytes = contentOf(id); // keys are content identities
                            if (random.nextBoolean()) {
                                PutStatus s = store.put(key, ObjectKind.EXPERT, Durability.LOSSY, PriorityClass.IDLE, TestBytes.segment(bytes));
                                assertThat(s).isIn(PutStatus.STORED, PutStatus.ALREADY_PRESENT);
                            } else {
                                try (ObjectView v = store.get(key)) {
                                    if (v != null) {
                                        assertThat(TestBytes.toArray(v.bytes())).as("bytes of %s", key).isEqualTo(bytes);
                                    }
                                }
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : futures) {
                    f.get(2, TimeUnit.MINUTES);
                }
                pool.shutdown();
                StoreStats stats = store.stats();
                assertThat(dev.used()).isEqualTo(stats.tier("device").reservedBytes());
                assertThat(host.used()).isEqualTo(stats.tier("host").reservedBytes());
                for (int id = 0; id < 40; id++) {
                    ObjectKey key = ObjectKey.of(id);
                    for (ResidencyInfo r : store.residencies(key)) {
                        byte[] actual = new byte[contentOf(id).length];
                        assertThat((r.chainIndex() == 0 ? (Tier) dev : host).read(r.handle(), TestBytes.segment(actual))).isTrue();
                        assertThat(actual).isEqualTo(contentOf(id));
                    }
                    store.remove(key);
                }
            }
            assertThat(dev.used()).isZero();
            assertThat(host.used()).isZero();
        }
    }

    /** The bytes of large object {@code id}: 64 to 200 KiB, odd sizes, seeded by the id. */
    private static byte[] contentOf(int id) {
        SplittableRandom r = new SplittableRandom(id * 7919L);
        return TestBytes.random(r, (int) TieredStore.WRITE_OUTSIDE_LOCK_BYTES + r.nextInt(136 * 1024) + 1);
    }

    private static Model work(TieredStore store, int thread, SplittableRandom random) {
        Model m = new Model();
        List<ObjectKey> keys = new ArrayList<>();
        long next = 0;
        PriorityClass[] classes = PriorityClass.values();
        for (int i = 0; i < OPS; i++) {
            int op = random.nextInt(100);
            if (op < 35 || keys.isEmpty()) {
                ObjectKey key = new ObjectKey(thread, next++);
                byte[] bytes = TestBytes.random(random, 1 + random.nextInt(6000));
                Durability d = random.nextInt(4) == 0 ? Durability.BACKED : Durability.LOSSY;
                PriorityClass p = random.nextInt(20) == 0 ? PriorityClass.ACTIVE : classes[1 + random.nextInt(3)];
                PutStatus s = store.put(key, ObjectKind.KV_BLOCK, d, p, TestBytes.segment(bytes));
                assertThat(s).isNotEqualTo(PutStatus.ALREADY_PRESENT);
                if (s == PutStatus.STORED) {
                    m.live.put(key, new Expected(bytes, d));
                    keys.add(key);
                }
                continue;
            }
            ObjectKey key = keys.get(random.nextInt(keys.size()));
            Expected e = m.live.get(key);
            if (op < 65) {
                try (ObjectView v = store.get(key)) {
                    if (v == null) {
                        assertThat(e.durability()).as("BACKED %s missing", key).isEqualTo(Durability.LOSSY);
                    } else {
                        assertThat(TestBytes.toArray(v.bytes())).as("bytes of %s", key).isEqualTo(e.bytes());
                    }
                }
            } else if (op < 75) {
                if (store.pin(key)) {
                    m.pins.merge(key, 1, Integer::sum);
                }
            } else if (op < 85) {
                Integer pins = m.pins.get(key);
                if (pins != null) {
                    assertThat(store.unpin(key)).isTrue();
                    if (pins == 1) {
                        m.pins.remove(key);
                    } else {
                        m.pins.put(key, pins - 1);
                    }
                }
            } else if (op < 92) {
                store.setPriority(key, classes[random.nextInt(classes.length)]);
            } else {
                boolean removed = store.remove(key);
                if (e.durability() == Durability.BACKED || m.pins.containsKey(key)) {
                    assertThat(removed).as("remove of %s", key).isTrue();
                }
                (removed ? m.removed : m.removeMissed).add(key);
                m.live.remove(key);
                keys.remove(key);
                Integer pins = m.pins.remove(key);
                for (int p = pins == null ? 0 : pins; p > 0; p--) {
                    assertThat(store.unpin(key)).isTrue();
                }
            }
        }
        // release the remaining explicit pins so that the final state is quiescent
        for (Map.Entry<ObjectKey, Integer> pin : m.pins.entrySet()) {
            for (int p = pin.getValue(); p > 0; p--) {
                assertThat(store.unpin(pin.getKey())).isTrue();
            }
        }
        return m;
    }

    private static void verify(TieredStore store, List<Model> models, Map<ObjectKey, AtomicInteger> dropReports, List<Tier> tiers) {
        for (Map.Entry<ObjectKey, AtomicInteger> r : dropReports.entrySet()) {
            assertThat(r.getValue().get()).as("reports for %s", r.getKey()).isEqualTo(1);
        }
        long stored = 0;
        for (Model m : models) {
            for (Map.Entry<ObjectKey, Expected> entry : m.live.entrySet()) {
                ObjectKey key = entry.getKey();
                boolean reported = dropReports.containsKey(key);
                boolean present = store.contains(key);
                assertThat(present).as("%s %s: stored xor reported dropped", entry.getValue().durability(), key).isNotEqualTo(reported);
                if (entry.getValue().durability() == Durability.BACKED) {
                    assertThat(present).as("BACKED %s", key).isTrue();
                }
                if (present) {
                    stored++;
                    // read every copy straight from its tier: a get could promote and so change the state checked
                    List<ResidencyInfo> copies = store.residencies(key);
                    assertThat(copies).isNotEmpty();
                    for (ResidencyInfo r : copies) {
                        byte[] actual = new byte[entry.getValue().bytes().length];
                        assertThat(tiers.get(r.chainIndex()).read(r.handle(), TestBytes.segment(actual))).isTrue();
                        assertThat(actual).as("bytes of %s in %s", key, r.tierName()).isEqualTo(entry.getValue().bytes());
                    }
                }
            }
            for (ObjectKey key : m.removed) {
                assertThat(dropReports).as("removed %s must not be reported", key).doesNotContainKey(key);
                assertThat(store.contains(key)).isFalse();
            }
            for (ObjectKey key : m.removeMissed) {
                assertThat(dropReports).as("%s vanished without a report", key).containsKey(key);
            }
        }
        StoreStats stats = store.stats();
        assertThat(stats.objects()).isEqualTo(stored);
        assertThat(stats.pinnedObjects()).isZero();
        assertThat(stats.dropsReported()).isEqualTo(dropReports.size());
        for (Tier t : tiers) {
            assertThat(t.used()).as("used bytes of %s", t.name()).isEqualTo(stats.tier(t.name()).reservedBytes());
            assertThat(t.used()).isLessThanOrEqualTo(t.capacity());
        }
        long[] reserved = new long[tiers.size()];
        for (Model m : models) {
            for (ObjectKey key : m.live.keySet()) {
                for (ResidencyInfo r : store.residencies(key)) {
                    reserved[r.chainIndex()] += r.reservedBytes();
                }
            }
        }
        for (int i = 0; i < tiers.size(); i++) {
            assertThat(tiers.get(i).used()).as("used bytes of %s vs copies", tiers.get(i).name()).isEqualTo(reserved[i]);
        }
        assertThat(stats.tier("device").demotions()).isPositive();
        for (Model m : models) {
            for (ObjectKey key : m.live.keySet()) {
                store.remove(key);
            }
        }
        assertThat(store.size()).isZero();
    }
}
