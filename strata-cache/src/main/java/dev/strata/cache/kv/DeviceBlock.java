package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.policy.PolicyNode;
import dev.strata.cache.policy.PrefixNode;
import java.util.concurrent.CompletableFuture;

/**
 * One DEVICE block slot's occupant, as the {@link KvBlockManager} and its slot eviction policy see
 * it: the slot, the block's chained key and its parent's key (so a prefix-aware policy can tell
 * leaves from inner blocks), how many sequences hold it, and how many transfers read or write the
 * slot now.
 *
 * <p>States: <i>writing</i> (held by one sequence, no key yet: the engine is filling it),
 * <i>loading</i> (keyed, a transfer is filling the slot), <i>resident</i> (keyed, valid). Keyed
 * blocks are tracked by the slot policy; they are evictable only when resident, held by no
 * sequence, not ACTIVE and with no transfer in flight.
 *
 * <p>Prefix tree ({@link PrefixNode}): a keyed block names its parent's DEVICE block while that
 * parent is registered in the same manager's key table (which is exactly when the slot policy
 * tracks it), counts its registered children, and reports its reach; so a prefix-aware slot
 * policy evicts only leaves of the tree of resident blocks and never strands a resident child.
 *
 * <p>Threads: owned by the manager's scheduler thread; policies read it under the same rule.
 */
public final class DeviceBlock extends PolicyNode implements PrefixNode {
    int slot; // index into the engine's KV layout (changes only when a shrink of the slots moves the block)
    final BlockKeyTable table; // the manager's key table, where the parent is looked up; null for a detached block
    int registeredChildren; // registered blocks whose parent key is this block's key (maintained while registered)
    ObjectKey key; // chained key; null while the engine is still writing the block
    ObjectKey parentKey; // key of the block before it (the hasher's root for block 0); null while writing
    long keyHash; // key.hash64(), 0 while writing
    int tableIndex = -1; // position in the manager's key table, -1 when not in it
    int refCount; // sequences holding this block
    long reach; // requests that reached this block while it was in a slot: its commit, then each load that shared it
    int inFlight; // transfers reading or writing the slot now
    PriorityClass priority = PriorityClass.ACTIVE;
    boolean loading; // a transfer is filling the slot: bytes not valid yet
    boolean registered; // in the manager's key map and the slot policy
    boolean evictAfterOffload; // free the slot once the running offload has landed (if still unreferenced)
    boolean reportedEvictable; // eligibility last reported to the policy
    boolean published; // a copy is in the shared pool (published by this manager or found there)
    boolean byPrefetch; // loaded ahead of being required
    boolean required; // a progressive load has asked for it
    KvLoadGate.Batch loadBatch; // the batch of a load(...) this block's read belongs to, timed for the load gate; null otherwise
    CompletableFuture<Void> ready; // completes when a load lands (exceptionally when it fails); null if none

    DeviceBlock(int slot) {
        this(slot, null);
    }

    DeviceBlock(int slot, BlockKeyTable table) {
        this.slot = slot;
        this.table = table;
    }

    /** The engine KV slot this block occupies. */
    public int slot() {
        return slot;
    }

    /** The block's chained key, or null while it is still being written. */
    public ObjectKey key() {
        return key;
    }

    /**
     * The key of the block this one extends (the hasher's root for a sequence's first block), or
     * null while the block is still being written.
     */
    public ObjectKey parent() {
        return parentKey;
    }

    /** Sequences holding the block now. */
    public int refCount() {
        return refCount;
    }

    /**
     * Requests that reached the block while it was in this slot: the commit (or load) that
     * brought it in, then each sequence that shared it. A prefix-aware slot policy reads it as
     * the block's reach.
     */
    public long reach() {
        return reach;
    }

    /** True while a load is filling the slot. */
    public boolean loading() {
        return loading;
    }

    @Override
    public PriorityClass priority() {
        return priority;
    }

    @Override
    public boolean evictable() {
        return registered && !loading && refCount == 0 && inFlight == 0 && priority != PriorityClass.ACTIVE;
    }

    @Override
    public long keyHash() {
        return keyHash;
    }

    /** The parent's DEVICE block while it is registered in the manager (tracked by the slot policy), else null. */
    @Override
    public PolicyNode prefixParent() {
        if (parentKey == null || table == null) {
            return null;
        }
        DeviceBlock p = table.get(parentKey);
        return p != null && p.registered && p != this ? p : null;
    }

    /** Registered children of this block now (the policy reads it when this block is inserted). */
    @Override
    public int residentPrefixChildren() {
        return registeredChildren;
    }

    /** Requests that reached this block: its commit or load, then each sequence that shared it. */
    @Override
    public long prefixReach() {
        return Math.max(1, reach);
    }

    @Override
    public String toString() {
        return "DeviceBlock[slot " + slot + ", key " + key + ", refs " + refCount + ", in flight " + inFlight + ", "
                + priority + (loading ? ", loading" : "") + "]";
    }
}
