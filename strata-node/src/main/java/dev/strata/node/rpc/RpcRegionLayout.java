package dev.strata.node.rpc;

import dev.strata.memory.shm.ShmFiles;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * The descriptor of an RPC region: a file (under {@code /dev/shm} by default) that one server
 * process and up to {@code channelCount} client processes map shared, and through which clients
 * post fixed-size requests and the server answers them, with no system call on the way.
 *
 * <pre>
 * Region (all fields little-endian; every line below a 64-byte cache line unless noted):
 * +--------------------------+ 0
 * | header                   | HEADER_SIZE = 4 KiB
 * +--------------------------+ CHANNELS_OFFSET = 4 KiB
 * | channel 0                | channelStride = CHANNEL_CONTROL_SIZE + slotsPerChannel * slotSize
 * | channel 1                |
 * | ...                      |
 * +--------------------------+ totalSize = CHANNELS_OFFSET + channelCount * channelStride
 *
 * Header:
 * offset size field
 *      0   64 prefix             {@link ShmHeader}: magic "STRATRPC" (0x4350525441525453), version
 *                                (major &lt;&lt; 32 | minor, 0 while initialising, WRITTEN LAST with
 *                                release), kind 2, owner = the server (pid, start instant),
 *                                heartbeat = the server's, refreshed by its polling thread while
 *                                it runs (opaque), createdAt
 *     64    8 channelCount       channels (one per attached client)
 *     72    8 slotsPerChannel    ring size of each channel, a power of two
 *     80    8 payloadBytes       payload bytes per direction per slot, a multiple of 64
 *     88    8 slotSize           SLOT_HEADER_SIZE + 2 * payloadBytes
 *     96    8 channelStride      bytes per channel
 *    104    8 totalSize          bytes of the region
 *    128    8 serverState        STARTING 0, SERVING 1, STOPPED 2 (release/acquire); own cache line
 *    136    8 requestsServed     requests answered so far (opaque; for inspection)
 *
 * Channel (at CHANNELS_OFFSET + c * channelStride):
 *      0    8 stateWord          bits 0-7 state (FREE 0, ATTACHING 1, ATTACHED 2, DETACHING 3),
 *                                bits 8-63 the client's pid
 *      8    8 clientPid          copy of the pid, for inspection
 *     16    8 clientStartMillis  the client's start instant, epoch ms (0 unknown)
 *     24    8 incarnation        bumped by each attach; the high 16 bits of every tag of that attach
 *     64   64 reserved           (keeps the slots off the control line)
 *    128      slot[0 .. slotsPerChannel)
 *
 * Slot (slotSize bytes, 64-byte aligned):
 *      0    8 requestTag         tag of the request in this slot; WRITTEN LAST by the client (release)
 *      8    4 opcode
 *     12    4 requestPayloadLength
 *     16   48 request args[6]    longs
 *     64    8 responseTag        tag of the request answered; WRITTEN LAST by the server (release)
 *     72    4 status
 *     76    4 responsePayloadLength
 *     80   48 response values[6] longs
 *    128      request payload    payloadBytes
 *    128+p    response payload   payloadBytes
 * </pre>
 *
 * <p>Tags: the {@code s}-th request of an attach with incarnation {@code i} carries
 * {@code (i mod 2^16) << 48 | (s + 1)} ({@link #tag}); it is never 0, never repeats within an
 * attach, and differs between consecutive attaches of one channel, so that neither a response
 * left in a slot from an earlier turn of the ring nor one written for an earlier attach can be
 * taken for the answer to a new request.
 *
 * <p>Invariants: once {@code version} is non-zero every header field before offset 128 is final.
 * A path is served by at most one live server: the server holds an operating-system lock on
 * {@code <path>.lock} for its life (dropped by the kernel when it dies), so that two servers
 * started at once cannot both publish. A region is served by exactly one server for its whole
 * life: a restarted server makes a new region file ({@link ShmFiles}) and atomically renames it
 * over the path, so clients of the old server see its death instead of a stranger's answers. Bad
 * magic, another kind, a major-version mismatch or a geometry that disagrees are refused on attach
 * with a {@link ShmFormatException} naming the file, the field and the value found. Major 2 (from
 * 1) starts the header with the {@link ShmHeader} prefix.
 *
 * <p>Stateless helpers; any thread.
 */
public final class RpcRegionLayout {
    public static final long MAGIC = 0x4350525441525453L; // "STRATRPC" read as a little-endian long
    public static final int MAJOR = 2; // 2: the ShmHeader prefix
    public static final int MINOR = 0;
    /** The RPC region's kind: its magic, layout id and version. */
    public static final ShmHeader.Kind KIND = new ShmHeader.Kind("rpc region", MAGIC, 2, MAJOR, MINOR);

    public static final long HEADER_SIZE = 4096;
    public static final long CHANNELS_OFFSET = HEADER_SIZE;
    public static final long CHANNEL_CONTROL_SIZE = 128;
    public static final long SLOT_HEADER_SIZE = 128;
    public static final int ARGS = 6; // longs per request and per response
    public static final int MAX_CHANNELS = 4096;
    public static final int MAX_SLOTS = 4096;
    public static final int MAX_PAYLOAD = 64 * 1024;

    // header
    public static final long CHANNEL_COUNT_OFFSET = ShmHeader.PREFIX_SIZE;
    public static final long SLOTS_PER_CHANNEL_OFFSET = 72;
    public static final long PAYLOAD_BYTES_OFFSET = 80;
    public static final long SLOT_SIZE_OFFSET = 88;
    public static final long CHANNEL_STRIDE_OFFSET = 96;
    public static final long TOTAL_SIZE_OFFSET = 104;
    public static final long SERVER_STATE_OFFSET = 128;
    public static final long REQUESTS_SERVED_OFFSET = 136;

    public static final long SERVER_STARTING = 0;
    public static final long SERVER_SERVING = 1;
    public static final long SERVER_STOPPED = 2;

    // channel control
    public static final long CHANNEL_STATE_OFFSET = 0;
    public static final long CLIENT_PID_OFFSET = 8;
    public static final long CLIENT_START_OFFSET = 16;
    public static final long INCARNATION_OFFSET = 24;

    public static final int FREE = 0;
    public static final int ATTACHING = 1;
    public static final int ATTACHED = 2;
    public static final int DETACHING = 3;

    // slot
    public static final long REQUEST_TAG_OFFSET = 0;
    public static final long OPCODE_OFFSET = 8;
    public static final long REQUEST_PAYLOAD_LENGTH_OFFSET = 12;
    public static final long REQUEST_ARGS_OFFSET = 16;
    public static final long RESPONSE_TAG_OFFSET = 64;
    public static final long STATUS_OFFSET = 72;
    public static final long RESPONSE_PAYLOAD_LENGTH_OFFSET = 76;
    public static final long RESPONSE_VALUES_OFFSET = 80;
    public static final long REQUEST_PAYLOAD_OFFSET = SLOT_HEADER_SIZE;

    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private RpcRegionLayout() {
    }

    /** Geometry of a region, derived from three numbers so that server and clients agree. */
    public record Geometry(int channelCount, int slotsPerChannel, int payloadBytes) {

        public long slotSize() {
            return SLOT_HEADER_SIZE + 2L * payloadBytes;
        }

        public long channelStride() {
            return CHANNEL_CONTROL_SIZE + slotsPerChannel * slotSize();
        }

        public long totalSize() {
            return CHANNELS_OFFSET + channelCount * channelStride();
        }

        public long channelOffset(int channel) {
            return CHANNELS_OFFSET + channel * channelStride();
        }

        public long slotOffset(int channel, int slot) {
            return channelOffset(channel) + CHANNEL_CONTROL_SIZE + slot * slotSize();
        }

        /** Offset of the response payload within a slot. */
        public long responsePayloadOffset() {
            return SLOT_HEADER_SIZE + payloadBytes;
        }
    }

    /** The tag of request number {@code sequence} (from 0) of the attach with {@code incarnation}. */
    public static long tag(long incarnation, long sequence) {
        return ((incarnation & 0xFFFFL) << 48) | ((sequence + 1) & 0xFFFF_FFFF_FFFFL);
    }

    public static int state(long word) {
        return (int) (word & 0xFF);
    }

    public static long pidOf(long word) {
        return word >>> 8;
    }

    public static long stateWord(long pid, int state) {
        return (pid << 8) | state;
    }

    /**
     * Writes every header field of a region served by the current process except the version
     * (the caller publishes with {@link ShmHeader#publish}).
     */
    static void writeHeader(MemorySegment region, Geometry g, long nowMillis) {
        ShmHeader.writePrefix(region, KIND, nowMillis);
        LONG.set(region, CHANNEL_COUNT_OFFSET, (long) g.channelCount());
        LONG.set(region, SLOTS_PER_CHANNEL_OFFSET, (long) g.slotsPerChannel());
        LONG.set(region, PAYLOAD_BYTES_OFFSET, (long) g.payloadBytes());
        LONG.set(region, SLOT_SIZE_OFFSET, g.slotSize());
        LONG.set(region, CHANNEL_STRIDE_OFFSET, g.channelStride());
        LONG.set(region, TOTAL_SIZE_OFFSET, g.totalSize());
        LONG.set(region, SERVER_STATE_OFFSET, SERVER_STARTING);
    }

    /**
     * The header fields as found in a file.
     *
     * @param prefix   the common prefix: magic, version, kind, the server as owner, its heartbeat
     * @param fileSize bytes of the file when the header was read
     */
    public record Header(ShmHeader.Prefix prefix, long channelCount, long slotsPerChannel, long payloadBytes,
                         long slotSize, long channelStride, long totalSize, long serverState, long fileSize) {

        /** Reads the header from the first {@link #HEADER_SIZE} bytes of a file (little-endian). */
        public static Header of(ShmFiles.Found found) {
            ByteBuffer b = found.header().duplicate().order(ByteOrder.LITTLE_ENDIAN);
            return new Header(ShmHeader.Prefix.of(b), b.getLong((int) CHANNEL_COUNT_OFFSET),
                    b.getLong((int) SLOTS_PER_CHANNEL_OFFSET), b.getLong((int) PAYLOAD_BYTES_OFFSET),
                    b.getLong((int) SLOT_SIZE_OFFSET), b.getLong((int) CHANNEL_STRIDE_OFFSET),
                    b.getLong((int) TOTAL_SIZE_OFFSET), b.getLong((int) SERVER_STATE_OFFSET), found.fileSize());
        }

        /** The server's pid (the region's owner). */
        public long serverPid() {
            return prefix.ownerPid();
        }

        /**
         * Checks magic, version, kind and geometry.
         *
         * @return the geometry
         * @throws ShmFormatException naming the file, the field and the value found
         */
        public Geometry validate(Path file) {
            prefix.check(file, KIND);
            if (channelCount < 1 || channelCount > MAX_CHANNELS || slotsPerChannel < 1 || slotsPerChannel > MAX_SLOTS
                    || Long.bitCount(slotsPerChannel) != 1 || payloadBytes < 0 || payloadBytes > MAX_PAYLOAD
                    || payloadBytes % 64 != 0) {
                throw error(file, "channelCount, slotsPerChannel, payloadBytes", channelCount + ", " + slotsPerChannel
                        + ", " + payloadBytes, "implausible geometry (1 to " + MAX_CHANNELS + " channels, a power of two"
                        + " up to " + MAX_SLOTS + " slots, a multiple of 64 up to " + MAX_PAYLOAD + " payload bytes)");
            }
            Geometry g = new Geometry((int) channelCount, (int) slotsPerChannel, (int) payloadBytes);
            if (g.slotSize() != slotSize || g.channelStride() != channelStride || g.totalSize() != totalSize) {
                throw error(file, "slotSize, channelStride, totalSize", slotSize + ", " + channelStride + ", " + totalSize,
                        "the geometry fields disagree: expected " + g.slotSize() + ", " + g.channelStride() + ", "
                                + g.totalSize());
            }
            if (fileSize < totalSize) {
                throw error(file, "file size", Long.toString(fileSize), "the region needs " + totalSize + " bytes: truncated");
            }
            return g;
        }

        private static ShmFormatException error(Path file, String field, String value, String problem) {
            return new ShmFormatException(KIND.noun(), file, field, value, problem);
        }
    }
}
