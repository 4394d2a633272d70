package dev.strata.memory.disk;

import dev.strata.memory.Checksum64;
import dev.strata.memory.CorruptObjectException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The header that precedes every object the DISK tier writes: it makes the on-disk state
 * self-describing (which allocation, how many payload bytes, which write, which checksum) and lets
 * a reader detect a torn or stale header.
 *
 * <p>Placement: each allocation starts with one header block (the file store's block size, 4096
 * bytes here); the payload follows at the next block boundary. Only the first {@link #SIZE} bytes
 * of the header block are used; the rest is written as zeros.
 *
 * <pre>
 * allocation in a data file:
 * +-------------------------+---------------------------------------+---------+
 * | header block (1 block)  | payload (length bytes)                | padding |
 * +-------------------------+---------------------------------------+---------+
 * ^ allocation start         ^ start + block                         ^ to a block multiple
 *
 * header (little-endian):
 *  offset size field
 *  0      8    magic            {@link #MAGIC}, ASCII "STRADSKO"
 *  8      4    header length    {@link #SIZE}
 *  12     4    writer pid       process that wrote the object
 *  16     8    handle           the allocation's handle in the tier (self-check)
 *  24     8    payload length   bytes
 *  32     8    write generation increases with every write to the tier
 *  40     8    written at       epoch milliseconds
 *  48     8    payload checksum {@link Checksum64} of the payload bytes only
 *  56     2    minor version    {@link #MINOR_VERSION}
 *  58     2    major version    {@link #MAJOR_VERSION} (the version is set last)
 *  60     4    header checksum  low 32 bits of {@link Checksum64} over bytes [0, 60)
 * </pre>
 *
 * <p>Versions: major 1 held a 32-bit CRC32C of the payload at 48, the versions at 52/54 and a
 * CRC32C of the header at 56; major 2 widens the payload checksum to 64 bits and uses
 * {@link Checksum64} for both checks (one checksum mechanism in Strata). The header check keeps
 * 32 bits of it: the header is tiny, the finaliser mixes every input bit into every output bit,
 * and 32 bits keep the header proper at 64 bytes.
 *
 * <p>Write order: all fields, then the version, then the header checksum (encoded in memory). The
 * header block and the payload then go to disk together, in one vectored write
 * ({@code pwritev(2)}; only objects larger than a staging buffer write the payload first and the
 * header last), so the device may land them in any order: a crash or failed write mid-way can
 * leave a new header over an old or partial payload, or an old header over a new payload. A
 * header on disk therefore vouches for a payload only when the payload's {@link Checksum64}
 * matches the one it records: a torn object is detectable. A reader checks magic, major version
 * and header checksum (a torn header fails these), then the handle, length, generation and payload
 * checksum against what the tier holds in memory (a stale header from an earlier write fails the
 * generation check; a torn payload fails the payload checksum). While the tier is open, that
 * in-memory record is the source of truth; the files are truncated when a tier opens.
 *
 * <p>Ownership: the data files are locked exclusively by the owning process while the tier is
 * open (a file lock, released by the kernel if the process dies), which takes the place of an
 * owner pid and heartbeat for the file as a whole; the writer pid here records provenance.
 *
 * <p>Immutable value; any thread. Encoding and decoding touch only the segment given.
 *
 * @param handle          the allocation's handle in the tier
 * @param payloadLength   payload bytes
 * @param generation      write generation, {@code > 0}
 * @param payloadChecksum Checksum64 of the payload
 * @param writerPid       pid of the writing process
 * @param writtenAtMillis epoch milliseconds of the write
 */
public record DiskObjectHeader(
        long handle,
        long payloadLength,
        long generation,
        long payloadChecksum,
        int writerPid,
        long writtenAtMillis) {

    /** ASCII "STRADSKO" read as a little-endian long. */
    public static final long MAGIC = 0x4F4B534441525453L;
    public static final short MAJOR_VERSION = 2;
    public static final short MINOR_VERSION = 0;
    /** Bytes of the header proper (the header block is larger and zero-padded). */
    public static final int SIZE = 64;

    public static final long OFFSET_MAGIC = 0;
    public static final long OFFSET_HEADER_LENGTH = 8;
    public static final long OFFSET_WRITER_PID = 12;
    public static final long OFFSET_HANDLE = 16;
    public static final long OFFSET_PAYLOAD_LENGTH = 24;
    public static final long OFFSET_GENERATION = 32;
    public static final long OFFSET_WRITTEN_AT = 40;
    public static final long OFFSET_PAYLOAD_CHECKSUM = 48;
    public static final long OFFSET_MINOR_VERSION = 56;
    public static final long OFFSET_MAJOR_VERSION = 58;
    public static final long OFFSET_HEADER_CHECKSUM = 60;
    /** The header checksum covers bytes {@code [0, CHECKSUMMED_BYTES)}. */
    public static final int CHECKSUMMED_BYTES = 60;

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * Writes this header into {@code block} (at least {@link #SIZE} bytes); every byte of
     * {@code block} beyond the header is set to zero.
     */
    public void encodeTo(MemorySegment block) {
        if (block.byteSize() < SIZE) {
            throw new IllegalArgumentException("header block of " + block.byteSize() + " bytes is smaller than " + SIZE);
        }
        block.fill((byte) 0);
        block.set(LONG, OFFSET_MAGIC, MAGIC);
        block.set(INT, OFFSET_HEADER_LENGTH, SIZE);
        block.set(INT, OFFSET_WRITER_PID, writerPid);
        block.set(LONG, OFFSET_HANDLE, handle);
        block.set(LONG, OFFSET_PAYLOAD_LENGTH, payloadLength);
        block.set(LONG, OFFSET_GENERATION, generation);
        block.set(LONG, OFFSET_WRITTEN_AT, writtenAtMillis);
        block.set(LONG, OFFSET_PAYLOAD_CHECKSUM, payloadChecksum);
        block.set(SHORT, OFFSET_MINOR_VERSION, MINOR_VERSION);
        block.set(SHORT, OFFSET_MAJOR_VERSION, MAJOR_VERSION);
        block.set(INT, OFFSET_HEADER_CHECKSUM, headerChecksum(block));
    }

    /**
     * Reads and checks the header at the start of {@code block}.
     *
     * @param tier   the tier's name, for the error message
     * @param handle the handle being read, for the error message
     * @throws CorruptObjectException if the magic, header length, major version or header
     *                                checksum is wrong (a torn, overwritten or foreign header)
     */
    public static DiskObjectHeader decode(MemorySegment block, String tier, long handle) {
        if (block.byteSize() < SIZE) {
            throw new IllegalArgumentException("header block of " + block.byteSize() + " bytes is smaller than " + SIZE);
        }
        long magic = block.get(LONG, OFFSET_MAGIC);
        if (magic != MAGIC) {
            throw new CorruptObjectException(tier, handle, String.format(
                    "header magic 0x%016x is not 0x%016x (torn, never written or overwritten header)", magic, MAGIC));
        }
        int stored = block.get(INT, OFFSET_HEADER_CHECKSUM);
        int actual = headerChecksum(block);
        if (stored != actual) {
            throw new CorruptObjectException(tier, handle, String.format(
                    "header checksum 0x%08x does not match stored 0x%08x (torn header)", actual, stored));
        }
        short major = block.get(SHORT, OFFSET_MAJOR_VERSION);
        if (major != MAJOR_VERSION) {
            throw new CorruptObjectException(tier, handle,
                    "header major version " + major + " is not supported (this build reads " + MAJOR_VERSION + ")");
        }
        int length = block.get(INT, OFFSET_HEADER_LENGTH);
        if (length != SIZE) {
            throw new CorruptObjectException(tier, handle, "header length " + length + " is not " + SIZE);
        }
        return new DiskObjectHeader(
                block.get(LONG, OFFSET_HANDLE),
                block.get(LONG, OFFSET_PAYLOAD_LENGTH),
                block.get(LONG, OFFSET_GENERATION),
                block.get(LONG, OFFSET_PAYLOAD_CHECKSUM),
                block.get(INT, OFFSET_WRITER_PID),
                block.get(LONG, OFFSET_WRITTEN_AT));
    }

    /** Low 32 bits of the {@link Checksum64} of bytes {@code [0, CHECKSUMMED_BYTES)} of {@code block}. */
    static int headerChecksum(MemorySegment block) {
        return (int) Checksum64.of(block, 0, CHECKSUMMED_BYTES);
    }
}
