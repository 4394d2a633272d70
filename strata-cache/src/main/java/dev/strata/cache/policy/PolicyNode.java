package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;

/**
 * One resident copy as an eviction policy sees it: an intrusive node of a doubly linked list, so
 * that every policy operation is O(1) and allocates nothing.
 *
 * <p>The store subclasses this for its residencies; a policy reads {@link #priority()},
 * {@link #evictable()} and {@link #keyHash()} and owns the link fields. A node belongs to at most
 * one policy at a time.
 *
 * <p>Threads: the link fields are guarded by whatever lock guards the owning policy (the store's
 * lock); a node is never touched by two policies.
 */
public abstract class PolicyNode {
    PolicyNode prev; // neighbour towards the most recently used end; null when unlinked
    PolicyNode next; // neighbour towards the least recently used end; null when unlinked
    NodeList list; // the list holding this node now, null when not tracked
    NodeList home; // where a parked or skipped node returns to

    // State kept by PrefixAwarePolicy (unused by the list-based policies).
    PrefixAwarePolicy prefixOwner; // the prefix-aware policy tracking this node, null otherwise
    byte prefixState; // PrefixAwarePolicy.LEAF, INNER, PARKED or SKIPPED while tracked
    int heapIndex = -1; // index in the owner's leaf heap, -1 when not in it
    int prefixChildren; // children of this block tracked by the same policy
    long prefixValue; // logical time of the last use: order inside a PrefixAwarePolicy segment or an AdaptiveReachPolicy level
    byte prefixSegment; // PrefixAwarePolicy.ONCE or PrefixAwarePolicy.SHARED while tracked
    long localHits; // insert and hits counted by PrefixAwarePolicy or AdaptiveReachPolicy, for nodes that are not PrefixNodes

    /** The object's priority class now. */
    public abstract PriorityClass priority();

    /** False while the object is pinned or ACTIVE: such a node must never be offered as a victim. */
    public abstract boolean evictable();

    /** A well-mixed hash of the object's key (frequency sketches use it). */
    public abstract long keyHash();

    /** True while some policy tracks this node. */
    public final boolean tracked() {
        return list != null || prefixOwner != null;
    }
}
