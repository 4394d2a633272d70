package dev.strata.cache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One object known to the store: identity, attributes and the chain of its resident copies.
 *
 * <p>Invariants (under the store's lock): {@link #residencies} is sorted by tier index, at most
 * one copy per tier; {@link #tierMask} has bit {@code i} set exactly when a copy is in chain tier
 * {@code i}; a {@link State#LIVE} object is in the placement map; a {@link State#GONE} object has
 * no copies.
 *
 * <p>Threads: every field is written under the store's lock, and read under it, except the final
 * fields and {@link #tierMask}, which the placement map's lock-free {@link PlacementMap#tierMask}
 * reads with {@link #tierMaskAcquire()}; the lock holder writes it with a release store (a plain
 * store on x86: no fence on the put path, unlike a volatile field).
 */
final class StoredObject {
    private static final VarHandle TIER_MASK;

    static {
        try {
            TIER_MASK = MethodHandles.lookup().findVarHandle(StoredObject.class, "tierMask", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    enum State {
        /** Stored and in the placement map. */
        LIVE,
        /** Removed by its owner while pinned; copies are freed at the last unpin. */
        REMOVED,
        /** Removed, dropped or lost; no copies remain. */
        GONE
    }

    final ObjectKey key;
    final ObjectKind kind;
    final Durability durability;
    final long sizeBytes; // payload bytes
    final long keyHash; // key.hash64(), cached for sketches
    int placementIndex = -1; // index in the placement map's object array while in the map, else -1
    PriorityClass priority;
    State state = State.LIVE;
    int tierMask; // bit i: a copy is in chain tier i; written with setRelease, read lock-free with getAcquire
    int pins; // pin count; views hold one each
    int accesses; // hits since stored (promotion rules may use it)
    int copies; // length of the residency chain
    Residency residencies; // first (highest) copy, sorted by tier index
    DropReason dropReason; // set once when the object is dropped, for the report
    StoredObject nextDrop; // next in the store's queue of drops to report after the lock

    StoredObject(ObjectKey key, ObjectKind kind, Durability durability, PriorityClass priority, long sizeBytes) {
        this(key, key.hash64(), kind, durability, priority, sizeBytes);
    }

    /** An object whose key hash ({@link ObjectKey#hash64()}) the caller has computed already. */
    StoredObject(ObjectKey key, long keyHash, ObjectKind kind, Durability durability, PriorityClass priority, long sizeBytes) {
        this.key = key;
        this.kind = kind;
        this.durability = durability;
        this.priority = priority;
        this.sizeBytes = sizeBytes;
        this.keyHash = keyHash;
    }

    /** {@link #tierMask} read without the store's lock. */
    int tierMaskAcquire() {
        return (int) TIER_MASK.getAcquire(this);
    }

    /** Whether eviction may move this object's copies: live, unpinned and not ACTIVE. */
    boolean evictable() {
        return pins == 0 && priority != PriorityClass.ACTIVE && state == State.LIVE;
    }

    /** Links {@code r} into the chain at its tier's position. */
    void attach(Residency r) {
        Residency prev = null;
        Residency cur = residencies;
        while (cur != null && cur.tierIndex < r.tierIndex) {
            prev = cur;
            cur = cur.nextInObject;
        }
        if (cur != null && cur.tierIndex == r.tierIndex) {
            throw new IllegalStateException("object " + key + " already has a copy in chain tier " + r.tierIndex);
        }
        r.nextInObject = cur;
        if (prev == null) {
            residencies = r;
        } else {
            prev.nextInObject = r;
        }
        copies++;
        TIER_MASK.setRelease(this, tierMask | 1 << r.tierIndex);
    }

    /** Unlinks {@code r} from the chain. */
    void detach(Residency r) {
        Residency prev = null;
        Residency cur = residencies;
        while (cur != null && cur != r) {
            prev = cur;
            cur = cur.nextInObject;
        }
        if (cur == null) {
            throw new IllegalStateException("copy in chain tier " + r.tierIndex + " is not a copy of object " + key);
        }
        if (prev == null) {
            residencies = r.nextInObject;
        } else {
            prev.nextInObject = r.nextInObject;
        }
        r.nextInObject = null;
        copies--;
        TIER_MASK.setRelease(this, tierMask & ~(1 << r.tierIndex));
    }

    /** The copy in chain tier {@code index}, or null. */
    Residency copyIn(int index) {
        for (Residency r = residencies; r != null; r = r.nextInObject) {
            if (r.tierIndex == index) {
                return r;
            }
        }
        return null;
    }
}
