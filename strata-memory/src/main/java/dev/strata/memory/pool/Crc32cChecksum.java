package dev.strata.memory.pool;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * CRC32C over memory segments of any size: through {@link MemorySegment#asByteBuffer()} in pieces
 * of at most 1 GiB (a buffer is int-indexed), or, for heap segments over arrays other than
 * {@code byte[]} (which have no buffer view), through a 64 KiB copy.
 *
 * <p>Stateless; any thread.
 */
final class Crc32cChecksum {
    private static final long PIECE = 1L << 30;
    private static final long SCRATCH = 64 * 1024;

    private Crc32cChecksum() {
    }

    static int of(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        update(crc, segment);
        return (int) crc.getValue();
    }

    static int of(List<MemorySegment> parts) {
        CRC32C crc = new CRC32C();
        for (MemorySegment part : parts) {
            update(crc, part);
        }
        return (int) crc.getValue();
    }

    private static void update(CRC32C crc, MemorySegment segment) {
        boolean viewable = segment.heapBase().map(base -> base instanceof byte[]).orElse(true);
        if (!viewable) {
            // a heap segment over long[], float[], ... has no ByteBuffer view: go through a byte[]
            byte[] buffer = new byte[(int) Math.min(segment.byteSize(), SCRATCH)];
            MemorySegment scratch = MemorySegment.ofArray(buffer);
            for (long at = 0; at < segment.byteSize(); at += buffer.length) {
                int n = (int) Math.min(buffer.length, segment.byteSize() - at);
                MemorySegment.copy(segment, at, scratch, 0, n);
                crc.update(buffer, 0, n);
            }
            return;
        }
        for (long at = 0; at < segment.byteSize(); at += PIECE) {
            crc.update(segment.asSlice(at, Math.min(PIECE, segment.byteSize() - at)).asByteBuffer());
        }
    }
}
