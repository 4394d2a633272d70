package dev.strata.analysis.kvsim;

import dev.strata.cache.PriorityClass;
import dev.strata.cache.policy.EvictionPolicy;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.cache.policy.PolicyNode;

/**
 * The CLUSTER tier of a multi-machine replay: one store of KV blocks shared by every machine, as
 * a Redis Cluster with {@code maxmemory-policy allkeys-lru} holds them.
 *
 * <p>Design note: a block is a key, stored once however many machines write it; a write of a key
 * already held stores nothing (the store's {@code SET NX}: the first writer wins) but is counted,
 * since its value still crosses the network. Room is made by evicting the least recently read or
 * written key ({@link PolicyKind#LRU}, the cache's own LRU policy), whatever its place in a
 * prefix: like Redis, the cluster knows nothing of parents, so a block whose parent was evicted
 * stays, unreachable by a prefix match, until it is evicted in turn. Nothing is ever pinned. A
 * capacity of 0 disables the tier: it holds nothing and every write is refused uncounted.
 *
 * <p>Threads: confined to the replay's thread.
 */
final class ClusterTierModel {
    /** One stored block as the LRU policy sees it. */
    private static final class Key extends PolicyNode {
        final int block;

        Key(int block) {
            this.block = block;
        }

        @Override
        public PriorityClass priority() {
            return PriorityClass.EVICTABLE;
        }

        @Override
        public boolean evictable() {
            return true;
        }

        @Override
        public long keyHash() {
            return KvReplaySimulator.blockHash(block);
        }
    }

    private final long capacity; // blocks; 0 when disabled
    private final EvictionPolicy lru = PolicyKind.LRU.create();
    private final Key[] keys; // [block] its key while stored, else null
    private long occupancy; // blocks stored now
    private long evictions; // blocks evicted to make room
    private long duplicateWrites; // writes of a block already stored

    ClusterTierModel(int blockCount, long capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException("cluster capacity must not be negative, got " + capacity + " blocks");
        }
        this.capacity = capacity;
        this.keys = new Key[capacity == 0 ? 0 : blockCount];
    }

    boolean enabled() {
        return capacity > 0;
    }

    /** True if block {@code b} is stored. */
    boolean holds(int b) {
        return capacity > 0 && keys[b] != null;
    }

    /** A read of stored block {@code b}: it becomes the most recently used. */
    void read(int b) {
        lru.onAccess(keys[b]);
    }

    /**
     * A machine writes block {@code b}: stored (evicting the least recently used to make room)
     * unless it is already, when it only counts as a duplicate. Returns true if the write was sent
     * (the tier is enabled).
     */
    boolean write(int b) {
        if (capacity == 0) {
            return false;
        }
        if (keys[b] != null) {
            duplicateWrites++;
            return true;
        }
        while (occupancy >= capacity) {
            Key v = (Key) lru.victim();
            lru.onRemove(v);
            keys[v.block] = null;
            occupancy--;
            evictions++;
        }
        Key k = new Key(b);
        keys[b] = k;
        lru.onInsert(k);
        occupancy++;
        return true;
    }

    long capacity() {
        return capacity;
    }

    long occupancy() {
        return occupancy;
    }

    long evictions() {
        return evictions;
    }

    long duplicateWrites() {
        return duplicateWrites;
    }

    /** Checks that the policy tracks exactly the blocks stored and that they fit (tests). */
    void checkInvariants() {
        long counted = 0;
        for (Key k : keys) {
            if (k != null) {
                counted++;
            }
        }
        if (counted != occupancy || lru.size() != occupancy || occupancy > capacity) {
            throw new IllegalStateException("cluster holds " + counted + " blocks, counts " + occupancy + ", policy tracks "
                    + lru.size() + ", capacity " + capacity);
        }
    }
}
