package dev.strata.node.daemon;

import dev.strata.cache.ObjectKey;
import dev.strata.node.index.BlockIndex;
import dev.strata.node.index.CorruptIndexEntryException;
import dev.strata.node.index.IndexStats;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.rpc.RpcCall;
import dev.strata.node.rpc.RpcHandler;
import dev.strata.node.rpc.RpcStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

/**
 * Serves a {@link BlockIndex} over shared-memory RPC ({@link IndexProtocol}): the daemon's side.
 *
 * <p>Design note: the daemon calls the index on behalf of its clients, so the index sees the
 * daemon as the owner of every reservation and pin. This service therefore keeps, per channel,
 * the keys the client reserved and not yet published or aborted, and the pins it holds; a
 * client may release only its own pins, and when a client detaches or dies
 * ({@link #channelReleased}) its reservations are aborted and its pins released, which is what
 * the index would have done for a dead process of its own. Pin timeouts bound anything else.
 * A service built with a learner ({@link #IndexService(PoolBlockIndex, int, boolean)}) gives an
 * index that has no model yet the identity offered by the first client's HELLO; the client then
 * compares the identity answered with its own, as always.
 *
 * <p>Threads: the RPC server's polling thread only (one request at a time), which is why the
 * per-channel sets need no locking. Allocates nothing per request except when a set grows.
 */
public final class IndexService implements RpcHandler {
    private static final System.Logger LOG = System.getLogger(IndexService.class.getName());
    private static final ValueLayout.OfLong KEY_LONG = ValueLayout.JAVA_LONG_UNALIGNED;

    private final BlockIndex index;
    private final PoolBlockIndex learner; // null: the identity is never learned
    private final boolean learnVersion;    // the learner takes the client's hash version too
    private final KeySet[] reservations; // [channel] keys reserved through this channel
    private final KeySet[] pins;       // [channel] (0, pin) of pins taken through this channel
    private final long[] location = new long[BlockIndex.LOCATION_LONGS];
    private long[] keys = new long[2 * 64]; // MATCH scratch, grown to the largest payload once

    /**
     * @param index    the index to serve (the daemon's own, embedded)
     * @param channels channels of the RPC region
     */
    public IndexService(BlockIndex index, int channels) {
        this(index, null, false, channels);
    }

    /**
     * A service that, while {@code index} has no model ({@link PoolBlockIndex#NO_FINGERPRINT}),
     * takes the model fingerprint (and, if {@code learnVersion}, the block-hash version) of the
     * first client that says HELLO.
     *
     * @param index        the daemon's own index
     * @param channels     channels of the RPC region
     * @param learnVersion the node was given no hash version either
     */
    public IndexService(PoolBlockIndex index, int channels, boolean learnVersion) {
        this(index, index, learnVersion, channels);
    }

    private IndexService(BlockIndex index, PoolBlockIndex learner, boolean learnVersion, int channels) {
        this.index = index;
        this.learner = learner;
        this.learnVersion = learnVersion;
        this.reservations = new KeySet[channels];
        this.pins = new KeySet[channels];
        for (int c = 0; c < channels; c++) {
            reservations[c] = new KeySet();
            pins[c] = new KeySet();
        }
    }

    @Override
    public void handle(RpcCall call) {
        int c = call.channel();
        try {
            switch (call.opcode()) {
                case IndexProtocol.HELLO -> hello(call);
                case IndexProtocol.RESERVE -> {
                    long h = index.reserve(call.arg(0), call.arg(1), call.arg(2));
                    if (h >= 0) {
                        reservations[c].add(call.arg(0), call.arg(1));
                    }
                    call.value(0, h);
                }
                case IndexProtocol.PUBLISH -> {
                    if (!reservations[c].contains(call.arg(0), call.arg(1))) {
                        call.value(0, BlockIndex.NOT_RESERVED); // another client's reservation is not this one's to publish
                        return;
                    }
                    long r = index.publish(call.arg(0), call.arg(1), call.arg(2), call.arg(3));
                    reservations[c].remove(call.arg(0), call.arg(1));
                    call.value(0, r);
                }
                case IndexProtocol.ABORT -> {
                    if (!reservations[c].remove(call.arg(0), call.arg(1))) {
                        call.value(0, BlockIndex.NOT_RESERVED);
                        return;
                    }
                    call.value(0, index.abort(call.arg(0), call.arg(1)));
                }
                case IndexProtocol.ACQUIRE -> {
                    long pin = index.acquire(call.arg(0), call.arg(1), location);
                    if (pin > 0) {
                        pins[c].add(0L, pin);
                        for (int i = 0; i < BlockIndex.LOCATION_LONGS; i++) {
                            call.value(1 + i, location[i]);
                        }
                    }
                    call.value(0, pin);
                }
                case IndexProtocol.RELEASE -> {
                    long pin = call.arg(0);
                    if (!pins[c].remove(0L, pin)) {
                        call.status(IndexProtocol.NOT_YOUR_PIN);
                        return;
                    }
                    call.value(0, index.release(pin));
                }
                case IndexProtocol.MATCH -> call.value(0, matchPrefix(call));
                case IndexProtocol.EVICT -> call.value(0, index.evict(call.arg(0)));
                case IndexProtocol.REAP -> call.value(0, index.reap());
                case IndexProtocol.STATS -> stats(call);
                default -> call.status(RpcStatus.UNKNOWN_OPCODE);
            }
        } catch (CorruptIndexEntryException e) {
            call.status(IndexProtocol.CORRUPT_ENTRY).value(0, e.entry());
            message(call, e.getMessage());
        } catch (IllegalArgumentException e) {
            call.status(IndexProtocol.BAD_ARGUMENT);
            message(call, e.getMessage());
        }
    }

    /** Learns the client's identity if the index has none and a learner is set, then answers the index's. */
    private void hello(RpcCall call) {
        ObjectKey offered = new ObjectKey(call.arg(1), call.arg(2));
        if (learner != null && call.arg(0) > 0 && call.arg(0) <= Integer.MAX_VALUE && !offered.equals(PoolBlockIndex.NO_FINGERPRINT)
                && learner.learnIdentity((int) call.arg(0), offered, learnVersion)) {
            LOG.log(System.Logger.Level.INFO, "block index model learned from the client of channel " + call.channel()
                    + ": fingerprint " + offered + " with block-hash version " + index.hashVersion()
                    + " (kept in the pool's index; servers of other models are refused)");
        }
        call.value(0, index.hashVersion()).value(1, index.modelFingerprint().high()).value(2, index.modelFingerprint().low())
                .value(3, ProcessHandle.current().pid());
    }

    private int matchPrefix(RpcCall call) {
        long n = call.arg(0);
        if (n < 0 || n * IndexProtocol.KEY_BYTES > call.requestPayloadLength()) {
            throw new IllegalArgumentException("match of " + n + " keys with a payload of " + call.requestPayloadLength()
                    + " bytes (" + IndexProtocol.KEY_BYTES + " bytes per key)");
        }
        int count = (int) n;
        if (keys.length < 2 * count) {
            keys = new long[2 * count];
        }
        MemorySegment p = call.requestPayload();
        for (int i = 0; i < 2 * count; i++) {
            keys[i] = p.get(KEY_LONG, 8L * i);
        }
        return index.matchPrefix(keys, 0, count);
    }

    private void stats(RpcCall call) {
        IndexStats s = index.stats();
        long[] v = {s.capacity(), s.published(), s.writing(), s.evicting(), s.quarantined(), s.pinned(), s.livePins(),
                s.publishedBytes(), s.hashVersion(), s.modelFingerprint().high(), s.modelFingerprint().low()};
        MemorySegment out = call.responsePayload();
        for (int i = 0; i < v.length; i++) {
            out.set(KEY_LONG, 8L * i, v[i]);
        }
        call.responsePayloadLength(8 * v.length);
    }

    private static void message(RpcCall call, String text) {
        byte[] bytes = String.valueOf(text).getBytes(StandardCharsets.UTF_8);
        int n = Math.min(bytes.length, call.payloadCapacity());
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, call.responsePayload(), 0, n);
        call.responsePayloadLength(n);
    }

    /** Aborts the reservations and releases the pins the client of {@code channel} left behind. */
    @Override
    public void channelReleased(int channel, boolean died) {
        int[] counts = new int[2];
        reservations[channel].drain((h, l) -> {
            try {
                index.abort(h, l);
                counts[0]++;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "channel " + channel + ": aborting a reservation failed", e);
            }
        });
        pins[channel].drain((ignored, pin) -> {
            try {
                index.release(pin);
                counts[1]++;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "channel " + channel + ": releasing pin " + pin + " failed", e);
            }
        });
        if (counts[0] + counts[1] > 0) {
            LOG.log(System.Logger.Level.INFO, "channel " + channel + (died ? " (client died)" : " (client detached)")
                    + ": aborted " + counts[0] + " reservations, released " + counts[1] + " pins");
        }
    }

    /** Reservations and pins held for the client of {@code channel} (polling thread, or tests after it stopped). */
    int held(int channel) {
        return reservations[channel].size() + pins[channel].size();
    }
}
