package dev.strata.memory.pool;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * CRC32C over memory segments of any size (through {@link MemorySegment#asByteBuffer()} in pieces
 * of at most 1 GiB, since a buffer is int-indexed).
 *
 * <p>Stateless; any thread.
 */
final class Crc32cChecksum {
    private static final long PIECE = 1L << 30;

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
        for (long at = 0; at < segment.byteSize(); at += PIECE) {
            crc.update(segment.asSlice(at, Math.min(PIECE, segment.byteSize() - at)).asByteBuffer());
        }
    }
}
