package dev.strata.node.rpc;

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
 *      0    8 magic              "STRATRPC" (0x4350525441525453)
 *      8    8 version            major &lt;&lt; 32 | minor; 0 while initialising; WRITTEN LAST (release)
 *     16    8 channelCount       channels (one per attached client)
 *     24    8 slotsPerChannel    ring size of each channel, a power of two
 *     32    8 payloadBytes       payload bytes per direction per slot, a multiple of 64
 *     40    8 slotSize           SLOT_HEADER_SIZE + 2 * payloadBytes
 *     48    8 channelStride      bytes per channel
 *     56    8 totalSize          bytes of the region
 *     64    8 serverPid
 *     72    8 serverStartMillis  the server process's start instant, epoch ms (0 unknown)
 *     80    8 createdAtMillis
 *    128    8 serverState        STARTING 0, SERVING 1, STOPPED 2 (release/acquire); own cache line
 *    136    8 serverHeartbeat    epoch ms, refreshed by the polling thread while it runs (opaque)
 *    144    8 requestsServed     requests answered so far (opaque; for inspection)
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
 * started at once cannot both publish. A region is served by exactly one server for its whole life: a restarted server makes a new
 * region file and atomically renames it over the path, so clients of the old server see its death
 * instead of a stranger's answers. Major-version mismatches and bad magic are refused on attach
 * with an {@link RpcFormatException} naming the file and the values found.
 *
 * <p>Stateless helpers; any thread.
 */
public final class RpcRegionLayout {
    public static final long MAGIC = 0x4350525441525453L; // "STRATRPC" read as a little-endian long
    public static final int MAJOR = 1;
    public static final int MINOR = 0;

    public static final long HEADER_SIZE = 4096;
    public static final long CHANNELS_OFFSET = HEADER_SIZE;
    public static final long CHANNEL_CONTROL_SIZE = 128;
    public static final long SLOT_HEADER_SIZE = 128;
    public static final int ARGS = 6; // longs per request and per response
    public static final int MAX_CHANNELS = 4096;
    public static final int MAX_SLOTS = 4096;
    public static final int MAX_PAYLOAD = 64 * 1024;

    // header
    public static final long MAGIC_OFFSET = 0;
    public static final long VERSION_OFFSET = 8;
    public static final long CHANNEL_COUNT_OFFSET = 16;
    public static final long SLOTS_PER_CHANNEL_OFFSET = 24;
    public static final long PAYLOAD_BYTES_OFFSET = 32;
    public static final long SLOT_SIZE_OFFSET = 40;
    public static final long CHANNEL_STRIDE_OFFSET = 48;
    public static final long TOTAL_SIZE_OFFSET = 56;
    public static final long SERVER_PID_OFFSET = 64;
    public static final long SERVER_START_OFFSET = 72;
    public static final long CREATED_AT_OFFSET = 80;
    public static final long SERVER_STATE_OFFSET = 128;
    public static final long SERVER_HEARTBEAT_OFFSET = 136;
    public static final long REQUESTS_SERVED_OFFSET = 144;

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

    /** Writes every header field except the version (published with {@link #publishVersion}). */
    static void writeHeader(MemorySegment region, Geometry g, long pid, long startMillis, long nowMillis) {
        LONG.set(region, MAGIC_OFFSET, MAGIC);
        LONG.set(region, CHANNEL_COUNT_OFFSET, (long) g.channelCount());
        LONG.set(region, SLOTS_PER_CHANNEL_OFFSET, (long) g.slotsPerChannel());
        LONG.set(region, PAYLOAD_BYTES_OFFSET, (long) g.payloadBytes());
        LONG.set(region, SLOT_SIZE_OFFSET, g.slotSize());
        LONG.set(region, CHANNEL_STRIDE_OFFSET, g.channelStride());
        LONG.set(region, TOTAL_SIZE_OFFSET, g.totalSize());
        LONG.set(region, SERVER_PID_OFFSET, pid);
        LONG.set(region, SERVER_START_OFFSET, startMillis);
        LONG.set(region, CREATED_AT_OFFSET, nowMillis);
        LONG.set(region, SERVER_STATE_OFFSET, SERVER_STARTING);
        LONG.set(region, SERVER_HEARTBEAT_OFFSET, nowMillis);
    }

    /** Makes the header valid: release-stores the version after every other field. */
    static void publishVersion(MemorySegment region) {
        LONG.setRelease(region, VERSION_OFFSET, ((long) MAJOR << 32) | MINOR);
    }

    /** The header fields as found in a file. */
    public record Header(long magic, long version, long channelCount, long slotsPerChannel, long payloadBytes,
                         long slotSize, long channelStride, long totalSize, long serverPid, long serverStartMillis,
                         long serverState, long serverHeartbeatMillis) {

        public int major() {
            return (int) (version >>> 32);
        }

        public int minor() {
            return (int) version;
        }

        /** Reads the header from the first {@link #HEADER_SIZE} bytes of a file (little-endian). */
        public static Header of(ByteBuffer buffer) {
            ByteBuffer b = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            return new Header(b.getLong((int) MAGIC_OFFSET), b.getLong((int) VERSION_OFFSET),
                    b.getLong((int) CHANNEL_COUNT_OFFSET), b.getLong((int) SLOTS_PER_CHANNEL_OFFSET),
                    b.getLong((int) PAYLOAD_BYTES_OFFSET), b.getLong((int) SLOT_SIZE_OFFSET),
                    b.getLong((int) CHANNEL_STRIDE_OFFSET), b.getLong((int) TOTAL_SIZE_OFFSET),
                    b.getLong((int) SERVER_PID_OFFSET), b.getLong((int) SERVER_START_OFFSET),
                    b.getLong((int) SERVER_STATE_OFFSET), b.getLong((int) SERVER_HEARTBEAT_OFFSET));
        }

        /**
         * Checks magic, major version and geometry.
         *
         * @param fileSize bytes of the file
         * @return the geometry
         * @throws RpcFormatException naming the file and the values found
         */
        public Geometry validate(Path file, long fileSize) {
            if (magic != MAGIC) {
                throw new RpcFormatException(file, String.format(
                        "bad magic 0x%016x (expected 0x%016x): not a Strata RPC region", magic, MAGIC));
            }
            if (major() != MAJOR) {
                throw new RpcFormatException(file, "major version " + major() + "." + minor()
                        + " is not supported (this code speaks major version " + MAJOR + ")");
            }
            if (channelCount < 1 || channelCount > MAX_CHANNELS || slotsPerChannel < 1 || slotsPerChannel > MAX_SLOTS
                    || Long.bitCount(slotsPerChannel) != 1 || payloadBytes < 0 || payloadBytes > MAX_PAYLOAD
                    || payloadBytes % 64 != 0) {
                throw new RpcFormatException(file, "implausible geometry: " + channelCount + " channels, "
                        + slotsPerChannel + " slots per channel, " + payloadBytes + " payload bytes");
            }
            Geometry g = new Geometry((int) channelCount, (int) slotsPerChannel, (int) payloadBytes);
            if (g.slotSize() != slotSize || g.channelStride() != channelStride || g.totalSize() != totalSize) {
                throw new RpcFormatException(file, "geometry fields disagree: found slot size " + slotSize
                        + ", channel stride " + channelStride + ", total size " + totalSize + "; expected "
                        + g.slotSize() + ", " + g.channelStride() + ", " + g.totalSize());
            }
            if (fileSize < totalSize) {
                throw new RpcFormatException(file, "file holds " + fileSize + " bytes but the region needs "
                        + totalSize + ": truncated");
            }
            return g;
        }
    }
}
