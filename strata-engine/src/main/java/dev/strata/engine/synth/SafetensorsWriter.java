package dev.strata.engine.synth;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.Tensor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

/**
 * Writes one {@code .safetensors} file: the 8-byte little-endian header length, the JSON header
 * padded with spaces to a multiple of 8, then each tensor's bytes in the order given, contiguous.
 * Tensor values come from a {@link Values} source and are streamed through a 1 MiB buffer, so a
 * tensor of any size (long element counts) is written without holding it on the heap.
 * Not thread-safe; one call writes one file.
 */
public final class SafetensorsWriter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int CHUNK = 1 << 20; // bytes

    /** Produces a tensor's elements in row-major order, one call per element. */
    @FunctionalInterface
    public interface Values {
        float next();
    }

    /** A tensor to write. */
    public record Spec(String name, DType dtype, long[] shape, Values values) {
        /** Bytes of the tensor. */
        public long bytes() {
            return Math.multiplyExact(Tensor.elements(shape), dtype.bytes());
        }
    }

    private SafetensorsWriter() {
    }

    /** Writes {@code tensors} to {@code file}; returns the file's size. */
    public static long write(Path file, List<Spec> tensors, Map<String, String> metadata) throws IOException {
        ObjectNode header = JSON.createObjectNode();
        ObjectNode meta = header.putObject("__metadata__");
        metadata.forEach(meta::put);
        long offset = 0;
        for (Spec t : tensors) {
            ObjectNode o = header.putObject(t.name());
            o.put("dtype", t.dtype().name());
            ArrayNode shape = o.putArray("shape");
            for (long d : t.shape()) {
                shape.add(d);
            }
            ArrayNode off = o.putArray("data_offsets");
            off.add(offset);
            offset += t.bytes();
            off.add(offset);
        }
        byte[] json = JSON.writeValueAsBytes(header);
        int padded = (json.length + 7) & ~7;
        ByteBuffer head = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
        head.putLong(padded).put(json);
        while (head.hasRemaining()) {
            head.put((byte) ' ');
        }
        head.flip();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            writeAll(ch, head);
            ByteBuffer buf = ByteBuffer.allocateDirect(CHUNK).order(ByteOrder.LITTLE_ENDIAN);
            for (Spec t : tensors) {
                long n = Tensor.elements(t.shape());
                for (long i = 0; i < n; i++) {
                    if (buf.remaining() < 4) {
                        buf.flip();
                        writeAll(ch, buf);
                        buf.clear();
                    }
                    float v = t.values().next();
                    switch (t.dtype()) {
                        case F32 -> buf.putFloat(v);
                        case F16 -> buf.putShort(Float.floatToFloat16(v));
                        case BF16 -> buf.putShort(toBf16(v));
                    }
                }
            }
            buf.flip();
            writeAll(ch, buf);
            return ch.size();
        }
    }

    /** Rounds a float to bfloat16 (nearest, ties to even; NaN stays NaN). */
    public static short toBf16(float v) {
        int bits = Float.floatToRawIntBits(v);
        if (Float.isNaN(v)) {
            return (short) ((bits >>> 16) | 0x40);
        }
        int rounding = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    private static void writeAll(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }
}
