package dev.strata.node.client;

import dev.strata.cache.ObjectKey;
import dev.strata.node.daemon.IndexProtocol;
import dev.strata.node.index.BlockIndex;
import dev.strata.node.index.CorruptIndexEntryException;
import dev.strata.node.index.IndexIdentityException;
import dev.strata.node.index.IndexStats;
import dev.strata.node.rpc.RpcClient;
import dev.strata.node.rpc.RpcClientOptions;
import dev.strata.node.rpc.RpcResponse;
import dev.strata.node.rpc.RpcStatus;
import dev.strata.node.rpc.RpcUnavailableException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The pool's block index served by {@code strata node}, called over shared-memory RPC
 * ({@link IndexProtocol}): the same {@link BlockIndex} operations with the same results as the
 * embedded index, so that callers do not know which they have.
 *
 * <p>Design note: one RPC channel per instance, guarded by a lock (calls are short: the daemon
 * answers in about a microsecond). {@link #matchPrefix} sends the keys in batches of as many as
 * fit a slot's payload, all posted before the first answer is awaited, and stops at the first
 * batch that is not wholly published. At attach the index identity (block-hash version and model
 * fingerprint) is checked against the caller's, as the embedded index does; a daemon whose index
 * has no model yet takes the caller's from HELLO. A lost daemon is an
 * exception ({@link NodeUnavailableException}) rather than a status, since no {@link BlockIndex}
 * result means "ask again later"; the call after it attaches again if a new daemon serves the
 * rpc path (whose index, kept in the pool, has every block published before).
 *
 * <p>Ownership: the daemon holds reservations and pins for this client; when this client
 * closes or dies, the daemon aborts and releases them.
 *
 * <p>Threads: any; calls are serialised on the channel.
 */
public final class RemoteBlockIndex implements BlockIndex {
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;

    private final Path rpcPath;
    private final RpcClientOptions options;
    private final int hashVersion;
    private final ObjectKey modelFingerprint;
    private final long patienceNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private RpcClient client;   // null after a lost daemon until the next attach
    private RpcResponse response;
    private int[] batchSizes; // MATCH batches in flight, a ring of the channel's capacity
    private long daemonPid;
    private boolean closed;

    private RemoteBlockIndex(Path rpcPath, RpcClientOptions options, int hashVersion, ObjectKey modelFingerprint,
                             Duration patience) {
        this.rpcPath = rpcPath;
        this.options = options;
        this.hashVersion = hashVersion;
        this.modelFingerprint = modelFingerprint;
        this.patienceNanos = patience.toNanos();
    }

    /**
     * Attaches to the daemon serving {@code rpcPath} and checks its index's identity.
     *
     * @param patience how long a call waits for a daemon that lives but does not answer before
     *                 it throws {@link NodeUnavailableException}
     * @throws NodeUnavailableException if no daemon serves the path
     * @throws IndexIdentityException   if the daemon's index holds another model or hash version
     */
    public static RemoteBlockIndex attach(Path rpcPath, int hashVersion, ObjectKey modelFingerprint, RpcClientOptions options,
                                          Duration patience) {
        RemoteBlockIndex index = new RemoteBlockIndex(rpcPath, options, hashVersion, modelFingerprint, patience);
        index.lock.lock();
        try {
            index.connect();
        } finally {
            index.lock.unlock();
        }
        return index;
    }

    /** Attaches with default RPC options and 30 s of patience. */
    public static RemoteBlockIndex attach(Path rpcPath, int hashVersion, ObjectKey modelFingerprint) {
        return attach(rpcPath, hashVersion, modelFingerprint, RpcClientOptions.defaults(), Duration.ofSeconds(30));
    }

    /** Lock held. */
    private void connect() {
        RpcClient c;
        try {
            c = RpcClient.attach(rpcPath, options);
        } catch (RpcUnavailableException e) {
            throw new NodeUnavailableException(rpcPath, e.getMessage(), e);
        }
        RpcResponse r = new RpcResponse(c.payloadCapacity());
        int status = c.call(IndexProtocol.HELLO, hashVersion, modelFingerprint.high(), modelFingerprint.low(), 0, r);
        if (status != RpcStatus.OK) {
            c.close();
            throw new NodeUnavailableException(rpcPath, "the daemon did not answer HELLO: " + RpcStatus.name(status));
        }
        if (c.payloadCapacity() < IndexProtocol.MIN_PAYLOAD) {
            c.close();
            throw new IllegalStateException("strata node at " + rpcPath + " serves slots of " + c.payloadCapacity()
                    + " payload bytes; the index protocol needs at least " + IndexProtocol.MIN_PAYLOAD);
        }
        ObjectKey theirs = new ObjectKey(r.value(1), r.value(2));
        if (r.value(0) != hashVersion || !theirs.equals(modelFingerprint)) {
            c.close();
            throw new IndexIdentityException("strata node at " + rpcPath + " (pid " + r.value(3) + ") serves the block index of model "
                    + "fingerprint " + theirs + " with block-hash version " + r.value(0) + ", but this model has fingerprint "
                    + modelFingerprint + " with block-hash version " + hashVersion + ": refusing to attach (its block hashes would"
                    + " not name the same blocks); serve this model through another strata node with its own pool and rpc"
                    + " (--pool, --rpc), or start each node with its model's node.model-fingerprint (strata model inspect DIR prints it)");
        }
        this.client = c;
        this.response = r;
        this.batchSizes = new int[c.capacity()];
        this.daemonPid = r.value(3);
    }

    /** Lock held: the channel, attaching again after a lost daemon. */
    private RpcClient channel() {
        if (closed) {
            throw new IllegalStateException("remote block index of " + rpcPath + " is closed");
        }
        if (client == null) {
            connect();
        }
        RpcClient c = client;
        while (c.outstanding() > 0) { // answers left by a call that failed half-way: not ours to read
            awaitOne(c);
        }
        return c;
    }

    /** Lock held: posts one request and waits for its answer; returns the RPC status. */
    private int call(int opcode, int payloadLength, long a0, long a1, long a2, long a3) {
        RpcClient c = channel();
        long seq = c.post(opcode, payloadLength, a0, a1, a2, a3, 0L, 0L);
        if (seq < 0) {
            throw lost(c, (int) seq);
        }
        return awaitOne(c);
    }

    /** Lock held: the next response, waiting through unresponsive spells up to the patience. */
    private int awaitOne(RpcClient c) {
        long start = System.nanoTime();
        while (true) {
            int status = c.await(response);
            if (status != RpcStatus.SERVER_UNRESPONSIVE) {
                if (status < 0 && status != RpcStatus.UNKNOWN_OPCODE && status != RpcStatus.HANDLER_FAILED
                        && status != RpcStatus.BAD_REQUEST) {
                    throw lost(c, status);
                }
                return status;
            }
            if (System.nanoTime() - start > patienceNanos) {
                throw lost(c, status);
            }
        }
    }

    private NodeUnavailableException lost(RpcClient c, int status) {
        client = null;
        c.close();
        String what = switch (status) {
            case RpcStatus.SERVER_DEAD -> "the daemon (pid " + daemonPid + ") died";
            case RpcStatus.SERVER_STOPPED -> "the daemon (pid " + daemonPid + ") stopped";
            case RpcStatus.SERVER_UNRESPONSIVE -> "the daemon (pid " + daemonPid + ") did not answer within "
                    + Duration.ofNanos(patienceNanos);
            default -> "the request failed: " + RpcStatus.name(status);
        };
        return new NodeUnavailableException(rpcPath, what + "; the operation did not complete (start strata node again)");
    }

    /** Lock held: turns a non-OK call status into the exception the embedded index would throw. */
    private void check(int status, String what) {
        check(status, what, 0L);
    }

    private void check(int status, String what, long pin) {
        switch (status) {
            case IndexProtocol.OK -> {
            }
            case IndexProtocol.BAD_ARGUMENT -> throw new IllegalArgumentException(message());
            case IndexProtocol.CORRUPT_ENTRY -> throw new CorruptIndexEntryException("(via strata node)", response.value(0), message());
            case IndexProtocol.NOT_YOUR_PIN -> throw new IllegalArgumentException("pin " + pin + " is not a pin of this process "
                    + "(taken through strata node at " + rpcPath + ")");
            default -> throw new IllegalStateException("strata node at " + rpcPath + " answered " + what + " with status "
                    + RpcStatus.name(status));
        }
    }

    private String message() {
        byte[] b = new byte[response.payloadLength()];
        MemorySegment.copy(response.payload(), ValueLayout.JAVA_BYTE, 0, b, 0, b.length);
        return new String(b, StandardCharsets.UTF_8);
    }

    private long simple(int opcode, String what, long a0, long a1, long a2, long a3) {
        lock.lock();
        try {
            check(call(opcode, 0, a0, a1, a2, a3), what);
            return response.value(0);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long reserve(long keyHigh, long keyLow, long length) {
        return simple(IndexProtocol.RESERVE, "reserve", keyHigh, keyLow, length, 0);
    }

    @Override
    public long publish(long keyHigh, long keyLow, long length, long checksum) {
        return simple(IndexProtocol.PUBLISH, "publish", keyHigh, keyLow, length, checksum);
    }

    @Override
    public long abort(long keyHigh, long keyLow) {
        return simple(IndexProtocol.ABORT, "abort", keyHigh, keyLow, 0, 0);
    }

    @Override
    public long acquire(long keyHigh, long keyLow, long[] location) {
        if (location.length < LOCATION_LONGS) {
            throw new IllegalArgumentException("location array of " + location.length + " longs; acquire needs " + LOCATION_LONGS);
        }
        lock.lock();
        try {
            check(call(IndexProtocol.ACQUIRE, 0, keyHigh, keyLow, 0, 0), "acquire");
            long pin = response.value(0);
            if (pin > 0) {
                for (int i = 0; i < LOCATION_LONGS; i++) {
                    location[i] = response.value(1 + i);
                }
            }
            return pin;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long release(long pin) {
        lock.lock();
        try {
            check(call(IndexProtocol.RELEASE, 0, pin, 0, 0, 0), "release", pin);
            return response.value(0);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int matchPrefix(long[] keys, int from, int count) {
        if (from < 0 || count < 0 || 2L * (from + count) > keys.length) {
            throw new IndexOutOfBoundsException("keys [" + from + ", " + (from + count) + ") outside an array of "
                    + keys.length / 2 + " keys");
        }
        if (count == 0) {
            return 0;
        }
        lock.lock();
        try {
            RpcClient c = channel();
            int perRequest = c.payloadCapacity() / IndexProtocol.KEY_BYTES;
            int matched = 0;
            int next = 0; // keys posted so far
            int[] sizes = batchSizes;
            int head = 0; // batches awaited
            int tail = 0; // batches posted
            boolean shortBatch = false;
            while (matched < count && !shortBatch) {
                // post as many batches as the ring holds, then take answers in order
                while (next < count && tail - head < sizes.length) {
                    int n = Math.min(perRequest, count - next);
                    MemorySegment p = c.nextRequestPayload();
                    for (int i = 0; i < n; i++) {
                        p.set(LONG, 16L * i, keys[2 * (from + next + i)]);
                        p.set(LONG, 16L * i + 8, keys[2 * (from + next + i) + 1]);
                    }
                    long seq = c.post(IndexProtocol.MATCH, n * IndexProtocol.KEY_BYTES, n, 0, 0, 0, 0, 0);
                    if (seq < 0) {
                        throw lost(c, (int) seq);
                    }
                    sizes[tail++ % sizes.length] = n;
                    next += n;
                }
                int status = awaitOne(c);
                int n = sizes[head++ % sizes.length];
                check(status, "match");
                matched += (int) response.value(0);
                shortBatch = response.value(0) < n;
            }
            while (head < tail) { // answers to batches past the first gap are not needed
                check(awaitOne(c), "match");
                head++;
            }
            return matched;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long evict(long bytes) {
        return simple(IndexProtocol.EVICT, "evict", bytes, 0, 0, 0);
    }

    @Override
    public long reap() {
        return simple(IndexProtocol.REAP, "reap", 0, 0, 0, 0);
    }

    @Override
    public IndexStats stats() {
        lock.lock();
        try {
            check(call(IndexProtocol.STATS, 0, 0, 0, 0, 0), "stats");
            MemorySegment p = response.payload();
            long[] v = new long[IndexProtocol.STATS_LONGS];
            for (int i = 0; i < v.length; i++) {
                v[i] = p.get(LONG, 8L * i);
            }
            return new IndexStats((int) v[8], new ObjectKey(v[9], v[10]), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int hashVersion() {
        return hashVersion;
    }

    @Override
    public ObjectKey modelFingerprint() {
        return modelFingerprint;
    }

    /** The pid of the daemon this index last attached to. */
    public long daemonPid() {
        lock.lock();
        try {
            return daemonPid;
        } finally {
            lock.unlock();
        }
    }

    /** The rpc path of the daemon. */
    public Path rpcPath() {
        return rpcPath;
    }

    /** Detaches from the daemon, which aborts this client's reservations and releases its pins. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            if (client != null) {
                client.close();
                client = null;
            }
        } finally {
            lock.unlock();
        }
    }
}
