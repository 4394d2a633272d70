package dev.strata.memory.disk;

import dev.strata.memory.Checksum64;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Several memory segments seen as one run of bytes, for gather-writes and scatter-reads: copies a
 * range of the run to or from another segment wherever the part boundaries fall, adding the
 * bytes copied to a {@link Checksum64} in the same pass.
 *
 * <p>Not thread-safe; one operation owns it. Invariant: {@code starts[i]} is the run offset of
 * part {@code i}, and {@code starts[n]} the run's length.
 */
final class SegmentChain {

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

    /**
     * Copies {@code length} bytes of the run starting at {@code from} into {@code dst} at
     * {@code dstOffset}, adding them to {@code checksum} in the same pass.
     */
    void copyOut(long from, MemorySegment dst, long dstOffset, long length, Checksum64 checksum) {
        transfer(from, dst, dstOffset, length, true, checksum);
    }

    /**
     * Copies {@code length} bytes from {@code src} at {@code srcOffset} into the run starting at
     * {@code to}, adding them to {@code checksum} in the same pass.
     */
    void copyIn(long to, MemorySegment src, long srcOffset, long length, Checksum64 checksum) {
        transfer(to, src, srcOffset, length, false, checksum);
    }

    private void transfer(long runOffset, MemorySegment other, long otherOffset, long length, boolean out,
                          Checksum64 checksum) {
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
                checksum.copyAndUpdate(part, inPart, other, otherOffset + done, n);
            } else {
                checksum.copyAndUpdate(other, otherOffset + done, part, inPart, n);
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
}
