package dev.strata.cache;

/**
 * Told when an object leaves the store without {@link TieredStore#remove}: exactly once per
 * stored object (DESIGN invariant 3).
 *
 * <p>Threads: called on the thread whose store operation caused (or first observed) the drop,
 * after the store's lock is released, so a listener may call back into the store. Calls for
 * different objects may come concurrently from different threads.
 */
@FunctionalInterface
public interface DropListener {

    /** A listener that ignores drops. */
    DropListener NONE = (key, kind, durability, sizeBytes, reason) -> { };

    /**
     * @param key        the dropped object's key
     * @param kind       its kind
     * @param durability its durability (BACKED only with {@link DropReason#CORRUPT})
     * @param sizeBytes  its size in bytes
     * @param reason     why it was dropped
     */
    void dropped(ObjectKey key, ObjectKind kind, Durability durability, long sizeBytes, DropReason reason);
}
