package dev.strata.bench.engine;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cache.kv.SharedPoolHealth;
import dev.strata.memory.Tier;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * A shared block store whose reads are slow: every read waits {@code readDelayNanos} first, one
 * read at a time (reads go through the manager's one I/O thread), then reads from the real store
 * it wraps. It stands for a tier slower than recomputing: a busy disk, a cluster behind a slow
 * network. Everything else is the wrapped store's.
 *
 * <p>Threads: as the wrapped store; the delay is read once per read.
 */
final class SlowReads implements SharedBlockStore {
    private final SharedBlockStore inner;
    private volatile long readDelayNanos; // each read waits this long first

    SlowReads(SharedBlockStore inner) {
        this.inner = inner;
    }

    /** Sets the wait before each read from now on. */
    void readDelayNanos(long nanos) {
        readDelayNanos = nanos;
    }

    @Override
    public boolean read(ObjectKey key, List<MemorySegment> destinations) {
        long until = System.nanoTime() + readDelayNanos;
        for (long left = readDelayNanos; left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
        return inner.read(key, destinations);
    }

    @Override
    public int matchPrefix(ObjectKey[] keys, int from, int count) {
        return inner.matchPrefix(keys, from, count);
    }

    @Override
    public PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
        return inner.publish(key, sources);
    }

    @Override
    public Tier tier() {
        return inner.tier();
    }

    @Override
    public SharedPoolHealth.Status health() {
        return inner.health();
    }

    @Override
    public void used(ObjectKey key) {
        inner.used(key);
    }

    @Override
    public void evicted(ObjectKey key, MemorySegment bytes) {
        inner.evicted(key, bytes);
    }

    @Override
    public void writeMetrics(dev.strata.memory.metrics.PrometheusText out) {
        inner.writeMetrics(out);
    }
}
