package dev.strata.memory.pool;

import dev.strata.memory.Sizes;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The header at offset 0 of a pool's logical space: identity, version and layout of everything
 * else. It lies in the first stripe, so always in the first file.
 *
 * <pre>
 * Pool logical space (striped over the devices in 2 MiB stripes):
 * +-----------------------+ 0
 * | header (this class)   | HEADER_SIZE = 4 KiB
 * +-----------------------+ processTableOffset
 * | process table         | processSlots * ProcessTable.SLOT_SIZE
 * +-----------------------+ chunkTableOffset (64-byte aligned)
 * | chunk table           | chunkCount * ChunkTable.WORD_SIZE
 * +-----------------------+ descriptorTableOffset (64-byte aligned)
 * | object descriptors    | chunkCount * ObjectDescriptorTable.DESCRIPTOR_SIZE
 * +-----------------------+ rootRegionOffset (4 KiB aligned)
 * | root region           | rootRegionSize (a multiple of 4 KiB, may be 0): zeroed at creation,
 * |                       | then owned by a structure built on the pool (the KV block index)
 * +-----------------------+ dataOffset (chunk aligned)
 * | data area             | chunkCount * chunkSize
 * +-----------------------+ padding up to a multiple of STRIPE_SIZE * deviceCount = totalSize
 *
 * Header: the ShmHeader prefix, then the pool's fields (little-endian longs):
 * offset  size  field
 *      0    64  prefix                {@link ShmHeader}: magic "STRATAPL" (0x4C50415441525453), version
 *                                     (major &lt;&lt; 32 | minor, WRITTEN LAST with release), kind 1, owner =
 *                                     the creator (pid, start), heartbeat = the creator's, refreshed
 *                                     while it has the pool open, createdAt
 *     64     8  totalSize             bytes of the logical space over all devices
 *     72     8  dataCapacity          chunkCount * chunkSize
 *     80     8  stripeSize            2 MiB
 *     88     8  deviceCount           files/devices the space is striped over
 *     96     8  chunkSize             allocation unit, bytes
 *    104     8  chunkCount            chunks in the data area
 *    112     8  processSlots          slots in the process table
 *    120     8  processTableOffset
 *    128     8  chunkTableOffset
 *    136     8  descriptorTableOffset
 *    144     8  dataOffset
 *    152     8  rootRegionOffset
 *    160     8  rootRegionSize        bytes, 0 for none
 *    168    64  name                  ASCII, zero padded
 *    232     8  allocatedChunks       live chunks, shared counter (AllocationCounters); changes at run time
 *    240     8  liveAllocations       live allocations, shared counter; changes at run time
 *    248  3848  reserved (zero)
 * </pre>
 *
 * <p>Invariants: once {@code version} is non-zero every other field is final, except the creator
 * heartbeat and the two counters.
 *
 * <p>Versions: major 2 (from 1) widened the descriptors' checksum to a 64-bit Checksum64 and
 * added the counters; major 3 (from 2) added the root region between the descriptors and the data
 * area, which moves the data area; major 4 (from 3) starts the header with the common
 * {@link ShmHeader} prefix, which moves every pool field, so older code must not attach. A bad
 * magic, another kind, a major-version mismatch or a layout that disagrees refuses the attach with
 * a {@link ShmFormatException} naming the file, the field and the value found.
 *
 * <p>Stateless helpers; any thread.
 */
public final class PoolHeader {
    public static final long MAGIC = 0x4C50415441525453L; // "STRATAPL" read as a little-endian long
    public static final int MAJOR = 4; // 2: Checksum64, counters; 3: root region; 4: ShmHeader prefix
    public static final int MINOR = 0;
    /** The pool file's kind: its magic, layout id and version. */
    public static final ShmHeader.Kind KIND = new ShmHeader.Kind("pool file", MAGIC, 1, MAJOR, MINOR);
    public static final long HEADER_SIZE = 4 * Sizes.KiB;
    public static final long STRIPE_SIZE = 2 * Sizes.MiB;

    public static final long TOTAL_SIZE_OFFSET = ShmHeader.PREFIX_SIZE;
    public static final long DATA_CAPACITY_OFFSET = 72;
    public static final long STRIPE_SIZE_OFFSET = 80;
    public static final long DEVICE_COUNT_OFFSET = 88;
    public static final long CHUNK_SIZE_OFFSET = 96;
    public static final long CHUNK_COUNT_OFFSET = 104;
    public static final long PROCESS_SLOTS_OFFSET = 112;
    public static final long PROCESS_TABLE_OFFSET_OFFSET = 120;
    public static final long CHUNK_TABLE_OFFSET_OFFSET = 128;
    public static final long DESCRIPTOR_TABLE_OFFSET_OFFSET = 136;
    public static final long DATA_OFFSET_OFFSET = 144;
    public static final long ROOT_REGION_OFFSET_OFFSET = 152;
    public static final long ROOT_REGION_SIZE_OFFSET = 160;
    public static final long NAME_OFFSET = 168;
    public static final int NAME_SIZE = 64;
    public static final long ALLOCATED_CHUNKS_OFFSET = 232;
    public static final long LIVE_ALLOCATIONS_OFFSET = ALLOCATED_CHUNKS_OFFSET + AllocationCounters.LIVE_ALLOCATIONS;
    /** The root region's size is a multiple of this, and so is its offset. */
    public static final long ROOT_REGION_ALIGNMENT = 4 * Sizes.KiB;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private PoolHeader() {
    }

    /**
     * Where everything lies in a pool's logical space; derived from chunk size, chunk count,
     * process slots, device count and root region size alone, so that creator and attachers agree.
     */
    public record Layout(long chunkSize, long chunkCount, int processSlots, int deviceCount,
                         long processTableOffset, long chunkTableOffset, long descriptorTableOffset,
                         long rootRegionOffset, long rootRegionSize, long dataOffset, long totalSize) {

        /** A layout without a root region. */
        public static Layout of(long chunkSize, long chunkCount, int processSlots, int deviceCount) {
            return of(chunkSize, chunkCount, processSlots, deviceCount, 0);
        }

        /** A layout with a root region of {@code rootRegionSize} bytes (a multiple of 4 KiB, or 0). */
        public static Layout of(long chunkSize, long chunkCount, int processSlots, int deviceCount, long rootRegionSize) {
            long pt = HEADER_SIZE;
            long ct = Sizes.alignUp(pt + (long) processSlots * ProcessTable.SLOT_SIZE, 64);
            long dt = Sizes.alignUp(ct + chunkCount * ChunkTable.WORD_SIZE, 64);
            long root = Sizes.alignUp(dt + chunkCount * ObjectDescriptorTable.DESCRIPTOR_SIZE, ROOT_REGION_ALIGNMENT);
            long data = Sizes.alignUp(root + rootRegionSize, chunkSize);
            long unit = STRIPE_SIZE * deviceCount; // not a power of two for 3, 5, ... devices
            long total = (data + chunkCount * chunkSize + unit - 1) / unit * unit;
            return new Layout(chunkSize, chunkCount, processSlots, deviceCount, pt, ct, dt, root, rootRegionSize,
                    data, total);
        }

        public long dataCapacity() {
            return chunkCount * chunkSize;
        }

        /** Bytes each device holds. */
        public long perDeviceSize() {
            return totalSize / deviceCount;
        }
    }

    /** Writes every field except the version (the caller publishes with {@link #publishVersion}). */
    static void writeFields(MemorySegment pool, Layout layout, String name, long pid, long startMillis, long nowMillis) {
        ShmHeader.writePrefix(pool, KIND, pid, startMillis, nowMillis);
        LONG.set(pool, TOTAL_SIZE_OFFSET, layout.totalSize());
        LONG.set(pool, DATA_CAPACITY_OFFSET, layout.dataCapacity());
        LONG.set(pool, STRIPE_SIZE_OFFSET, STRIPE_SIZE);
        LONG.set(pool, DEVICE_COUNT_OFFSET, (long) layout.deviceCount());
        LONG.set(pool, CHUNK_SIZE_OFFSET, layout.chunkSize());
        LONG.set(pool, CHUNK_COUNT_OFFSET, layout.chunkCount());
        LONG.set(pool, PROCESS_SLOTS_OFFSET, (long) layout.processSlots());
        LONG.set(pool, PROCESS_TABLE_OFFSET_OFFSET, layout.processTableOffset());
        LONG.set(pool, CHUNK_TABLE_OFFSET_OFFSET, layout.chunkTableOffset());
        LONG.set(pool, DESCRIPTOR_TABLE_OFFSET_OFFSET, layout.descriptorTableOffset());
        LONG.set(pool, DATA_OFFSET_OFFSET, layout.dataOffset());
        LONG.set(pool, ROOT_REGION_OFFSET_OFFSET, layout.rootRegionOffset());
        LONG.set(pool, ROOT_REGION_SIZE_OFFSET, layout.rootRegionSize());
        byte[] ascii = name.getBytes(StandardCharsets.US_ASCII);
        MemorySegment nameField = pool.asSlice(NAME_OFFSET, NAME_SIZE);
        nameField.fill((byte) 0);
        MemorySegment.copy(MemorySegment.ofArray(ascii), 0, nameField, 0, Math.min(ascii.length, NAME_SIZE - 1));
    }

    /** Makes the header valid: release-stores the version after every other field. */
    static void publishVersion(MemorySegment pool) {
        ShmHeader.publish(pool, KIND);
    }

    /** Reads the pool's name from its header. */
    static String name(MemorySegment pool) {
        byte[] bytes = pool.asSlice(NAME_OFFSET, NAME_SIZE).toArray(ValueLayout.JAVA_BYTE);
        int length = 0;
        while (length < bytes.length && bytes[length] != 0) {
            length++;
        }
        return new String(bytes, 0, length, StandardCharsets.US_ASCII);
    }

    /** A format error in the pool file {@code file}: see {@link ShmFormatException}. */
    static ShmFormatException formatError(Path file, String field, Object value, String problem) {
        return new ShmFormatException(KIND.noun(), file, field, String.valueOf(value), problem);
    }

    /** The header's fields as found in a file, read without mapping it. */
    public record Snapshot(ShmHeader.Prefix prefix, long totalSize, long stripeSize, long deviceCount,
                           long chunkSize, long chunkCount, long processSlots, long processTableOffset,
                           long chunkTableOffset, long descriptorTableOffset, long dataOffset,
                           long rootRegionOffset, long rootRegionSize) {

        /** Reads the fields from the first bytes of {@code buffer} (little-endian). */
        static Snapshot of(ByteBuffer buffer) {
            ByteBuffer b = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            return new Snapshot(ShmHeader.Prefix.of(b), b.getLong((int) TOTAL_SIZE_OFFSET),
                    b.getLong((int) STRIPE_SIZE_OFFSET), b.getLong((int) DEVICE_COUNT_OFFSET),
                    b.getLong((int) CHUNK_SIZE_OFFSET), b.getLong((int) CHUNK_COUNT_OFFSET),
                    b.getLong((int) PROCESS_SLOTS_OFFSET), b.getLong((int) PROCESS_TABLE_OFFSET_OFFSET),
                    b.getLong((int) CHUNK_TABLE_OFFSET_OFFSET), b.getLong((int) DESCRIPTOR_TABLE_OFFSET_OFFSET),
                    b.getLong((int) DATA_OFFSET_OFFSET), b.getLong((int) ROOT_REGION_OFFSET_OFFSET),
                    b.getLong((int) ROOT_REGION_SIZE_OFFSET));
        }

        /**
         * Checks magic, major version and layout against what this code and the caller expect.
         *
         * @param file         the first file, named in errors
         * @param deviceCount  devices the caller opened
         * @param fileSize     bytes of the first file (0 if unknown, e.g. a device)
         * @return the layout
         * @throws ShmFormatException naming the file, the field and the value found
         */
        Layout validate(Path file, int deviceCount, long fileSize) {
            prefix.check(file, KIND);
            if (stripeSize != STRIPE_SIZE) {
                throw formatError(file, "stripeSize", stripeSize, "expected " + STRIPE_SIZE);
            }
            if (this.deviceCount != deviceCount) {
                throw formatError(file, "deviceCount", this.deviceCount, "the pool is striped over "
                        + this.deviceCount + " devices but " + deviceCount + " were given");
            }
            if (!Sizes.isPowerOfTwo(chunkSize) || chunkCount <= 0 || processSlots <= 0
                    || processSlots > PoolConfig.MAX_PROCESS_SLOTS || rootRegionSize < 0
                    || rootRegionSize % ROOT_REGION_ALIGNMENT != 0) {
                throw formatError(file, "chunkSize, chunkCount, processSlots, rootRegionSize", chunkSize + ", "
                        + chunkCount + ", " + processSlots + ", " + rootRegionSize, "implausible layout");
            }
            Layout expected = Layout.of(chunkSize, chunkCount, (int) processSlots, deviceCount, rootRegionSize);
            if (expected.totalSize() != totalSize || expected.rootRegionOffset() != rootRegionOffset || expected.processTableOffset() != processTableOffset
                    || expected.chunkTableOffset() != chunkTableOffset
                    || expected.descriptorTableOffset() != descriptorTableOffset
                    || expected.dataOffset() != dataOffset) {
                throw formatError(file, "layout offsets", this, "the layout fields disagree: expected " + expected);
            }
            if (fileSize > 0 && fileSize < expected.perDeviceSize()) {
                throw tooSmall(file, fileSize, expected.perDeviceSize());
            }
            return expected;
        }
    }

    /** The error for a file or device of {@code size} bytes where the pool needs {@code needed} per device. */
    static ShmFormatException tooSmall(Path file, long size, long needed) {
        return formatError(file, "file size", size, "the pool needs " + needed + " bytes per device: too small");
    }
}
