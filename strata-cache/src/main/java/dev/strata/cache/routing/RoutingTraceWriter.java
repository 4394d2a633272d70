package dev.strata.cache.routing;

import static dev.strata.cache.routing.RoutingTraceFormat.*;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;

/**
 * Writes a binary routing trace ({@link RoutingTraceFormat}) as a stream of records: steps,
 * request starts and burst starts, buffered and written in order; {@link #close()} adds the END
 * record that marks a clean finish. A writer that dies leaves a file whose complete records are
 * readable.
 *
 * <p>Every step is checked before it is written (shape, ids in range, no id twice in one
 * top-k), so a trace this writer produced always reads back. Confined to one thread.
 */
public final class RoutingTraceWriter implements AutoCloseable {
    private static final int BUFFER_BYTES = 1 << 20;

    private final Path file;
    private final RoutingTraceHeader header;
    private final FileChannel channel;
    private final CRC32C crc = new CRC32C();
    private ByteBuffer buffer; // pending records, little-endian; grows for a step larger than it
    private long position; // file offset where the buffer's contents go
    private long records; // records written, END excluded
    private long steps;
    private boolean closed;

    private RoutingTraceWriter(Path file, RoutingTraceHeader header, FileChannel channel) {
        this.file = file;
        this.header = header;
        this.channel = channel;
        this.buffer = ByteBuffer.allocate(BUFFER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Creates (or replaces) {@code file} and writes the header: everything but the version first,
     * the version last.
     *
     * @throws UncheckedIOException when the file cannot be created or written
     */
    public static RoutingTraceWriter create(Path file, RoutingTraceHeader header) {
        FileChannel ch = null;
        try {
            ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING);
            byte[] model = header.model().getBytes(StandardCharsets.UTF_8);
            ByteBuffer h = ByteBuffer.allocate(HEADER_FIXED_BYTES + model.length).order(ByteOrder.LITTLE_ENDIAN);
            h.putLong(MAGIC_OFFSET, MAGIC);
            h.putInt(MAJOR_OFFSET, 0); // the version goes in last
            h.putInt(HEADER_BYTES_OFFSET, HEADER_FIXED_BYTES + model.length);
            h.putInt(LAYERS_OFFSET, header.layers());
            h.putInt(EXPERTS_OFFSET, header.experts());
            h.putInt(TOP_K_OFFSET, header.topK());
            h.putInt(FLAGS_OFFSET, 0);
            h.putLong(CREATED_OFFSET, System.currentTimeMillis());
            h.putLong(WRITER_PID_OFFSET, ProcessHandle.current().pid());
            h.putShort(MODEL_BYTES_OFFSET, (short) model.length);
            h.put(MODEL_OFFSET, model);
            writeFully(ch, h, 0);
            ByteBuffer version = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
            version.putShort(0, (short) MAJOR_VERSION).putShort(2, (short) MINOR_VERSION);
            writeFully(ch, version, MAJOR_OFFSET);
            RoutingTraceWriter w = new RoutingTraceWriter(file, header, ch);
            w.position = HEADER_FIXED_BYTES + model.length;
            return w;
        } catch (IOException e) {
            closeQuietly(ch);
            throw new UncheckedIOException("cannot create routing trace " + file + ": " + e.getMessage(), e);
        }
    }

    /** The header every step must fit. */
    public RoutingTraceHeader header() {
        return header;
    }

    /**
     * Appends one step: {@code tokens} tokens, ids layer-major ({@code [layer][token][slot]},
     * {@code layers × tokens × topK} of them).
     *
     * @throws IllegalArgumentException naming the layer, token and id when the step does not fit the header
     */
    public void step(RoutingPhase phase, int tokens, int[] ids) {
        String problem = RoutingStep.check(header, tokens, ids);
        if (problem != null) {
            throw new IllegalArgumentException("routing trace " + file + ", record " + records + ": " + problem);
        }
        long payload = stepPayloadBytes(header, tokens);
        if (payload > MAX_PAYLOAD_BYTES) {
            throw new IllegalArgumentException("routing trace " + file + ", record " + records + ": a step of " + tokens
                    + " tokens needs " + payload + " bytes, more than the " + MAX_PAYLOAD_BYTES + " a record may hold");
        }
        ByteBuffer b = begin(TYPE_STEP, (int) payload);
        b.putInt(tokens).put((byte) phase.code()).put((byte) 0).putShort((short) 0);
        for (int id : ids) {
            b.putShort((short) id);
        }
        finish(true);
    }

    /** Appends {@code step} (which must have this trace's layer count and top-k). */
    public void step(RoutingStep step) {
        if (step.layers() != header.layers() || step.topK() != header.topK()) {
            throw new IllegalArgumentException("routing trace " + file + ", record " + records + ": a step of "
                    + step.layers() + " layers × top-" + step.topK() + " does not fit a trace of " + header.layers()
                    + " layers × top-" + header.topK());
        }
        step(step.phase(), step.tokens(), step.ids());
    }

    /** Appends a request start. */
    public void startRequest(long session, long request) {
        ByteBuffer b = begin(TYPE_REQUEST, REQUEST_PAYLOAD_BYTES);
        b.putLong(session).putLong(request);
        finish(false);
    }

    /** Appends a burst start. */
    public void startBurst() {
        begin(TYPE_BURST, 0);
        finish(false);
    }

    /** Appends any record. */
    public void write(RoutingRecord record) {
        switch (record) {
            case RoutingStep s -> step(s);
            case RequestStart r -> startRequest(r.session(), r.request());
            case BurstStart b -> startBurst();
        }
    }

    /** Records written so far. */
    public long records() {
        return records;
    }

    /** Steps written so far. */
    public long steps() {
        return steps;
    }

    /** Writes buffered records to the file (not forced to the device). */
    public void flush() {
        ensureOpen();
        drain();
    }

    /** Writes the END record and closes the file. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        try {
            ByteBuffer b = begin(TYPE_END, END_PAYLOAD_BYTES);
            b.putLong(records).putLong(steps);
            int start = recordStart;
            crc.reset();
            crc.update(buffer.array(), start, buffer.position() - start);
            buffer.putInt((int) crc.getValue());
            drain();
            channel.force(false);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot finish routing trace " + file + ": " + e.getMessage(), e);
        } finally {
            closed = true;
            closeQuietly(channel);
        }
    }

    private int recordStart; // buffer offset of the record being built

    private ByteBuffer begin(int type, int payload) {
        ensureOpen();
        int need = RECORD_HEADER_BYTES + payload + RECORD_CRC_BYTES;
        if (buffer.remaining() < need) {
            drain();
            if (buffer.capacity() < need) {
                buffer = ByteBuffer.allocate(need).order(ByteOrder.LITTLE_ENDIAN);
            }
        }
        recordStart = buffer.position();
        buffer.put((byte) type).put((byte) 0).putShort((short) 0).putInt(payload);
        return buffer;
    }

    private void finish(boolean isStep) {
        crc.reset();
        crc.update(buffer.array(), recordStart, buffer.position() - recordStart);
        buffer.putInt((int) crc.getValue());
        records++;
        if (isStep) {
            steps++;
        }
    }

    private void drain() {
        buffer.flip();
        try {
            int n = buffer.remaining();
            writeFully(channel, buffer, position);
            position += n;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write routing trace " + file + " at offset " + position + ": "
                    + e.getMessage(), e);
        } finally {
            buffer.clear();
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("routing trace writer for " + file + " is closed");
        }
    }

    private static void writeFully(FileChannel ch, ByteBuffer b, long at) throws IOException {
        long pos = at;
        while (b.hasRemaining()) {
            pos += ch.write(b, pos);
        }
    }

    private static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // the error that brought us here is the one to report
            }
        }
    }
}
