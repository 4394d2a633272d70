package dev.strata.cluster;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.memory.Checksum64;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The value a KV block is stored as in the cluster: a fixed header, then the block's bytes.
 *
 * <pre>
 * offset size field
 *  0      8   magic "STRATAKV" (ASCII)
 *  8      4   format version (1)
 * 12      4   header bytes (56)
 * 16      8   payload length, bytes
 * 24      8   geometry fingerprint ({@link #geometryFingerprint})
 * 32      8   block key, high 64 bits (the chained prefix hash the value is stored under)
 * 40      8   block key, low 64 bits
 * 48      8   Checksum64 of the payload
 * 56      -   payload
 * </pre>
 * All fields little-endian. A value passes {@link #verify} only if every field matches what the
 * reader expects (its key, its geometry, the length it asked for) and the payload's checksum
 * matches: anything else, a truncated value, garbage, a block of another geometry or one copied
 * under another key, is named by the failed check and never loaded.
 *
 * <p>Pure; any thread.
 */
public final class ClusterBlockFormat {
    /** "STRATAKV" read as a little-endian long. */
    static final long MAGIC = 0x564B415441525453L;
    /** The format version written and accepted. */
    static final int VERSION = 1;
    /** Header bytes before the payload. */
    public static final int HEADER_BYTES = 56;

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private ClusterBlockFormat() {
    }

    /**
     * The fingerprint of a KV geometry: two processes agree on it exactly when their blocks have
     * the same layers, heads, head size, dtype and tokens per block.
     */
    public static long geometryFingerprint(KvGeometry g) {
        return ModelFingerprint.of("kv-geometry", Integer.toString(g.layers()), Integer.toString(g.kvHeads()),
                Integer.toString(g.headDim()), g.dtype().label(), Integer.toString(g.blockTokens()),
                Integer.toString(g.bytesPerBlock())).hash64();
    }

    /** Encodes the concatenation of {@code sources} as a value (one pass: copy and checksum together). */
    static byte[] encode(ObjectKey key, long geometry, List<MemorySegment> sources) {
        long total = 0;
        for (MemorySegment s : sources) {
            total += s.byteSize();
        }
        if (total > Integer.MAX_VALUE - HEADER_BYTES) {
            throw new IllegalArgumentException("block " + key + " of " + total + " bytes is too large for one cluster value");
        }
        byte[] value = new byte[HEADER_BYTES + (int) total];
        MemorySegment v = MemorySegment.ofArray(value);
        Checksum64 sum = new Checksum64().reset();
        long at = HEADER_BYTES;
        for (MemorySegment s : sources) {
            sum.copyAndUpdate(s, 0, v, at, s.byteSize());
            at += s.byteSize();
        }
        v.set(LONG, 0, MAGIC);
        v.set(INT, 8, VERSION);
        v.set(INT, 12, HEADER_BYTES);
        v.set(LONG, 16, total);
        v.set(LONG, 24, geometry);
        v.set(LONG, 32, key.high());
        v.set(LONG, 40, key.low());
        v.set(LONG, 48, sum.value());
        return value;
    }

    /**
     * The first check {@code value} fails as the block {@code key} of {@code payloadBytes} bytes
     * under {@code geometry}, or null when it passes every check.
     */
    static ClusterMetrics.Corruption verify(byte[] value, ObjectKey key, long geometry, long payloadBytes) {
        if (value.length < HEADER_BYTES) {
            return ClusterMetrics.Corruption.SHORT;
        }
        MemorySegment v = MemorySegment.ofArray(value);
        if (v.get(LONG, 0) != MAGIC) {
            return ClusterMetrics.Corruption.MAGIC;
        }
        if (v.get(INT, 8) != VERSION || v.get(INT, 12) != HEADER_BYTES) {
            return ClusterMetrics.Corruption.VERSION;
        }
        long length = v.get(LONG, 16);
        if (length != value.length - HEADER_BYTES) {
            return ClusterMetrics.Corruption.SHORT;
        }
        if (v.get(LONG, 24) != geometry) {
            return ClusterMetrics.Corruption.GEOMETRY;
        }
        if (length != payloadBytes) {
            return ClusterMetrics.Corruption.LENGTH;
        }
        if (v.get(LONG, 32) != key.high() || v.get(LONG, 40) != key.low()) {
            return ClusterMetrics.Corruption.KEY;
        }
        if (Checksum64.of(v, HEADER_BYTES, length) != v.get(LONG, 48)) {
            return ClusterMetrics.Corruption.CHECKSUM;
        }
        return null;
    }

    /** Copies a verified value's payload into {@code destinations}, in order. */
    static void copyPayload(byte[] value, List<MemorySegment> destinations) {
        MemorySegment v = MemorySegment.ofArray(value);
        long at = HEADER_BYTES;
        for (MemorySegment d : destinations) {
            MemorySegment.copy(v, at, d, 0, d.byteSize());
            at += d.byteSize();
        }
    }
}
