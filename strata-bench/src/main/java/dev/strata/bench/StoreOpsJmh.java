package dev.strata.bench;

import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.ObjectKind;
import dev.strata.cache.ObjectView;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.PutStatus;
import dev.strata.cache.TieredStore;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.host.HostTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * JMH benchmarks of the object store's operations on small objects, on one thread, with a
 * {@link ConcurrentHashMap} doing the same key operations as the baseline.
 *
 * <p>{@code putEvict}: the store's one HOST tier is full, so every put of a new key evicts the
 * least recently used object (LOSSY: dropped and reported). {@code get}: a hit, view opened and
 * closed. {@code mixed}: put-with-eviction and get alternately. Keys cycle over four times the
 * tier's capacity in objects, so a put always meets a key that was evicted long ago.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class StoreOpsJmh {

    static final int OBJECT_BYTES = 64;
    static final int CAPACITY_OBJECTS = 1 << 16;
    static final int KEYS = CAPACITY_OBJECTS * 4; // power of two

    /** The store, its tier and the keys. */
    @State(Scope.Thread)
    public static class StoreState {
        HostTier tier;
        TieredStore store;
        ObjectKey[] keys;
        MemorySegment payload;
        Arena arena;
        int next;
        long drops;

        @Setup(Level.Trial)
        public void setUp() {
            tier = HostTier.slab("bench-host", (long) CAPACITY_OBJECTS * OBJECT_BYTES, OBJECT_BYTES);
            store = TieredStore.builder().tier(tier, 1.0, 0.999, PolicyKind.PRIORITY_LRU)
                    .dropListener((key, kind, durability, size, reason) -> drops++).build();
            keys = new ObjectKey[KEYS];
            for (int i = 0; i < KEYS; i++) {
                keys[i] = new ObjectKey(0x5EED, i * 0x9E3779B97F4A7C15L);
            }
            arena = Arena.ofConfined();
            payload = arena.allocate(OBJECT_BYTES);
            for (int i = 0; i < OBJECT_BYTES; i++) {
                payload.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
            }
            for (int i = 0; i < CAPACITY_OBJECTS; i++) { // fill the tier
                put(keys[i]);
            }
            next = CAPACITY_OBJECTS;
        }

        PutStatus put(ObjectKey key) {
            return store.put(key, ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE, payload);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            store.close();
            tier.close();
            arena.close();
        }
    }

    /** The baseline map and the same keys. */
    @State(Scope.Thread)
    public static class MapState {
        ConcurrentHashMap<ObjectKey, byte[]> map;
        ObjectKey[] keys;
        byte[] payload = new byte[OBJECT_BYTES];
        int next;

        @Setup(Level.Trial)
        public void setUp() {
            map = new ConcurrentHashMap<>(CAPACITY_OBJECTS * 2);
            keys = new ObjectKey[KEYS];
            for (int i = 0; i < KEYS; i++) {
                keys[i] = new ObjectKey(0x5EED, i * 0x9E3779B97F4A7C15L);
            }
            for (int i = 0; i < CAPACITY_OBJECTS; i++) {
                map.put(keys[i], payload.clone());
            }
            next = CAPACITY_OBJECTS;
        }
    }

    @Benchmark
    public PutStatus storePutEvict(StoreState s) {
        return s.put(s.keys[s.next++ & (KEYS - 1)]);
    }

    @Benchmark
    public long storeGet(StoreState s) {
        // The most recent CAPACITY_OBJECTS keys are resident; read them round-robin.
        ObjectKey key = s.keys[(s.next - 1 - (s.next++ & (CAPACITY_OBJECTS - 1))) & (KEYS - 1)];
        try (ObjectView v = s.store.get(key)) {
            return v == null ? -1 : v.sizeBytes();
        }
    }

    @Benchmark
    public long storeMixed(StoreState s) {
        return (s.next & 1) == 0 ? storePutEvict(s).ordinal() : storeGet(s);
    }

    @Benchmark
    public Object mapMixed(MapState s) {
        return (s.next & 1) == 0 ? mapPutEvict(s) : mapGet(s);
    }

    @Benchmark
    public byte[] mapPutEvict(MapState s) {
        int i = s.next++;
        s.map.remove(s.keys[(i - CAPACITY_OBJECTS) & (KEYS - 1)]);
        return s.map.put(s.keys[i & (KEYS - 1)], s.payload);
    }

    @Benchmark
    public byte[] mapGet(MapState s) {
        return s.map.get(s.keys[(s.next - 1 - (s.next++ & (CAPACITY_OBJECTS - 1))) & (KEYS - 1)]);
    }
}
