package dev.strata.node.index;

import dev.strata.cache.ObjectKey;

/**
 * The global KV block index of one pool: block hash (a 128-bit key, passed as two longs) to the
 * block's place in the pool, its length, checksum and epoch, with publish state, read pins
 * (pins), owner and last access. Compact on purpose, so that the same operations run embedded
 * in an engine process ({@code PoolBlockIndex}) or inside the node daemon, called over
 * shared-memory RPC: every argument and result is a {@code long} (or an {@code int}), results
 * are values or negative status codes, and no operation allocates on its hot path.
 *
 * <p>Life of a block (single writer, many readers):
 * <pre>
 *   writer: h = reserve(k, len)      -&gt; pool handle h (&gt;= 0), or EXISTS / FULL
 *           copy len bytes into the pool at h, computing their Checksum64 in the same pass
 *           publish(k, len, checksum) -&gt; OK (readers may now find the block), or abort(k)
 *   reader: pin = acquire(k, loc)  -&gt; pin (&gt; 0) and loc = {handle, length, checksum, epoch},
 *                                      or NOT_FOUND / NO_PIN
 *           copy loc[LENGTH] bytes from the pool at loc[HANDLE], verify against loc[CHECKSUM]
 *           release(pin)           -&gt; OK, or EXPIRED if the pin had timed out meanwhile
 * </pre>
 * While a pin is held the block is pinned: eviction never frees it. Pins time out, and the
 * pins and reservations of a process that died are cleared ({@link #reap}), so no pin is
 * permanent.
 *
 * <p>Who the caller is: reservations and pins belong to the process that calls (its slot in
 * the pool's process table). A daemon that calls on behalf of clients owns them itself and must
 * abort and release what a disconnected client left behind; pin timeouts bound the rest.
 *
 * <p>Threads: implementations are safe for concurrent use by any thread of any process attached
 * to the pool.
 */
public interface BlockIndex extends AutoCloseable {

    /** Success of an operation that returns no value. */
    long OK = 0;
    /** No published block under this key (never published, evicted, or quarantined). */
    long NOT_FOUND = -1;
    /** {@link #reserve}: the key is already published, or being written or evicted by someone. */
    long EXISTS = -2;
    /** {@link #reserve}: no room even after evicting every unpinned block. */
    long FULL = -3;
    /** {@link #publish} / {@link #abort}: this process holds no reservation for the key. */
    long NOT_RESERVED = -4;
    /** {@link #release}: the pin had timed out (or was reaped); the block may be gone. */
    long EXPIRED = -5;
    /** {@link #acquire}: every pin record of this process is in use; release some first. */
    long NO_PIN = -6;

    /** Length of the {@code location} array {@link #acquire} fills. */
    int LOCATION_LONGS = 4;
    /** {@code location[HANDLE]}: the block's pool handle (byte offset in the pool's data area). */
    int HANDLE = 0;
    /** {@code location[LENGTH]}: the block's length in bytes. */
    int LENGTH = 1;
    /** {@code location[CHECKSUM]}: the {@link dev.strata.memory.Checksum64} of the block's bytes. */
    int CHECKSUM = 2;
    /** {@code location[EPOCH]}: the entry's epoch; it changes whenever the entry is reused. */
    int EPOCH = 3;

    /**
     * Reserves room for the block {@code key} of {@code length} bytes, evicting unpinned blocks
     * (oldest access first) if the pool is full.
     *
     * @return the pool handle to write the block into (&gt;= 0), {@link #EXISTS} or {@link #FULL}
     * @throws IllegalArgumentException if {@code length} is not positive
     */
    long reserve(long keyHigh, long keyLow, long length);

    /**
     * Makes the block reserved by this process under {@code key} readable by every process.
     *
     * @param length   bytes written, at most the reserved length
     * @param checksum {@link dev.strata.memory.Checksum64} of exactly those bytes
     * @return {@link #OK} or {@link #NOT_RESERVED}
     */
    long publish(long keyHigh, long keyLow, long length, long checksum);

    /**
     * Gives up the reservation of {@code key} held by this process and frees its room.
     *
     * @return {@link #OK} or {@link #NOT_RESERVED}
     */
    long abort(long keyHigh, long keyLow);

    /**
     * Takes a new pin on the block published under {@code key} and writes where it is into
     * {@code location} ({@link #LOCATION_LONGS} longs: {@link #HANDLE}, {@link #LENGTH},
     * {@link #CHECKSUM}, {@link #EPOCH}).
     *
     * @return the pin (&gt; 0), {@link #NOT_FOUND} or {@link #NO_PIN}
     * @throws CorruptIndexEntryException if the entry for {@code key} is corrupt (it is
     *                                    quarantined; later calls return NOT_FOUND)
     */
    long acquire(long keyHigh, long keyLow, long[] location);

    /**
     * Ends a pin taken by this process.
     *
     * @return {@link #OK}, or {@link #EXPIRED} if it had timed out (the pin may have been
     *         cleared and the block evicted meanwhile)
     * @throws IllegalArgumentException if {@code pin} is not a live pin of this process
     */
    long release(long pin);

    /**
     * The number of leading keys of {@code keys} whose blocks are published now; key {@code i}
     * is {@code (keys[2 * (from + i)], keys[2 * (from + i) + 1])}, for {@code i < count}.
     */
    int matchPrefix(long[] keys, int from, int count);

    /**
     * Evicts unpinned published blocks, oldest access first, until at least {@code bytes} of
     * pool room have been freed or nothing unpinned is left.
     *
     * @return bytes of pool room freed
     */
    long evict(long bytes);

    /**
     * Clears what dead or late processes left: expired pins, pins of dead processes,
     * reservations and evictions cut short by a death.
     *
     * @return the number of pins, reservations and evictions cleared
     */
    long reap();

    /** Entries by state, and the identity (a scan; not for hot paths). */
    IndexStats stats();

    /** The version of the block-hash function every attached process must use. */
    int hashVersion();

    /** The fingerprint of the model whose KV blocks the index holds. */
    ObjectKey modelFingerprint();

    /** Detaches from the index (this process's pins and reservations are released). */
    @Override
    void close();
}
