package dev.strata.cache.routing;

/**
 * The binary routing-trace file: layout, constants and limits. Little-endian throughout; expert
 * ids are u16.
 *
 * <pre>
 * File header (HEADER_FIXED_BYTES, then the model name; records start at header bytes)
 *  offset size field
 *  0      8    magic          "STRATART" (MAGIC, as a little-endian u64)
 *  8      2    major version  } the u32 at offset 8 is written last, after the rest of the header:
 *  10     2    minor version  } 0 there means the writer died before the header was complete
 *  12     4    header bytes   HEADER_FIXED_BYTES + model name bytes: the offset of the first record
 *  16     4    layers         MoE layers per forward pass, 1..MAX_LAYERS
 *  20     4    experts        experts per layer, 1..MAX_EXPERTS
 *  24     4    top-k          expert ids per token per layer, 1..experts
 *  28     4    flags          0 (reserved)
 *  32     8    created        epoch milliseconds
 *  40     8    writer pid     the process that wrote the trace
 *  48     2    model bytes    length of the model name or fingerprint, 0..MAX_MODEL_BYTES
 *  50     2    reserved       0
 *  52     n    model name     UTF-8, not terminated
 *
 * Record (at header bytes, then back to back)
 *  0      1    type           TYPE_STEP, TYPE_REQUEST, TYPE_BURST, TYPE_END
 *  1      1    flags          0
 *  2      2    reserved       0
 *  4      4    payload bytes  p, at most MAX_PAYLOAD_BYTES
 *  8      p    payload
 *  8+p    4    CRC32C         of bytes [0, 8+p) of the record
 *
 * Payloads
 *  STEP    u32 tokens, u8 phase (RoutingPhase code), u8 0, u16 0,
 *          then u16 ids[layers][tokens][top-k] (layer-major: the order the forward pass uses them)
 *  REQUEST u64 session, u64 request
 *  BURST   (empty)
 *  END     u64 records before it, u64 steps   written by close(): the trace ended cleanly
 * </pre>
 *
 * <p>A reader refuses a different magic or major version and skips record types it does not know
 * (a later minor version may add some). A file that ends inside a record was cut short (a crashed
 * writer): every record before it stays readable. A file without an END record was not closed.
 *
 * <p>Constants only; any thread.
 */
public final class RoutingTraceFormat {
    private RoutingTraceFormat() {
    }

    /** "STRATART" read as a little-endian u64. */
    public static final long MAGIC = 0x5452_4154_4152_5453L;
    public static final int MAJOR_VERSION = 1;
    public static final int MINOR_VERSION = 0;

    public static final int MAGIC_OFFSET = 0;
    public static final int MAJOR_OFFSET = 8;
    public static final int MINOR_OFFSET = 10;
    public static final int HEADER_BYTES_OFFSET = 12;
    public static final int LAYERS_OFFSET = 16;
    public static final int EXPERTS_OFFSET = 20;
    public static final int TOP_K_OFFSET = 24;
    public static final int FLAGS_OFFSET = 28;
    public static final int CREATED_OFFSET = 32;
    public static final int WRITER_PID_OFFSET = 40;
    public static final int MODEL_BYTES_OFFSET = 48;
    public static final int MODEL_OFFSET = 52;
    public static final int HEADER_FIXED_BYTES = 52;

    public static final int RECORD_TYPE_OFFSET = 0;
    public static final int RECORD_FLAGS_OFFSET = 1;
    public static final int RECORD_PAYLOAD_BYTES_OFFSET = 4;
    public static final int RECORD_HEADER_BYTES = 8;
    public static final int RECORD_CRC_BYTES = 4;

    public static final int STEP_TOKENS_OFFSET = 0; // within the payload
    public static final int STEP_PHASE_OFFSET = 4;
    public static final int STEP_IDS_OFFSET = 8;

    public static final int TYPE_STEP = 1;
    public static final int TYPE_REQUEST = 2;
    public static final int TYPE_BURST = 3;
    public static final int TYPE_END = 0x7F;

    public static final int REQUEST_PAYLOAD_BYTES = 16;
    public static final int END_PAYLOAD_BYTES = 16;

    public static final int MAX_LAYERS = 4096;
    public static final int MAX_EXPERTS = 65536;
    public static final int MAX_MODEL_BYTES = 4096;
    /** Largest payload a reader accepts: a guard against a corrupt length, 256 MiB. */
    public static final int MAX_PAYLOAD_BYTES = 256 << 20;

    /** Bytes of a step record's payload for {@code tokens} tokens. */
    public static long stepPayloadBytes(RoutingTraceHeader header, long tokens) {
        return STEP_IDS_OFFSET + 2L * header.layers() * tokens * header.topK();
    }
}
