package dev.strata.cache;

import dev.strata.cache.policy.PolicyNode;

/**
 * One copy of an object in one tier: the tier's position in the chain, the allocation handle and
 * the bytes reserved. It is also the node the tier's eviction policy links into its lists.
 *
 * <p>Threads: guarded by the store's lock.
 */
final class Residency extends PolicyNode {
    final StoredObject object;
    final int tierIndex; // position of the tier in the demotion chain
    final long handle; // allocation handle in that tier
    final long reservedBytes; // tier.allocationSize(handle): the request rounded up
    Residency nextInObject; // next lower copy of the same object

    Residency(StoredObject object, int tierIndex, long handle, long reservedBytes) {
        this.object = object;
        this.tierIndex = tierIndex;
        this.handle = handle;
        this.reservedBytes = reservedBytes;
    }

    @Override
    public PriorityClass priority() {
        return object.priority;
    }

    @Override
    public boolean evictable() {
        return object.evictable();
    }

    @Override
    public long keyHash() {
        return object.keyHash;
    }
}
