package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * KV blocks shared by several engine processes through one pool: the seam between the block
 * manager of one process and the global index that lives in the pool.
 *
 * <p>A block is published once, under its chained prefix hash, as one contiguous object in the
 * pool; any process may then read it. Contents are immutable after publication: the same hash
 * always names the same bytes.
 *
 * <p>Failures: a store whose pool can be lost (its file faults, the node daemon serving its index
 * dies) reports it through {@link #health()} and, while the pool is out of the chain, answers
 * without it: {@link #matchPrefix} 0, {@link #read} false, {@link #publish}
 * {@link PublishStatus#UNAVAILABLE}. Its callers therefore go on from their other tiers or
 * recompute; they never see the loss as an exception.
 *
 * <p>Threads: implementations are safe for concurrent use by any thread of any process attached
 * to the same pool. Calls may block briefly (a copy of one block); they never wait on another
 * process indefinitely.
 */
public interface SharedBlockStore {

    /**
     * The tier the shared blocks live in (the pool this process maps), for its occupancy and
     * traffic in metrics; null when the store is not backed by a {@link dev.strata.memory.Tier},
     * or while its pool has {@link SharedPoolHealth.State#FAILED failed} (its mapping must not be
     * read).
     */
    default dev.strata.memory.Tier tier() {
        return null;
    }

    /**
     * Whether the pool is in the chain now, and why not if it is not (for {@code /health} and
     * {@code /metrics}). A store that cannot lose its pool is always OK.
     */
    default SharedPoolHealth.Status health() {
        dev.strata.memory.Tier t = tier();
        return SharedPoolHealth.Status.ok(t != null ? t.name() : "pool");
    }

    /**
     * Appends this store's own metric families to {@code out} (those of a store that is not a
     * tier of this process, e.g. {@code strata_cluster_*}); nothing by default. Any thread.
     */
    default void writeMetrics(dev.strata.memory.metrics.PrometheusText out) {
    }

    /** Outcome of {@link #publish}. */
    enum PublishStatus {
        /** The block is now published under its key. */
        PUBLISHED,
        /** A block with this key was already published (or is being written) by someone else. */
        EXISTS,
        /** No space could be found, even after evicting unpinned blocks. */
        FULL,
        /** The pool is out of the chain ({@link #health()}): nothing was written. */
        UNAVAILABLE,
        /**
         * Not written now: this store writes behind, taking the block when it leaves this
         * process's memory ({@link #evicted}).
         */
        DEFERRED
    }

    /**
     * The number of leading keys of {@code keys[from, from + count)} whose blocks are published
     * now: the length of the shared prefix a reader may load.
     */
    int matchPrefix(ObjectKey[] keys, int from, int count);

    /**
     * Copies the block published under {@code key} into {@code destinations}, in order, under a
     * read pin that keeps it from being evicted during the copy; the copy is verified against
     * the block's checksum.
     *
     * @return false if no block is published under {@code key} (never published, or evicted)
     * @throws dev.strata.memory.CorruptObjectException if the copy does not match its checksum
     * @throws IllegalArgumentException if the destinations do not add up to the block's length
     */
    boolean read(ObjectKey key, List<MemorySegment> destinations);

    /**
     * Writes the concatenation of {@code sources} as a new block and publishes it under
     * {@code key}, evicting unpinned blocks if the pool is full.
     */
    PublishStatus publish(ObjectKey key, List<MemorySegment> sources);

    /**
     * As {@link #read}, answering through a future so that the caller's thread does not wait for
     * a store behind a network: the future completes (on any thread) once {@code destinations}
     * hold the verified block (true), or with false when it is absent, or exceptionally as
     * {@link #read} throws; after false or a failure the destinations' bytes are undefined (a
     * store may land bytes before their check fails). The destinations must stay valid until it
     * completes. By default the
     * read is done at once on the calling thread.
     */
    default java.util.concurrent.CompletableFuture<Boolean> readAsync(ObjectKey key, List<MemorySegment> destinations) {
        try {
            return java.util.concurrent.CompletableFuture.completedFuture(read(key, destinations));
        } catch (RuntimeException e) {
            return java.util.concurrent.CompletableFuture.failedFuture(e);
        }
    }

    /**
     * The KV block {@code key} is leaving this process's memory (evicted out of its HOST tier);
     * {@code bytes} is valid during the call only. A write-behind store copies it and writes it;
     * by default nothing happens. Called under the KV store's lock: never waits on another process.
     */
    default void evicted(ObjectKey key, MemorySegment bytes) {
    }

    /**
     * This process used block {@code key} (committed it, or matched it in any tier): for a store
     * that writes only blocks used more than once. Called on the KV manager's scheduler thread;
     * must be quick. Nothing by default.
     */
    default void used(ObjectKey key) {
    }
}
