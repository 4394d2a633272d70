package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.policy.EvictionPolicy;
import dev.strata.cache.policy.PolicyNode;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The DEVICE block slots of a {@link KvBlockManager}: which block occupies each slot, the stack of
 * free slots, the key table of the keyed blocks, and the slot eviction policy that tracks them
 * (kept told of every insert, removal, eligibility and class change), with the prefix-tree child
 * counts a prefix-aware policy reads; and the slot count's growth and compaction for a live resize.
 * It decides nothing about transfers: the manager chooses when to evict, offload or load.
 *
 * <p>Invariants (checked by {@link #checkInvariants}): a slot is free (on the free stack exactly
 * once) or holds exactly one block naming that slot; a block is registered exactly when it is in
 * the key table and the policy; a registered block's child count is the number of registered
 * blocks naming it as their parent; registered blocks whose parent is not registered (and is not
 * the hasher's root) are counted under the parent's key in the orphan map; the policy was told every eligibility change.
 *
 * <p>Threads: the manager's scheduler thread; {@link #count()} may be read by any thread.
 */
final class DeviceSlots {
    private DeviceBlock[] owner; // [slot] the block in it, null when free; replaced when the slots are resized
    private int[] free; // stack of free slot indices; replaced when the slots are resized
    private int freeCount; // entries of free in use
    private volatile int count; // owner.length, for readers on other threads
    private final BlockKeyTable keys; // keyed blocks in slots (loading too), by key
    private final EvictionPolicy policy; // over the keyed blocks
    private final Map<ObjectKey, Integer> orphanChildren = new HashMap<>(); // parent key -> registered blocks under it while the parent is not registered
    private final ObjectKey root; // the hasher's root: the parent of every first block, never a block itself (not counted)

    DeviceSlots(int slots, EvictionPolicy policy, ObjectKey root) {
        this.root = root;
        this.owner = new DeviceBlock[slots];
        this.free = new int[slots];
        this.count = slots;
        this.keys = new BlockKeyTable(slots);
        this.policy = policy;
        for (int s = slots - 1; s >= 0; s--) {
            free[freeCount++] = s;
        }
    }

    /** Slots now. */
    int count() {
        return count;
    }

    int freeCount() {
        return freeCount;
    }

    /** Slots holding a block now (free or waiting for nothing else). */
    int occupied() {
        return owner.length - freeCount;
    }

    /** The block in {@code slot}, or null. */
    DeviceBlock owner(int slot) {
        return owner[slot];
    }

    /** A free slot taken off the stack, or -1 if none is free. */
    int popFree() {
        if (freeCount == 0) {
            return -1;
        }
        int slot = free[--freeCount];
        if (owner[slot] != null) {
            throw new IllegalStateException("free slot " + slot + " is held by " + owner[slot]);
        }
        return slot;
    }

    /** A new (unkeyed) block in the free slot {@code slot}, just taken with {@link #popFree}. */
    DeviceBlock newBlock(int slot) {
        DeviceBlock b = new DeviceBlock(slot, keys);
        owner[slot] = b;
        return b;
    }

    /** Returns {@code b}'s slot to the free stack. */
    void free(DeviceBlock b) {
        if (owner[b.slot] != b) {
            throw new IllegalStateException("slot " + b.slot + " is not held by " + b);
        }
        owner[b.slot] = null;
        free[freeCount++] = b.slot;
    }

    /** True if {@code b} still occupies its slot. */
    boolean occupies(DeviceBlock b) {
        return b.slot < owner.length && owner[b.slot] == b;
    }

    DeviceBlock get(ObjectKey key) {
        return keys.get(key);
    }

    boolean contains(ObjectKey key) {
        return keys.containsKey(key);
    }

    /** Keyed blocks now. */
    int keyed() {
        return keys.size();
    }

    /** Enters {@code b} in the key table unless the key is there: the block already there, or null. */
    DeviceBlock putIfAbsent(ObjectKey key, DeviceBlock b) {
        return keys.putIfAbsent(key, b);
    }

    String policyName() {
        return policy.name();
    }

    /** The policy's next victim, or null. */
    PolicyNode victim() {
        return policy.victim();
    }

    /** Keys {@code b} and registers it (key table, policy). */
    void register(DeviceBlock b, ObjectKey key, ObjectKey parent) {
        if (keys.putIfAbsent(key, b) != null) {
            throw new IllegalStateException("block " + key + " is already in a DEVICE slot");
        }
        registerMapped(b, key, parent);
    }

    /** Registers a block already entered in the key table. */
    void registerMapped(DeviceBlock b, ObjectKey key, ObjectKey parent) {
        b.key = key; // keyHash was set by the key table
        b.parentKey = parent;
        if (!parent.equals(root)) {
            DeviceBlock p = keys.get(parent);
            if (p != null && p.registered) {
                p.registeredChildren++;
            } else {
                orphanChildren.merge(parent, 1, Integer::sum);
            }
        }
        Integer adopted = orphanChildren.isEmpty() ? null : orphanChildren.remove(key);
        b.registeredChildren = adopted == null ? 0 : adopted;
        b.registered = true;
        b.reach = Math.max(1, b.reach);
        b.reportedEvictable = b.evictable();
        policy.onInsert(b);
    }

    /** Takes {@code b} out of the key table and the policy (its slot stays occupied). */
    void unregister(DeviceBlock b) {
        if (!b.registered) {
            return;
        }
        policy.onRemove(b);
        b.registered = false;
        b.reportedEvictable = false;
        keys.remove(b.key, b);
        if (!b.parentKey.equals(root)) {
            DeviceBlock p = keys.get(b.parentKey);
            if (p != null && p.registered) {
                p.registeredChildren--;
            } else {
                orphanChildren.merge(b.parentKey, -1, (a, d) -> a + d == 0 ? null : a + d);
            }
        }
        if (b.registeredChildren > 0) {
            orphanChildren.put(b.key, b.registeredChildren); // its registered children are orphans now
            b.registeredChildren = 0;
        }
    }

    /** Tells the policy when the block's eligibility flipped. */
    void sync(DeviceBlock b) {
        if (!b.registered) {
            return;
        }
        boolean now = b.evictable();
        if (now != b.reportedEvictable) {
            b.reportedEvictable = now;
            policy.onEligibilityChange(b);
        }
    }

    void setPriority(DeviceBlock b, PriorityClass p) {
        PriorityClass previous = b.priority;
        if (previous == p) {
            return;
        }
        b.priority = p;
        if (!b.registered) {
            return;
        }
        boolean now = b.evictable();
        if (now != b.reportedEvictable) {
            b.reportedEvictable = now;
            policy.onEligibilityChange(b);
        } else {
            policy.onPriorityChange(b, previous);
        }
    }

    /** A hit on a registered block. */
    void access(DeviceBlock b) {
        if (b.registered) {
            policy.onAccess(b);
        }
    }

    /** Adds slots {@code [count(), slots)}, free (the layout has grown already). */
    void grow(int slots) {
        int old = owner.length;
        keys.ensureCapacity(slots);
        owner = Arrays.copyOf(owner, slots);
        int[] stack = new int[slots];
        System.arraycopy(free, 0, stack, 0, freeCount);
        for (int s = slots - 1; s >= old; s--) {
            stack[freeCount++] = s;
        }
        free = stack;
        count = slots;
    }

    /**
     * Moves every block in slots {@code [slots, count())} into free slots below {@code slots}
     * (copying its bytes in {@code layout}), shrinks the layout and drops those slots. The blocks
     * must fit ({@link #occupied()} at most {@code slots}) and none may be in use by a transfer.
     *
     * @return blocks moved
     */
    int compact(int slots, ResizableKvLayout layout) {
        if (occupied() > slots) {
            throw new IllegalStateException(occupied() + " blocks do not fit in " + slots + " slots");
        }
        int[] targets = new int[slots]; // free surviving slots
        int targetCount = 0;
        for (int s = 0; s < slots; s++) {
            if (owner[s] == null) {
                targets[targetCount++] = s;
            }
        }
        int moved = 0;
        for (int s = slots; s < owner.length; s++) {
            DeviceBlock b = owner[s];
            if (b == null) {
                continue;
            }
            int t = targets[moved++];
            layout.copySlot(s, t);
            owner[t] = b;
            owner[s] = null;
            b.slot = t;
        }
        layout.shrinkTo(slots);
        owner = Arrays.copyOf(owner, slots);
        int[] stack = new int[slots];
        freeCount = 0;
        for (int s = slots - 1; s >= 0; s--) {
            if (owner[s] == null) {
                stack[freeCount++] = s;
            }
        }
        free = stack;
        count = slots;
        return moved;
    }

    /**
     * Checks the invariants of the class comment against a layout of {@code layoutSlots} slots;
     * throws {@link IllegalStateException} naming the first one broken.
     */
    void checkInvariants(int layoutSlots) {
        if (layoutSlots != owner.length || count != owner.length) {
            throw new IllegalStateException("the layout has " + layoutSlots + " slots but the manager tracks "
                    + owner.length + " (published " + count + ")");
        }
        boolean[] isFree = new boolean[owner.length];
        for (int i = 0; i < freeCount; i++) {
            int s = free[i];
            if (isFree[s]) {
                throw new IllegalStateException("slot " + s + " is on the free list twice");
            }
            isFree[s] = true;
            if (owner[s] != null) {
                throw new IllegalStateException("free slot " + s + " is held by " + owner[s]);
            }
        }
        int owned = 0;
        int registered = 0;
        Map<ObjectKey, Integer> children = new HashMap<>();
        for (int s = 0; s < owner.length; s++) {
            DeviceBlock b = owner[s];
            if (b == null) {
                if (!isFree[s]) {
                    throw new IllegalStateException("slot " + s + " is neither free nor held");
                }
                continue;
            }
            owned++;
            if (b.slot != s) {
                throw new IllegalStateException("slot " + s + " holds " + b + " which names slot " + b.slot);
            }
            if (b.registered) {
                registered++;
                if (!b.parentKey.equals(root)) {
                    children.merge(b.parentKey, 1, Integer::sum);
                }
                if (keys.get(b.key) != b) {
                    throw new IllegalStateException(b + " is registered but not in the key map");
                }
                if (b.reportedEvictable != b.evictable()) {
                    throw new IllegalStateException(b + ": the policy was not told that its eligibility changed");
                }
            }
        }
        if (owned + freeCount != owner.length) {
            throw new IllegalStateException(owned + " held + " + freeCount + " free slots != " + owner.length);
        }
        Map<ObjectKey, Integer> orphans = new HashMap<>(children);
        for (DeviceBlock b : owner) {
            if (b != null && b.registered) {
                int expected = children.getOrDefault(b.key, 0);
                if (b.registeredChildren != expected) {
                    throw new IllegalStateException(b + " counts " + b.registeredChildren + " registered children, but "
                            + expected + " registered blocks name it as their parent");
                }
                orphans.remove(b.key);
                DeviceBlock p = keys.get(b.parentKey);
                if (b.prefixParent() != (p != null && p.registered ? p : null)) {
                    throw new IllegalStateException(b + " names " + b.prefixParent() + " as its parent, not " + p);
                }
            }
        }
        if (!orphans.equals(orphanChildren)) {
            throw new IllegalStateException("registered blocks under unregistered parents " + orphans
                    + " but the orphan map says " + orphanChildren);
        }
        if (registered != keys.size() || registered != policy.size()) {
            throw new IllegalStateException(registered + " registered blocks, " + keys.size() + " in the key map, "
                    + policy.size() + " in the policy");
        }
    }
}
