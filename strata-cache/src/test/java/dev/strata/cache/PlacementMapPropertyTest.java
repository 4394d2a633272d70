package dev.strata.cache;

import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The placement map's open-addressing table against {@link HashMap}: random inserts, lookups and
 * removals (with resizes and long clusters), every invariant checked after every step.
 */
class PlacementMapPropertyTest {

    private static StoredObject object(ObjectKey key, SplittableRandom random) {
        return new StoredObject(key, ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.EVICTABLE, 1 + random.nextInt(4097));
    }

    /** A key from a small space (many repeats) or a clustered one (collisions in home slots) or any. */
    private static ObjectKey randomKey(SplittableRandom random, List<ObjectKey> known) {
        int kind = random.nextInt(4);
        if (kind == 0 && !known.isEmpty()) {
            return known.get(random.nextInt(known.size()));
        }
        if (kind == 1) {
            return ObjectKey.of(random.nextInt(3000));
        }
        if (kind == 2) {
            return new ObjectKey(random.nextLong(), random.nextLong());
        }
        return new ObjectKey(random.nextInt(7), random.nextInt(5000) * 0x9E3779B97F4A7C15L);
    }

    @Test
    void agreesWithHashMapUnderRandomOperations() {
        Property.forAll("placement-map-vs-hashmap", 12, random -> {
            PlacementMap map = new PlacementMap();
            Map<ObjectKey, StoredObject> model = new HashMap<>();
            List<ObjectKey> known = new ArrayList<>();
            int steps = 2000 + random.nextInt(6000);
            int growUntil = random.nextInt(steps); // inserts dominate before, removals after
            int maxCapacity = map.capacity();
            for (int step = 0; step < steps; step++) {
                ObjectKey key = randomKey(random, known);
                int op = random.nextInt(10);
                boolean growing = step < growUntil;
                if (op < (growing ? 5 : 3)) { // find-or-insert, as a put does
                    StoredObject existing = map.findForInsert(key, key.hash64());
                    assertThat(existing).isSameAs(model.get(key));
                    if (existing == null) {
                        StoredObject o = object(key, random);
                        map.insert(o);
                        model.put(key, o);
                        known.add(key);
                    }
                } else if (op < (growing ? 6 : 4)) { // plain insert of a new key (no hint)
                    if (!model.containsKey(key)) {
                        StoredObject o = new StoredObject(key, ObjectKind.EXPERT, Durability.BACKED,
                                PriorityClass.IDLE, 1 + random.nextInt(100));
                        map.insert(o);
                        model.put(key, o);
                        known.add(key);
                    } else {
                        StoredObject twin = object(key, random);
                        assertThatThrownBy(() -> map.insert(twin)).isInstanceOf(IllegalStateException.class)
                                .hasMessageContaining(key.toString());
                    }
                } else if (op < 8) { // remove by identity
                    StoredObject o = model.get(key);
                    if (o != null) {
                        assertThat(map.remove(o)).isTrue();
                        model.remove(key);
                    } else {
                        assertThat(map.remove(object(key, random))).isFalse();
                    }
                } else if (op < 9) { // stale hint: find, then remove others, then insert
                    StoredObject existing = map.findForInsert(key, key.hash64());
                    if (existing == null && !model.isEmpty()) {
                        ObjectKey other = known.get(random.nextInt(known.size()));
                        StoredObject victim = model.remove(other);
                        if (victim != null) {
                            assertThat(map.remove(victim)).isTrue();
                        }
                        StoredObject o = object(key, random);
                        map.insert(o);
                        model.put(key, o);
                        known.add(key);
                    }
                } else { // lookups
                    assertThat(map.get(key)).isSameAs(model.get(key));
                    assertThat(map.contains(key)).isEqualTo(model.containsKey(key));
                }
                map.checkInvariants();
                assertThat(map.size()).isEqualTo(model.size());
                maxCapacity = Math.max(maxCapacity, map.capacity());
                if (step % 97 == 0) {
                    for (Map.Entry<ObjectKey, StoredObject> e : model.entrySet()) {
                        assertThat(map.get(e.getKey())).isSameAs(e.getValue());
                    }
                }
            }
            for (ObjectKey key : known) {
                assertThat(map.get(key)).isSameAs(model.get(key));
                assertThat(map.contains(key)).isEqualTo(model.containsKey(key));
            }
            List<StoredObject> all = new ArrayList<>();
            map.forEach(all::add);
            assertThat(all).containsExactlyInAnyOrderElementsOf(model.values());
            map.clear();
            map.checkInvariants();
            assertThat(map.size()).isZero();
        });
    }

    @Test
    void growsByDoublingAndKeepsEveryKey() {
        SplittableRandom random = new SplittableRandom(41);
        PlacementMap map = new PlacementMap();
        int initial = map.capacity();
        List<StoredObject> objects = new ArrayList<>();
        for (int i = 0; i < initial * 3 + 17; i++) {
            StoredObject o = object(new ObjectKey(random.nextLong(), random.nextLong()), random);
            map.insert(o);
            objects.add(o);
        }
        map.checkInvariants();
        assertThat(map.capacity()).isEqualTo(initial * 8);
        for (StoredObject o : objects) {
            assertThat(map.get(o.key)).isSameAs(o);
            assertThat(map.tierMask(o.key)).isEqualTo(o.tierMask);
        }
        for (StoredObject o : objects) {
            assertThat(map.remove(o)).isTrue();
        }
        map.checkInvariants();
        assertThat(map.size()).isZero();
    }

    /** Readers without the lock see, for keys that never leave, always the right object while others churn. */
    @Test
    void lockFreeReadersSeeStableKeysDuringChurn() throws Exception {
        SplittableRandom random = new SplittableRandom(7);
        PlacementMap map = new PlacementMap();
        List<StoredObject> stable = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            StoredObject o = object(new ObjectKey(random.nextLong(), random.nextLong()), random);
            o.tierMask = 1 << (i % 5);
            map.insert(o);
            stable.add(o);
        }
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<String> failure = new AtomicReference<>();
        Thread reader = new Thread(() -> {
            SplittableRandom r = new SplittableRandom(11);
            while (!stop.get() && failure.get() == null) {
                StoredObject o = stable.get(r.nextInt(stable.size()));
                if (!map.contains(o.key) || map.tierMask(o.key) != o.tierMask) {
                    failure.set("stable key " + o.key + " not seen");
                }
                ObjectKey absent = new ObjectKey(-1L - r.nextInt(1000), r.nextLong());
                if (map.contains(absent)) {
                    failure.set("absent key " + absent + " seen");
                }
            }
        });
        reader.start();
        List<StoredObject> churn = new ArrayList<>();
        for (int round = 0; round < 60; round++) { // grows past several resizes, then shrinks back
            for (int i = 0; i < 400; i++) {
                StoredObject o = object(new ObjectKey(random.nextLong() & Long.MAX_VALUE, random.nextLong()), random);
                map.insert(o);
                churn.add(o);
            }
            while (churn.size() > round * 40) {
                assertThat(map.remove(churn.remove(random.nextInt(churn.size())))).isTrue();
            }
        }
        stop.set(true);
        reader.join();
        map.checkInvariants();
        assertThat(failure.get()).isNull();
        assertThat(map.size()).isEqualTo(stable.size() + churn.size());
    }
}
