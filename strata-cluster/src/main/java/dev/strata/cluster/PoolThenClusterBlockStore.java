package dev.strata.cluster;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.memory.Tier;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * Two shared block stores as one: this machine's pool first, the cluster behind it. A prefix is
 * matched in the pool and, where the pool's match ends, continued in the cluster; a block is read
 * from the pool when it has it, else from the cluster; a block is published to both, so that the
 * other processes of this machine and the other machines find it.
 *
 * <p>The pool's behaviour is unchanged: its errors (a corrupt copy, a failed write) reach the
 * caller as before; the cluster never throws for an unavailable cluster. Threads: as safe as the
 * two stores, which are both safe for concurrent use.
 */
public final class PoolThenClusterBlockStore implements SharedBlockStore {
    private final SharedBlockStore pool;    // this machine's pool: tried first
    private final SharedBlockStore cluster; // the machines' cluster: behind the pool

    public PoolThenClusterBlockStore(SharedBlockStore pool, SharedBlockStore cluster) {
        this.pool = Objects.requireNonNull(pool, "pool store");
        this.cluster = Objects.requireNonNull(cluster, "cluster store");
    }

    /** The pool's tier (the cluster has none of its own). */
    @Override
    public Tier tier() {
        return pool.tier();
    }

    /** The pool's health: the cluster is a cache behind it and has no state of its own to report here. */
    @Override
    public dev.strata.cache.kv.SharedPoolHealth.Status health() {
        return pool.health();
    }

    /** The pool's families, then the cluster's. */
    @Override
    public void writeMetrics(dev.strata.memory.metrics.PrometheusText out) {
        pool.writeMetrics(out);
        cluster.writeMetrics(out);
    }

    @Override
    public int matchPrefix(ObjectKey[] keys, int from, int count) {
        int n = pool.matchPrefix(keys, from, count);
        return n < count ? n + cluster.matchPrefix(keys, from + n, count - n) : n;
    }

    @Override
    public boolean read(ObjectKey key, List<MemorySegment> destinations) {
        return pool.read(key, destinations) || cluster.read(key, destinations);
    }

    /** From the pool at once when it has the block, else from the cluster without waiting. */
    @Override
    public java.util.concurrent.CompletableFuture<Boolean> readAsync(ObjectKey key, List<MemorySegment> destinations) {
        if (pool.read(key, destinations)) {
            return java.util.concurrent.CompletableFuture.completedFuture(true);
        }
        return cluster.readAsync(key, destinations);
    }

    /** To the cluster (which writes it behind if so configured); the pool keeps its own copies. */
    @Override
    public void evicted(ObjectKey key, MemorySegment bytes) {
        cluster.evicted(key, bytes);
    }

    @Override
    public void used(ObjectKey key) {
        pool.used(key);
        cluster.used(key);
    }

    /**
     * Publishes to the pool, then to the cluster: PUBLISHED if either published it, else EXISTS if
     * either had it, else DEFERRED if the cluster will write it behind, else FULL. A failure of the
     * pool is thrown after the cluster was tried.
     */
    @Override
    public PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
        PublishStatus first = null;
        RuntimeException poolFailure = null;
        try {
            first = pool.publish(key, sources);
        } catch (RuntimeException e) {
            poolFailure = e;
        }
        PublishStatus second = cluster.publish(key, sources);
        if (poolFailure != null) {
            throw poolFailure;
        }
        if (first == PublishStatus.PUBLISHED || second == PublishStatus.PUBLISHED) {
            return PublishStatus.PUBLISHED;
        }
        if (first == PublishStatus.EXISTS || second == PublishStatus.EXISTS) {
            return PublishStatus.EXISTS;
        }
        return second == PublishStatus.DEFERRED ? PublishStatus.DEFERRED : PublishStatus.FULL;
    }

    @Override
    public String toString() {
        return "pool " + pool + ", then " + cluster;
    }
}
