package dev.strata.cache;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The unified block table: object key to the object's record and its resident copies.
 *
 * <p>Concurrency: the map is a {@link ConcurrentHashMap}. Lock-free (safe from any thread without
 * the store's lock, never blocking): {@link #contains}, {@link #tierMask}, {@link #size}; they see
 * the state as of the last completed store operation. Every mutation ({@code put},
 * {@code remove}) and every walk of an object's residency chain happens under the store's lock,
 * so the chain itself needs no synchronisation.
 *
 * <p>Invariant: a key maps to a {@link StoredObject.State#LIVE} object, and only while it has at
 * least one copy.
 */
public final class PlacementMap {
    private final ConcurrentHashMap<ObjectKey, StoredObject> objects = new ConcurrentHashMap<>(1024);

    /** True if an object with this key is stored. Lock-free. */
    public boolean contains(ObjectKey key) {
        return objects.containsKey(key);
    }

    /**
     * Bit {@code i} set when chain tier {@code i} holds a copy of {@code key}; 0 if not stored.
     * Lock-free.
     */
    public int tierMask(ObjectKey key) {
        StoredObject o = objects.get(key);
        return o == null ? 0 : o.tierMask;
    }

    /** Objects stored. Lock-free. */
    public int size() {
        return objects.size();
    }

    StoredObject get(ObjectKey key) {
        return objects.get(key);
    }

    void put(StoredObject o) {
        objects.put(o.key, o);
    }

    boolean remove(StoredObject o) {
        return objects.remove(o.key, o);
    }

    Iterable<StoredObject> all() {
        return objects.values();
    }
}
