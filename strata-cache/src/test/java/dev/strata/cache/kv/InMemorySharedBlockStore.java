package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * Test fixture: a {@link SharedBlockStore} kept in this JVM's heap, with a capacity in blocks and
 * oldest-first eviction, standing in for the pool-backed store of strata-node. Several managers
 * given the same instance share blocks as separate processes would through a pool. Fault
 * injection: {@link #readDelayMillis} makes every read wait that long first, as a store behind a
 * slow network would.
 *
 * <p>Threads: thread-safe (one monitor).
 */
final class InMemorySharedBlockStore implements SharedBlockStore {
    private final int capacityBlocks;
    private final LinkedHashMap<ObjectKey, byte[]> blocks = new LinkedHashMap<>(); // oldest first
    int publishes; // blocks published
    int reads; // successful reads
    volatile long readDelayMillis; // each read waits this long before it reads (0: none)

    InMemorySharedBlockStore(int capacityBlocks) {
        this.capacityBlocks = capacityBlocks;
    }

    @Override
    public synchronized int matchPrefix(ObjectKey[] keys, int from, int count) {
        int n = 0;
        while (n < count && blocks.containsKey(keys[from + n])) {
            n++;
        }
        return n;
    }

    @Override
    public boolean read(ObjectKey key, List<MemorySegment> destinations) {
        long delay = readDelayMillis;
        if (delay > 0) {
            try {
                Thread.sleep(delay); // outside the monitor: other calls go on meanwhile
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while delaying a read of " + key, e);
            }
        }
        return readNow(key, destinations);
    }

    private synchronized boolean readNow(ObjectKey key, List<MemorySegment> destinations) {
        byte[] b = blocks.get(key);
        if (b == null) {
            return false;
        }
        long total = 0;
        for (MemorySegment d : destinations) {
            total += d.byteSize();
        }
        if (total != b.length) {
            throw new IllegalArgumentException("destinations of " + total + " bytes for block " + key + " of " + b.length);
        }
        long at = 0;
        for (MemorySegment d : destinations) {
            MemorySegment.copy(b, (int) at, d, ValueLayout.JAVA_BYTE, 0, (int) d.byteSize());
            at += d.byteSize();
        }
        reads++;
        return true;
    }

    @Override
    public synchronized PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
        if (blocks.containsKey(key)) {
            return PublishStatus.EXISTS;
        }
        if (capacityBlocks == 0) {
            return PublishStatus.FULL;
        }
        while (blocks.size() >= capacityBlocks) {
            blocks.remove(blocks.keySet().iterator().next());
        }
        long total = 0;
        for (MemorySegment s : sources) {
            total += s.byteSize();
        }
        byte[] b = new byte[(int) total];
        int at = 0;
        for (MemorySegment s : sources) {
            MemorySegment.copy(s, ValueLayout.JAVA_BYTE, 0, b, at, (int) s.byteSize());
            at += (int) s.byteSize();
        }
        blocks.put(key, b);
        publishes++;
        return PublishStatus.PUBLISHED;
    }

    synchronized boolean contains(ObjectKey key) {
        return blocks.containsKey(key);
    }
}
