package dev.strata.memory.disk;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Several memory segments seen as one run of bytes, for gather-writes and scatter-reads: copies a
 * range of the run to or from another segment wherever the part boundaries fall, and checksums
 * the whole run.
 *
 * <p>Not thread-safe; one operation owns it. Invariant: {@code starts[i]} is the run offset of
 * part {@code i}, and {@code starts[n]} the run's length.
 */
final class SegmentChain {

    private static final long CHECKSUM_CHUNK = 1L << 30;  // bytes per CRC32C update (ByteBuffer limit)
    private static final int HEAP_CHUNK = 64 * 1024;      // bytes per copy for segments with no ByteBuffer view

    private final List<MemorySegment> parts;
    private final long[] starts; // run offsets, length parts.size() + 1

    SegmentChain(List<MemorySegment> parts) {
        this.parts = List.copyOf(parts);
        this.starts = new long[this.parts.size() + 1];
        for (int i = 0; i < this.parts.size(); i++) {
            starts[i + 1] = starts[i] + this.parts.get(i).byteSize();
        }
    }

    long length() {
        return starts[starts.length - 1];
    }

    List<MemorySegment> parts() {
        return parts;
    }

    /** Copies {@code length} bytes of the run starting at {@code from} into {@code dst} at {@code dstOffset}. */
    void copyOut(long from, MemorySegment dst, long dstOffset, long length) {
        transfer(from, dst, dstOffset, length, true);
    }

    /** Copies {@code length} bytes from {@code src} at {@code srcOffset} into the run starting at {@code to}. */
    void copyIn(long to, MemorySegment src, long srcOffset, long length) {
        transfer(to, src, srcOffset, length, false);
    }

    private void transfer(long runOffset, MemorySegment other, long otherOffset, long length, boolean out) {
        if (runOffset < 0 || length < 0 || runOffset + length > length()) {
            throw new IndexOutOfBoundsException("range [" + runOffset + ", " + (runOffset + length)
                    + ") outside a run of " + length() + " bytes");
        }
        int i = partAt(runOffset);
        long done = 0;
        while (done < length) {
            MemorySegment part = parts.get(i);
            long inPart = runOffset + done - starts[i];
            long n = Math.min(part.byteSize() - inPart, length - done);
            if (out) {
                MemorySegment.copy(part, inPart, other, otherOffset + done, n);
            } else {
                MemorySegment.copy(other, otherOffset + done, part, inPart, n);
            }
            done += n;
            i++;
        }
    }

    /** Index of the part holding run offset {@code offset} (skipping empty parts). */
    private int partAt(long offset) {
        int lo = 0;
        int hi = parts.size() - 1;
        while (lo < hi) { // last part whose start is <= offset, then skip empty parts
            int mid = (lo + hi + 1) >>> 1;
            if (starts[mid] <= offset) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        while (lo < parts.size() - 1 && starts[lo + 1] <= offset) {
            lo++;
        }
        return lo;
    }

    /** CRC32C of the whole run. */
    int checksum() {
        CRC32C crc = new CRC32C();
        for (MemorySegment part : parts) {
            update(crc, part);
        }
        return (int) crc.getValue();
    }

    /** Adds {@code segment}'s bytes to {@code crc}. */
    static void update(CRC32C crc, MemorySegment segment) {
        long size = segment.byteSize();
        boolean viewable = segment.isNative() || segment.heapBase().map(b -> b instanceof byte[]).orElse(false);
        if (viewable) {
            for (long off = 0; off < size; off += CHECKSUM_CHUNK) {
                crc.update(segment.asSlice(off, Math.min(CHECKSUM_CHUNK, size - off)).asByteBuffer());
            }
        } else {
            byte[] chunk = new byte[(int) Math.min(HEAP_CHUNK, size)];
            for (long off = 0; off < size; off += chunk.length) {
                int n = (int) Math.min(chunk.length, size - off);
                MemorySegment.copy(segment, java.lang.foreign.ValueLayout.JAVA_BYTE, off, chunk, 0, n);
                crc.update(chunk, 0, n);
            }
        }
    }
}
