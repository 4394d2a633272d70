/**
 * The POOL tier: one memory pool (a file under {@code /dev/shm}, or a CXL/DAX device) mapped by
 * several processes, optionally interleaved over several files in 2 MiB stripes.
 *
 * <p>Structures in the pool, each with its descriptor class: {@link dev.strata.memory.pool.PoolHeader}
 * (identity, version, layout, and the root region it reserves for a structure built on the pool,
 * such as the KV block index of {@code strata-node}), {@code ProcessTable} (who has the pool open, for crash detection),
 * {@code ChunkTable} and {@code ObjectDescriptorTable} (allocation and publish state). Behaviour:
 * {@code PoolAllocator} (lock-free, cross-process allocation and reclaim of dead processes'
 * unpublished allocations), {@code PublishProtocol} (single writer, many readers, seqlock-checked
 * reads checked by {@link dev.strata.memory.Checksum64}, computed in the same pass as the copy),
 * {@code PoolFileSpace} (the space of a created pool file reserved up front) and
 * {@link dev.strata.memory.pool.PoolTier}, which ties them to the {@link dev.strata.memory.Tier}
 * interface and contains a fault on its mapping.
 */
package dev.strata.memory.pool;
