package dev.strata.cluster;

import dev.strata.cache.ObjectKey;
import io.lettuce.core.output.CommandOutput;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The output of one block read ({@code GET}): the value is checked and landed in the reader's
 * destinations straight from the client's receive buffer, as the reply is decoded, with
 * {@link ClusterBlockFormat#land} (header checks, then one pass that copies and checksums).
 *
 * <h2>Design note</h2>
 * The reply of a read may be decoded after the read has ended for its caller: the client
 * completes a command by its timeout, or fails it with its connection, while the reply can still
 * arrive. The destinations then belong to someone else again, so a late reply must not touch
 * them. One state decides, by compare-and-set, which comes first: {@link #set} moves it from
 * WAITING to LANDING and lands, or {@link #abandon} moves it from WAITING to ABANDONED and the
 * reply is dropped. A caller whose abandon loses waits for {@link #landed} instead: the landing
 * was under way and its outcome stands.
 *
 * <p>{@link BlockPipeline} lands a reply from its own socket reads instead of through
 * {@link #set}: it takes the same state with {@link #beginLanding} before it touches the
 * destinations and ends it with {@link #finishLanding} or {@link #failLanding}.
 *
 * <p>Threads: {@link #set} on the client's event loop, {@link #beginLanding},
 * {@link #finishLanding} and {@link #failLanding} on the pipeline's thread; {@link #abandon} and
 * {@link #landed} from any thread.
 */
final class ClusterBlockRead extends CommandOutput<String, ClusterValue, ClusterBlockRead.Outcome> {
    /**
     * What a read found.
     *
     * @param bad  the check the value failed, or null
     * @param hit  true when the destinations hold the verified block
     * @param size bytes of the value read (0 when absent)
     * @param sha1 hex SHA-1 of a value that failed a check (to delete it only while it holds those bytes), else null
     */
    record Outcome(boolean hit, ClusterMetrics.Corruption bad, int size, String sha1) {
        static final Outcome ABSENT = new Outcome(false, null, 0, null);
    }

    private static final int WAITING = 0;
    private static final int LANDING = 1;
    private static final int ABANDONED = 2;

    private final ObjectKey key;
    private final long geometry;        // fingerprint the value must carry
    private final long payloadBytes;    // bytes the destinations hold together
    private final List<MemorySegment> destinations;
    private final AtomicInteger state = new AtomicInteger(WAITING);
    private final CompletableFuture<Outcome> landed = new CompletableFuture<>();

    ClusterBlockRead(ObjectKey key, long geometry, long payloadBytes, List<MemorySegment> destinations) {
        super(ClusterValueCodec.INSTANCE, Outcome.ABSENT);
        this.key = key;
        this.geometry = geometry;
        this.payloadBytes = payloadBytes;
        this.destinations = destinations;
    }

    /** The reply's bulk string (null: no such key): checked and landed unless the read was abandoned. */
    @Override
    public void set(ByteBuffer bytes) {
        if (!state.compareAndSet(WAITING, LANDING)) {
            return;
        }
        Outcome o;
        try {
            o = bytes == null ? Outcome.ABSENT : land(bytes);
        } catch (RuntimeException e) {
            landed.completeExceptionally(e);
            throw e;
        }
        output = o;
        landed.complete(o);
    }

    private Outcome land(ByteBuffer bytes) {
        int size = bytes.remaining();
        ClusterMetrics.Corruption bad = ClusterBlockFormat.land(MemorySegment.ofBuffer(bytes.duplicate()), key, geometry, payloadBytes,
                destinations);
        return bad == null ? new Outcome(true, null, size, null) : new Outcome(false, bad, size, sha1Hex(bytes.duplicate()));
    }

    /** The block read. */
    ObjectKey key() {
        return key;
    }

    /** The geometry fingerprint the value must carry. */
    long geometry() {
        return geometry;
    }

    /** Bytes the destinations hold together: the payload the value must have. */
    long payloadBytes() {
        return payloadBytes;
    }

    /** Where the payload lands, in order. */
    List<MemorySegment> destinations() {
        return destinations;
    }

    /** Takes the read for a landing that writes into the destinations; false once it was abandoned (drop the reply). */
    boolean beginLanding() {
        return state.compareAndSet(WAITING, LANDING);
    }

    /** Ends a landing begun with {@link #beginLanding} (or a reply without a value) with its outcome. */
    void finishLanding(Outcome o) {
        output = o;
        landed.complete(o);
    }

    /** Ends a landing begun with {@link #beginLanding} that could not complete: the destinations hold no verified block. */
    void failLanding(Throwable cause) {
        landed.completeExceptionally(cause);
    }

    /** Ends the read for its caller before a reply landed; false when the landing has begun (then see {@link #landed}). */
    boolean abandon() {
        return state.compareAndSet(WAITING, ABANDONED);
    }

    /** Completes with the outcome once the reply has landed. */
    CompletableFuture<Outcome> landed() {
        return landed;
    }

    /** The hex SHA-1 of {@code bytes}' remaining bytes, as Redis' {@code redis.sha1hex} gives it. */
    static String sha1Hex(ByteBuffer bytes) {
        try {
            java.security.MessageDigest sha1 = java.security.MessageDigest.getInstance("SHA-1");
            sha1.update(bytes);
            return HexFormat.of().formatHex(sha1.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-1", e);
        }
    }
}
