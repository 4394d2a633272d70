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
 * under another key, is named by the failed check and never loaded. {@link #land} checks the
 * header, then copies the payload to its destination and checksums it in the same pass.
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

    /** Bytes of the value of a block made of {@code sources}: the header and their concatenation. */
    static long valueBytes(List<MemorySegment> sources) {
        long total = HEADER_BYTES;
        for (MemorySegment s : sources) {
            total += s.byteSize();
        }
        return total;
    }

    /**
     * Writes the value of block {@code key}, the concatenation of {@code sources}, into
     * {@code value} (exactly {@link #valueBytes} bytes): the payload copied and checksummed in one
     * pass, then the header.
     */
    static void encode(ObjectKey key, long geometry, List<MemorySegment> sources, MemorySegment value) {
        long total = valueBytes(sources) - HEADER_BYTES;
        if (value.byteSize() != HEADER_BYTES + total) {
            throw new IllegalArgumentException("block " + key + " of " + total + " bytes needs a value of " + (HEADER_BYTES + total)
                    + " bytes, got " + value.byteSize());
        }
        Checksum64 sum = new Checksum64().reset();
        long at = HEADER_BYTES;
        for (MemorySegment s : sources) {
            sum.copyAndUpdate(s, 0, value, at, s.byteSize());
            at += s.byteSize();
        }
        value.set(LONG, 0, MAGIC);
        value.set(INT, 8, VERSION);
        value.set(INT, 12, HEADER_BYTES);
        value.set(LONG, 16, total);
        value.set(LONG, 24, geometry);
        value.set(LONG, 32, key.high());
        value.set(LONG, 40, key.low());
        value.set(LONG, 48, sum.value());
    }

    /**
     * Checks {@code value} as the block {@code key} of {@code payloadBytes} bytes under
     * {@code geometry} and copies its payload into {@code destinations}, in order, the checksum
     * computed by the copy itself (one pass over the bytes).
     *
     * @return null when every check passed and the destinations hold the block; else the first
     *         check that failed. The header is checked before anything is copied; when the
     *         checksum fails, the destinations hold the unverified bytes and must not be used.
     */
    static ClusterMetrics.Corruption land(MemorySegment value, ObjectKey key, long geometry, long payloadBytes,
                                          List<MemorySegment> destinations) {
        ClusterMetrics.Corruption bad = checkHeader(value, value.byteSize(), key, geometry, payloadBytes);
        if (bad != null) {
            return bad;
        }
        Checksum64 sum = new Checksum64().reset();
        long at = HEADER_BYTES;
        for (MemorySegment d : destinations) {
            sum.copyAndUpdate(value, at, d, 0, d.byteSize());
            at += d.byteSize();
        }
        return sum.value() == value.get(LONG, 48) ? null : ClusterMetrics.Corruption.CHECKSUM;
    }

    /**
     * Checks the header of a value of {@code valueBytes} bytes whose first bytes are {@code header}
     * (at least {@link #HEADER_BYTES} of them when the value has that many) as the block {@code key}
     * of {@code payloadBytes} bytes under {@code geometry}: every field but the checksum, which
     * needs the payload ({@link #checksumOf}).
     *
     * @return null when every field matches, else the first check that failed
     */
    static ClusterMetrics.Corruption checkHeader(MemorySegment header, long valueBytes, ObjectKey key, long geometry, long payloadBytes) {
        if (valueBytes < HEADER_BYTES || header.byteSize() < HEADER_BYTES) {
            return ClusterMetrics.Corruption.SHORT;
        }
        if (header.get(LONG, 0) != MAGIC) {
            return ClusterMetrics.Corruption.MAGIC;
        }
        if (header.get(INT, 8) != VERSION || header.get(INT, 12) != HEADER_BYTES) {
            return ClusterMetrics.Corruption.VERSION;
        }
        long length = header.get(LONG, 16);
        if (length != valueBytes - HEADER_BYTES) {
            return ClusterMetrics.Corruption.SHORT;
        }
        if (header.get(LONG, 24) != geometry) {
            return ClusterMetrics.Corruption.GEOMETRY;
        }
        if (length != payloadBytes) {
            return ClusterMetrics.Corruption.LENGTH;
        }
        if (header.get(LONG, 32) != key.high() || header.get(LONG, 40) != key.low()) {
            return ClusterMetrics.Corruption.KEY;
        }
        return null;
    }

    /** The payload checksum a header that passed {@link #checkHeader} carries. */
    static long checksumOf(MemorySegment header) {
        return header.get(LONG, 48);
    }
}
