package dev.strata.node.daemon;

/**
 * The block index operations spoken over shared-memory RPC between engine processes and
 * {@code strata node}: one opcode per {@link dev.strata.node.index.BlockIndex} operation, every
 * argument and result a long.
 *
 * <pre>
 * opcode           args                              values                         payload
 * HELLO       1    a0 hash version, a1/a2 model      v0 hash version, v1/v2 model   -
 *                  fingerprint high/low (the         fingerprint high/low, v3 pid
 *                  client's; 0 offers none)
 * RESERVE     2    a0/a1 key high/low, a2 length     v0 handle or status            -
 * PUBLISH     3    a0/a1 key, a2 length, a3 checksum v0 status                      -
 * ABORT       4    a0/a1 key                         v0 status                      -
 * ACQUIRE     5    a0/a1 key                         v0 pin or status,              -
 *                                                    v1..v4 handle, length,
 *                                                    checksum, epoch
 * RELEASE     6    a0 pin                            v0 status                      -
 * MATCH       7    a0 key count n                    v0 leading keys published      request: n keys,
 *                                                                                   16 bytes each (high, low)
 * EVICT       8    a0 bytes                          v0 bytes freed                 -
 * REAP        9    -                                 v0 records cleared             -
 * STATS      10    -                                 -                              response: STATS_LONGS longs
 * </pre>
 *
 * <p>Identity: HELLO carries the client's block-hash version and model fingerprint; a daemon whose
 * index has no model yet (started without one) takes them as the index's, and every HELLO answers
 * the index's identity, which the client compares with its own before any other call.
 *
 * <p>Call statuses (the RPC status, not the index result in v0): {@link #OK}; {@link #BAD_ARGUMENT}
 * and {@link #CORRUPT_ENTRY} carry the daemon's message as UTF-8 in the response payload, the
 * latter the entry number in v0; {@link #NOT_YOUR_PIN} for a pin this client does not hold.
 *
 * <p>Constants only; any thread.
 */
public final class IndexProtocol {
    public static final int HELLO = 1;
    public static final int RESERVE = 2;
    public static final int PUBLISH = 3;
    public static final int ABORT = 4;
    public static final int ACQUIRE = 5;
    public static final int RELEASE = 6;
    public static final int MATCH = 7;
    public static final int EVICT = 8;
    public static final int REAP = 9;
    public static final int STATS = 10;

    public static final int OK = 0;
    public static final int BAD_ARGUMENT = 1;
    public static final int CORRUPT_ENTRY = 2;
    public static final int NOT_YOUR_PIN = 3;

    /** Bytes of one key in a MATCH payload. */
    public static final int KEY_BYTES = 16;
    /** Longs of a STATS response: capacity, published, writing, evicting, quarantined, pinned, live pins, published bytes, hash version, model high, model low. */
    public static final int STATS_LONGS = 11;
    /** The smallest payload per slot the protocol needs (STATS, error messages). */
    public static final int MIN_PAYLOAD = 128;

    private IndexProtocol() {
    }
}
