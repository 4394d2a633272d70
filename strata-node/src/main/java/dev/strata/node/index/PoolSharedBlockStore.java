package dev.strata.node.index;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.memory.Checksum64;
import dev.strata.memory.pool.PoolTier;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * {@link SharedBlockStore} over a pool's block index — embedded ({@link PoolBlockIndex}) or served
 * by {@code strata node} — and this process's own mapping of the pool: the index says where a
 * block lies, the bytes are copied straight between the caller's segments and the pool mapping,
 * with their {@link Checksum64} computed in the same pass on the way in and verified in the same
 * pass on the way out (the pool's seqlock read); a read holds a pin on the block for the length
 * of its copy.
 *
 * <p>Threads: any thread of any process attached to the pool, as the index. Allocates nothing
 * per call beyond what the index's eviction path allocates when the pool is full.
 */
public final class PoolSharedBlockStore implements SharedBlockStore {
    /** One checksum state and one location array per thread, reused. */
    private static final ThreadLocal<Checksum64> CHECKSUM = ThreadLocal.withInitial(Checksum64::new);
    private static final ThreadLocal<long[]> LOCATION = ThreadLocal.withInitial(() -> new long[BlockIndex.LOCATION_LONGS]);
    private static final ThreadLocal<long[]> KEYS = ThreadLocal.withInitial(() -> new long[2 * 256]); // (high, low) pairs

    private final BlockIndex index;
    private final PoolTier tier;

    /** A store over an index embedded in this process, on the pool it was opened on. */
    public PoolSharedBlockStore(PoolBlockIndex index) {
        this(index, index.tier());
    }

    /**
     * A store over any index of the pool that {@code tier} maps (for example one served by
     * {@code strata node}).
     *
     * @param tier this process's mapping of the pool whose index {@code index} is
     */
    public PoolSharedBlockStore(BlockIndex index, PoolTier tier) {
        this.index = index;
        this.tier = tier;
    }

    /** The pool this process maps, where the shared blocks live. */
    @Override
    public PoolTier tier() {
        return tier;
    }

    /** The index underneath. */
    public BlockIndex index() {
        return index;
    }

    @Override
    public int matchPrefix(ObjectKey[] keys, int from, int count) {
        long[] flat = KEYS.get();
        if (flat.length < 2 * count) {
            flat = new long[2 * count];
            KEYS.set(flat);
        }
        for (int i = 0; i < count; i++) {
            flat[2 * i] = keys[from + i].high();
            flat[2 * i + 1] = keys[from + i].low();
        }
        return index.matchPrefix(flat, 0, count);
    }

    @Override
    public boolean read(ObjectKey key, List<MemorySegment> destinations) {
        long[] location = LOCATION.get();
        long pin = index.acquire(key.high(), key.low(), location);
        if (pin == BlockIndex.NO_PIN) {
            index.reap(); // expired pins of this process may be holding the records
            pin = index.acquire(key.high(), key.low(), location);
            if (pin == BlockIndex.NO_PIN) {
                throw new IllegalStateException("block " + key + ": every pin record of this process is in use in the "
                        + "block index of pool '" + tier.name() + "' (too many reads at once)");
            }
        }
        if (pin == BlockIndex.NOT_FOUND) {
            return false;
        }
        try {
            long wanted = 0;
            for (MemorySegment d : destinations) {
                wanted += d.byteSize();
            }
            if (wanted != location[BlockIndex.LENGTH]) {
                throw new IllegalArgumentException("destinations of " + wanted + " bytes do not match block " + key
                        + " of " + location[BlockIndex.LENGTH] + " bytes");
            }
            // one pass: copy out of the pool mapping and verify the Checksum64 (throws CorruptObjectException)
            return tier.scatterRead(location[BlockIndex.HANDLE], destinations);
        } finally {
            index.release(pin);
        }
    }

    @Override
    public PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
        long length = 0;
        for (MemorySegment s : sources) {
            length += s.byteSize();
        }
        long handle = index.reserve(key.high(), key.low(), length);
        if (handle == BlockIndex.EXISTS) {
            return PublishStatus.EXISTS;
        }
        if (handle == BlockIndex.FULL) {
            return PublishStatus.FULL;
        }
        boolean published = false;
        try {
            MemorySegment data = tier.dataArea();
            // a fault is an InternalError, never a crash
            Checksum64 checksum = CHECKSUM.get().reset().copyPartsToMappedAndUpdate(sources, data, handle);
            published = index.publish(key.high(), key.low(), length, checksum.value()) == BlockIndex.OK;
            if (!published) {
                throw new IllegalStateException("block " + key + ": the reservation in the block index of pool '"
                        + tier.name() + "' was lost before publishing");
            }
            return PublishStatus.PUBLISHED;
        } finally {
            if (!published) {
                index.abort(key.high(), key.low());
            }
        }
    }
}
