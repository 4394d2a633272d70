package dev.strata.cache.routing;

import static dev.strata.cache.routing.RoutingTraceFormat.*;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;

/**
 * Reads a binary routing trace ({@link RoutingTraceFormat}) one record at a time, checking every
 * record: its CRC32C, its length against the header's layers and top-k, every expert id against
 * the header's expert count. The first bad record stops the reader with a
 * {@link RoutingTraceException} naming the file, the record's offset and number and the value;
 * every record before it has been delivered.
 *
 * <p>A file that ends inside a record (a writer that crashed) is refused the same way under
 * {@link TailPolicy#FAIL}; under {@link TailPolicy#STOP} the reader ends before the partial record
 * and {@link #ending()} says {@link Ending#TRUNCATED}, with {@link #problem()} describing it.
 *
 * <p>Confined to one thread.
 */
public final class RoutingTraceReader implements AutoCloseable {

    /** What to do with a final record cut short. */
    public enum TailPolicy {
        /** Throw a {@link RoutingTraceException} after delivering the complete records. */
        FAIL,
        /** End quietly before it; {@link #ending()} reports {@link Ending#TRUNCATED}. */
        STOP
    }

    /** How the trace ended, once {@link #next()} has returned null. */
    public enum Ending {
        /** Not at the end yet. */
        READING,
        /** The END record was read: the writer closed the trace. */
        CLEAN,
        /** The file ends on a record boundary without END: the writer did not close it (or is still writing). */
        UNTERMINATED,
        /** The file ends inside a record: the writer stopped mid-record. */
        TRUNCATED
    }

    private static final int BUFFER_BYTES = 1 << 20;

    private final Path file;
    private final FileChannel channel;
    private final TailPolicy tailPolicy;
    private final RoutingTraceHeader header;
    private final CRC32C crc = new CRC32C();
    private ByteBuffer buffer; // little-endian; [position, limit) holds unread bytes
    private long bufferOffset; // file offset of the buffer's byte 0
    private boolean eof; // the channel has no more bytes
    private long records; // records delivered (markers and steps; END excluded)
    private long steps;
    private Ending ending = Ending.READING;
    private String problem = "";

    private RoutingTraceReader(Path file, FileChannel channel, TailPolicy tailPolicy) {
        this.file = file;
        this.channel = channel;
        this.tailPolicy = tailPolicy;
        this.buffer = ByteBuffer.allocate(BUFFER_BYTES).order(ByteOrder.LITTLE_ENDIAN).limit(0);
        this.header = readHeader();
    }

    /** Opens {@code file}, refusing a truncated final record ({@link TailPolicy#FAIL}). */
    public static RoutingTraceReader open(Path file) {
        return open(file, TailPolicy.FAIL);
    }

    /**
     * Opens {@code file} and reads its header.
     *
     * @throws RoutingTraceException when the file is missing, not a routing trace, of an
     *                               unsupported major version or has a bad header
     */
    public static RoutingTraceReader open(Path file, TailPolicy tailPolicy) {
        FileChannel ch;
        try {
            ch = FileChannel.open(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new RoutingTraceException(file, -1, -1, "no such file");
        } catch (IOException e) {
            throw new RoutingTraceException(file, -1, -1, "cannot open: " + e.getMessage(), e);
        }
        try {
            return new RoutingTraceReader(file, ch, tailPolicy);
        } catch (RuntimeException e) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // report the format problem
            }
            throw e;
        }
    }

    /** The trace's shape. */
    public RoutingTraceHeader header() {
        return header;
    }

    /**
     * The next record, or null at the end of the trace.
     *
     * @throws RoutingTraceException for a corrupt or invalid record, or (under {@link TailPolicy#FAIL})
     *                               a truncated one
     */
    public RoutingRecord next() {
        while (ending == Ending.READING) {
            long at = offset();
            if (!fill(RECORD_HEADER_BYTES)) {
                if (buffer.remaining() == 0) {
                    ending = Ending.UNTERMINATED;
                    problem = "no END record after " + records + " records: the writer did not close the trace";
                    return null;
                }
                truncated(at, RECORD_HEADER_BYTES);
                return null;
            }
            int p = buffer.position();
            int type = buffer.get(p + RECORD_TYPE_OFFSET) & 0xFF;
            long payload = buffer.getInt(p + RECORD_PAYLOAD_BYTES_OFFSET) & 0xFFFF_FFFFL;
            if (payload > MAX_PAYLOAD_BYTES) {
                throw new RoutingTraceException(file, at, records, "record of type " + type + " claims " + payload
                        + " payload bytes, more than the " + MAX_PAYLOAD_BYTES + " allowed (corrupt length)");
            }
            int total = RECORD_HEADER_BYTES + (int) payload + RECORD_CRC_BYTES;
            if (!fill(total)) {
                truncated(at, total);
                return null;
            }
            p = buffer.position();
            crc.reset();
            crc.update(buffer.array(), p, total - RECORD_CRC_BYTES);
            int stored = buffer.getInt(p + total - RECORD_CRC_BYTES);
            if (stored != (int) crc.getValue()) {
                throw new RoutingTraceException(file, at, records, String.format(
                        "record of type %d (%d payload bytes) fails its checksum: stored 0x%08x, computed 0x%08x",
                        type, payload, stored, (int) crc.getValue()));
            }
            int body = p + RECORD_HEADER_BYTES;
            RoutingRecord r = switch (type) {
                case TYPE_STEP -> decodeStep(at, body, (int) payload);
                case TYPE_REQUEST -> {
                    expectPayload(at, "request", payload, REQUEST_PAYLOAD_BYTES);
                    yield new RequestStart(buffer.getLong(body), buffer.getLong(body + 8));
                }
                case TYPE_BURST -> {
                    expectPayload(at, "burst", payload, 0);
                    yield BurstStart.INSTANCE;
                }
                case TYPE_END -> {
                    expectPayload(at, "END", payload, END_PAYLOAD_BYTES);
                    end(at, buffer.getLong(body), buffer.getLong(body + 8));
                    yield null;
                }
                default -> null; // a record type of a later minor version: skipped
            };
            buffer.position(p + total);
            if (ending == Ending.CLEAN && fill(1)) {
                throw new RoutingTraceException(file, offset(), records, "bytes follow the END record");
            }
            if (r != null) {
                records++;
                if (r instanceof RoutingStep) {
                    steps++;
                }
                return r;
            }
        }
        return null;
    }

    /** How the trace ended; {@link Ending#READING} until {@link #next()} has returned null. */
    public Ending ending() {
        return ending;
    }

    /** What was wrong with the end of the trace (unterminated, truncated), or empty. */
    public String problem() {
        return problem;
    }

    /** Records delivered so far. */
    public long records() {
        return records;
    }

    /** Steps delivered so far. */
    public long steps() {
        return steps;
    }

    /** File offset of the next unread byte. */
    public long offset() {
        return bufferOffset + buffer.position();
    }

    /** The file read. */
    public Path file() {
        return file;
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot close routing trace " + file + ": " + e.getMessage(), e);
        }
    }

    private RoutingStep decodeStep(long at, int body, int payload) {
        if (payload < STEP_IDS_OFFSET) {
            throw new RoutingTraceException(file, at, records, "step payload of " + payload + " bytes is shorter than its "
                    + STEP_IDS_OFFSET + "-byte head");
        }
        long tokens = buffer.getInt(body + STEP_TOKENS_OFFSET) & 0xFFFF_FFFFL;
        int phaseCode = buffer.get(body + STEP_PHASE_OFFSET) & 0xFF;
        RoutingPhase phase = RoutingPhase.ofCode(phaseCode);
        if (phase == null) {
            throw new RoutingTraceException(file, at, records, "step has unknown phase code " + phaseCode);
        }
        long expected = tokens < 1 ? -1 : stepPayloadBytes(header, tokens);
        if (expected != payload) {
            long ids = (payload - STEP_IDS_OFFSET) / 2;
            throw new RoutingTraceException(file, at, records, "step of " + tokens + " tokens holds " + ids
                    + " expert ids, but " + header.layers() + " layers × " + tokens + " tokens × top-" + header.topK()
                    + " needs " + (tokens < 1 ? "at least one token" : String.valueOf((expected - STEP_IDS_OFFSET) / 2))
                    + (tokens >= 1 && header.layers() * tokens > 0 && ids % (header.layers() * tokens) == 0
                            ? " (top-" + ids / (header.layers() * tokens) + " in the record, top-" + header.topK() + " in the header)"
                            : ""));
        }
        int n = (int) ((payload - STEP_IDS_OFFSET) / 2);
        int[] ids = new int[n];
        int from = body + STEP_IDS_OFFSET;
        for (int i = 0; i < n; i++) {
            ids[i] = buffer.getShort(from + 2 * i) & 0xFFFF;
        }
        String bad = RoutingStep.check(header, (int) tokens, ids);
        if (bad != null) {
            throw new RoutingTraceException(file, at, records, bad);
        }
        return RoutingStep.adopt(header, phase, (int) tokens, ids);
    }

    private void expectPayload(long at, String what, long payload, int expected) {
        if (payload != expected) {
            throw new RoutingTraceException(file, at, records, what + " record has " + payload + " payload bytes, expected "
                    + expected);
        }
    }

    private void end(long at, long countedRecords, long countedSteps) {
        if (countedRecords != records || countedSteps != steps) {
            throw new RoutingTraceException(file, at, records, "END record counts " + countedRecords + " records and "
                    + countedSteps + " steps, but " + records + " records and " + steps + " steps precede it");
        }
        ending = Ending.CLEAN;
    }

    private void truncated(long at, int needed) {
        long present = bufferOffset + buffer.limit() - at;
        String what = "the file ends inside a record: " + present + " of " + needed
                + " bytes present (the writer stopped mid-record); " + records + " complete records precede it";
        if (tailPolicy == TailPolicy.FAIL) {
            throw new RoutingTraceException(file, at, records, what);
        }
        ending = Ending.TRUNCATED;
        problem = "offset " + at + ", record " + records + ": " + what;
    }

    private RoutingTraceHeader readHeader() {
        if (!fill(HEADER_FIXED_BYTES)) {
            if (buffer.remaining() >= 8 && buffer.getLong(MAGIC_OFFSET) != MAGIC) {
                throw badMagic();
            }
            throw new RoutingTraceException(file, 0, -1, "file of " + buffer.remaining() + " bytes is shorter than the "
                    + HEADER_FIXED_BYTES + "-byte header");
        }
        if (buffer.getLong(MAGIC_OFFSET) != MAGIC) {
            throw badMagic();
        }
        int major = buffer.getShort(MAJOR_OFFSET) & 0xFFFF;
        int minor = buffer.getShort(MINOR_OFFSET) & 0xFFFF;
        if (major == 0 && minor == 0) {
            throw new RoutingTraceException(file, MAJOR_OFFSET, -1,
                    "version is 0: the writer died before the header was complete");
        }
        if (major != MAJOR_VERSION) {
            throw new RoutingTraceException(file, MAJOR_OFFSET, -1, "major version " + major + "." + minor
                    + " is not supported (this reader reads " + MAJOR_VERSION + ".x)");
        }
        int headerBytes = buffer.getInt(HEADER_BYTES_OFFSET);
        int modelBytes = buffer.getShort(MODEL_BYTES_OFFSET) & 0xFFFF;
        if (modelBytes > MAX_MODEL_BYTES || headerBytes != HEADER_FIXED_BYTES + modelBytes) {
            throw new RoutingTraceException(file, HEADER_BYTES_OFFSET, -1, "header length " + headerBytes
                    + " disagrees with a model name of " + modelBytes + " bytes (expected " + (HEADER_FIXED_BYTES + modelBytes)
                    + ", model names up to " + MAX_MODEL_BYTES + " bytes)");
        }
        if (!fill(headerBytes)) {
            throw new RoutingTraceException(file, MODEL_OFFSET, -1, "the file ends inside the header's model name ("
                    + (buffer.remaining() - MODEL_OFFSET) + " of " + modelBytes + " bytes)");
        }
        byte[] model = new byte[modelBytes];
        buffer.get(MODEL_OFFSET, model);
        RoutingTraceHeader h;
        try {
            h = new RoutingTraceHeader(buffer.getInt(LAYERS_OFFSET), buffer.getInt(EXPERTS_OFFSET), buffer.getInt(TOP_K_OFFSET),
                    new String(model, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            throw new RoutingTraceException(file, LAYERS_OFFSET, -1, "bad header: " + e.getMessage());
        }
        buffer.position(headerBytes);
        return h;
    }

    private RoutingTraceException badMagic() {
        return new RoutingTraceException(file, 0, -1, String.format("not a routing trace: magic 0x%016x, expected 0x%016x",
                buffer.getLong(MAGIC_OFFSET), MAGIC));
    }

    /** Makes at least {@code n} unread bytes available; false when the file ends first. */
    private boolean fill(int n) {
        if (buffer.remaining() >= n) {
            return true;
        }
        if (eof) {
            return false;
        }
        if (buffer.capacity() < n) {
            ByteBuffer bigger = ByteBuffer.allocate(Math.max(n, buffer.capacity() * 2)).order(ByteOrder.LITTLE_ENDIAN);
            bufferOffset += buffer.position();
            bigger.put(buffer);
            bigger.flip();
            buffer = bigger;
        } else {
            bufferOffset += buffer.position();
            buffer.compact().flip();
        }
        try {
            while (buffer.remaining() < n) {
                int p = buffer.position();
                int l = buffer.limit();
                buffer.position(l).limit(buffer.capacity());
                int read = channel.read(buffer);
                buffer.limit(buffer.position()).position(p);
                if (read < 0) {
                    eof = true;
                    return false;
                }
            }
            return true;
        } catch (IOException e) {
            throw new RoutingTraceException(file, offset(), records, "cannot read: " + e.getMessage(), e);
        }
    }
}
