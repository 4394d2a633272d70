package dev.strata.node.client;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.memory.Checksum64;
import dev.strata.memory.pool.PoolTier;
import dev.strata.node.index.BlockIndex;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * {@link SharedBlockStore} over any {@link BlockIndex} (embedded, or served by {@code strata node})
 * and this process's own mapping of the pool: the index says where a block lies, the bytes move
 * straight between the caller's segments and the pool mapping, checksummed in the same pass on
 * the way in and verified on the way out; a read holds a lease for the length of its copy.
 *
 * <p>Threads: any, as the index.
 */
public final class IndexBlockStore implements SharedBlockStore {
    private static final ThreadLocal<Checksum64> CHECKSUM = ThreadLocal.withInitial(Checksum64::new);
    private static final ThreadLocal<long[]> LOCATION = ThreadLocal.withInitial(() -> new long[BlockIndex.LOCATION_LONGS]);
    private static final ThreadLocal<long[]> KEYS = ThreadLocal.withInitial(() -> new long[2 * 256]);

    private final BlockIndex index;
    private final PoolTier tier;

    /** @param tier this process's mapping of the pool whose index {@code index} is */
    public IndexBlockStore(BlockIndex index, PoolTier tier) {
        this.index = index;
        this.tier = tier;
    }

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
        long lease = index.acquire(key.high(), key.low(), location);
        if (lease == BlockIndex.NO_LEASE) {
            index.reap(); // expired leases may be holding the records
            lease = index.acquire(key.high(), key.low(), location);
            if (lease == BlockIndex.NO_LEASE) {
                throw new IllegalStateException("block " + key + ": every lease record is in use in the block index of pool '"
                        + tier.name() + "' (too many reads at once)");
            }
        }
        if (lease == BlockIndex.NOT_FOUND) {
            return false;
        }
        try {
            long wanted = 0;
            for (MemorySegment d : destinations) {
                wanted += d.byteSize();
            }
            if (wanted != location[BlockIndex.LENGTH]) {
                throw new IllegalArgumentException("destinations of " + wanted + " bytes do not match block " + key + " of "
                        + location[BlockIndex.LENGTH] + " bytes");
            }
            return tier.scatterRead(location[BlockIndex.HANDLE], destinations); // verifies the Checksum64
        } finally {
            index.release(lease);
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
            Checksum64 checksum = CHECKSUM.get().reset();
            long at = handle;
            for (MemorySegment s : sources) {
                checksum.copyAndUpdate(s, 0, data, at, s.byteSize());
                at += s.byteSize();
            }
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
