/**
 * The global KV block index of a shared pool: block hash to pool location, kept in the pool's
 * root region so that it outlives every process that uses it.
 *
 * <p>{@link dev.strata.node.index.BlockIndex} is the compact interface (longs and status codes,
 * no allocation on hot paths) that an engine process calls embedded and that the node daemon
 * serves over shared-memory RPC; {@link dev.strata.node.index.PoolBlockIndex} implements it on the
 * pool ({@link dev.strata.node.index.IndexRegion} is its layout, {@link dev.strata.node.index.PinTable}
 * its pin protocol); {@link dev.strata.node.index.PoolSharedBlockStore} is the
 * {@link dev.strata.cache.kv.SharedBlockStore} a KV block manager uses; and
 * {@link dev.strata.node.index.PoolIndexInspector} reads the index without attaching.
 *
 * <p>Serving the interface from a daemon: the daemon opens the pool and one
 * {@code PoolBlockIndex}, and maps each request slot to one call: {@code reserve(kh, kl, len)},
 * {@code publish(kh, kl, len, checksum)}, {@code abort(kh, kl)}, {@code acquire(kh, kl, loc)}
 * (the four longs of {@code loc} go back in the reply), {@code release(pin)},
 * {@code matchPrefix(keys, from, n)} (keys as high/low pairs in the request slot), {@code evict},
 * {@code reap}. Clients attach to the same pool to copy bytes themselves: into
 * {@code PoolTier.dataArea()} at the reserved handle (computing the Checksum64 while copying)
 * and out of it at {@code loc[HANDLE]} (verifying against {@code loc[CHECKSUM]}; or through
 * {@code PoolTier.read}, which also detects a block freed during the copy). Reservations and
 * pins taken through the daemon belong to the daemon's process slot: the daemon must abort and
 * release what a client that disconnects or dies left behind (pin timeouts bound the rest).
 */
package dev.strata.node.index;
