package dev.strata.memory.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.Allocator;
import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Sizes;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import dev.strata.testing.Property;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class PoolTierTest {

    static byte[] randomBytes(SplittableRandom random, int size) {
        byte[] b = new byte[size];
        random.nextBytes(b);
        b[0] |= 1;
        return b;
    }

    @Test
    void describesItselfAsASharedFramedTier() throws Exception {
        try (PoolFiles files = new PoolFiles("flags", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(3 * Sizes.MiB).conclude())) {
            assertThat(pool.kind()).isEqualTo(TierKind.POOL);
            assertThat(pool.sharedAcrossProcesses()).isTrue();
            assertThat(pool.isAddressable()).isTrue();
            assertThat(pool.isPlainMemory()).isFalse();
            assertThat(pool.revocable()).isFalse();
            assertThat(pool.capacity()).isEqualTo(3 * Sizes.MiB);
            assertThat(pool.isCreator()).isTrue();
            assertThat(pool.used()).isZero();
        }
    }

    @Test
    void defaultPathIsUnderDevShmAndCarriesTheUserId() {
        PoolConfig config = PoolConfig.builder("kv0").conclude();
        int uid = dev.strata.memory.shm.ShmFiles.currentUid();
        assertThat(uid).isNotNegative();
        assertThat(config.paths()).containsExactly(java.nio.file.Path.of("/dev/shm/strata-" + uid + "-kv0.pool"));
    }

    /**
     * Attaching used to map any pool file read-write, whoever owned it and whatever its mode: a
     * file another user planted, or one anybody may write, is now refused by name.
     */
    @Test
    void attachingRefusesAPoolOfAnotherUserOrWritableByOthers() throws Exception {
        try (PoolFiles files = new PoolFiles("attach-owner", 1)) {
            PoolConfig config = files.config().capacity(2 * Sizes.MiB).conclude();
            java.nio.file.Path file = config.paths().getFirst();
            try (PoolTier created = PoolTier.open(config)) {
                assertThat(java.nio.file.Files.getPosixFilePermissions(file))
                        .containsExactlyInAnyOrder(java.nio.file.attribute.PosixFilePermission.OWNER_READ,
                                java.nio.file.attribute.PosixFilePermission.OWNER_WRITE);
                try (PoolTier attached = PoolTier.open(config)) {
                    assertThat(attached.isCreator()).isFalse(); // our own 0600 file attaches
                }
                java.nio.file.Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
                assertThatThrownBy(() -> PoolTier.open(config)).hasStackTraceContaining("group- or world-writable")
                        .hasStackTraceContaining("mode 0666").hasStackTraceContaining(file.toString());
                java.nio.file.Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
                org.junit.jupiter.api.Assumptions.assumeTrue(dev.strata.memory.shm.ShmFiles.currentUid() == 0,
                        "giving the file to another user needs root");
                java.nio.file.Files.setAttribute(file, "unix:uid", 65534);
                assertThatThrownBy(() -> PoolTier.open(config)).hasStackTraceContaining("belongs to uid 65534")
                        .hasStackTraceContaining(file.toString());
                java.nio.file.Files.setAttribute(file, "unix:uid", 0);
            }
        }
    }

    @Test
    void roundTripsRandomObjectsOfOddSizes() throws Exception {
        try (PoolFiles files = new PoolFiles("roundtrip", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(8 * Sizes.MiB).chunkSize(16 * Sizes.KiB).conclude())) {
            Property.forAll("pool round trip", 40, random -> {
                int size = 1 + random.nextInt(random.nextBoolean() ? 5000 : 700_000);
                byte[] payload = randomBytes(random, size);
                long h = pool.allocate(size);
                assertThat(h).isNotEqualTo(Allocator.FULL);
                assertThat(pool.allocationSize(h)).isGreaterThanOrEqualTo(size).isEqualTo(Sizes.alignUp(size, 16 * Sizes.KiB));
                byte[] back = new byte[size];
                assertThat(pool.read(h, MemorySegment.ofArray(back))).as("unpublished object is not readable").isFalse();
                if (random.nextBoolean()) {
                    pool.write(h, MemorySegment.ofArray(payload));
                } else {
                    pool.gatherWrite(h, split(random, payload));
                }
                assertThat(pool.publishedLength(h)).isEqualTo(size);
                if (random.nextBoolean()) {
                    assertThat(pool.read(h, MemorySegment.ofArray(back))).isTrue();
                } else {
                    List<MemorySegment> parts = split(random, new byte[size]);
                    assertThat(pool.scatterRead(h, parts)).isTrue();
                    back = join(parts, size);
                }
                assertThat(back).isEqualTo(payload);
                assertThatThrownBy(() -> pool.read(h, MemorySegment.ofArray(new byte[size + 1])))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(size + " bytes");
                pool.free(h);
                assertThat(pool.read(h, MemorySegment.ofArray(back))).as("freed object is not readable").isFalse();
                assertThat(pool.used()).isZero();
            });
            TierStats stats = pool.stats();
            assertThat(stats.writeOps()).isEqualTo(40);
            assertThat(stats.bytesRead()).isPositive();
            assertThat(stats.writeBytesPerSec()).isPositive();
            assertThat(stats.allocations()).isZero();
        }
    }

    private static List<MemorySegment> split(SplittableRandom random, byte[] bytes) {
        List<MemorySegment> parts = new ArrayList<>();
        int at = 0;
        while (at < bytes.length) {
            int n = Math.min(bytes.length - at, 1 + random.nextInt(Math.max(1, bytes.length / 3)));
            parts.add(MemorySegment.ofArray(Arrays.copyOfRange(bytes, at, at + n)));
            at += n;
        }
        return parts;
    }

    private static byte[] join(List<MemorySegment> parts, int size) {
        byte[] all = new byte[size];
        int at = 0;
        for (MemorySegment p : parts) {
            MemorySegment.copy(p, 0, MemorySegment.ofArray(all), at, p.byteSize());
            at += (int) p.byteSize();
        }
        return all;
    }

    @Test
    void zeroCopyWritesBecomeReadableOnlyWhenPublished() throws Exception {
        try (PoolFiles files = new PoolFiles("inplace", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude())) {
            byte[] payload = randomBytes(new SplittableRandom(11), 77_777);
            long h = pool.allocate(payload.length);
            MemorySegment.copy(MemorySegment.ofArray(payload), 0, pool.segment(h, 0, payload.length), 0, payload.length);
            byte[] back = new byte[payload.length];
            assertThat(pool.read(h, MemorySegment.ofArray(back))).isFalse();
            pool.publish(h, payload.length);
            assertThat(pool.read(h, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(payload);
            assertThatThrownBy(() -> pool.segment(h, 1, pool.allocationSize(h)))
                    .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("allocation " + h);
        }
    }

    @Test
    void roundTripsThroughHeapSegmentsOfOtherArrayTypes() throws Exception {
        try (PoolFiles files = new PoolFiles("floats", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude())) {
            SplittableRandom random = new SplittableRandom(21);
            float[] values = new float[33_333];
            for (int i = 0; i < values.length; i++) {
                values[i] = (float) random.nextDouble(-3, 3);
            }
            long h = pool.allocate(values.length * 4L);
            pool.write(h, MemorySegment.ofArray(values));
            float[] back = new float[values.length];
            assertThat(pool.read(h, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(values);
        }
    }

    @Test
    void aDevicePathIsFormattedInPlaceAndMappedWithMmap() {
        // /dev/zero stands in for a DAX device: a character device that is only mapped, never
        // sized. Each mapping of it is a fresh object as long as the mapping, so the pool is kept
        // to one stripe (mapped at offset 0).
        PoolConfig config = PoolConfig.builder("device-" + ProcessHandle.current().pid())
                .path(java.nio.file.Path.of("/dev/zero")).capacity(1 * Sizes.MiB).mode(PoolConfig.Mode.CREATE).conclude();
        try (PoolTier pool = PoolTier.open(config)) {
            assertThat(pool.isCreator()).isTrue();
            assertThat(pool.layout().totalSize()).isEqualTo(PoolHeader.STRIPE_SIZE);
            byte[] payload = randomBytes(new SplittableRandom(17), 100_003);
            long h = pool.allocate(payload.length);
            pool.write(h, MemorySegment.ofArray(payload));
            byte[] back = new byte[payload.length];
            assertThat(pool.read(h, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(payload);
        }
        // attaching reads a device's header through a mapping; /dev/zero never holds one
        assertThatThrownBy(() -> PoolTier.open(PoolConfig.builder("device-attach").path(java.nio.file.Path.of("/dev/zero"))
                .mode(PoolConfig.Mode.ATTACH).attachTimeout(Duration.ofMillis(50)).conclude()))
                .isInstanceOf(ShmFormatException.class).hasMessageContaining("/dev/zero").hasMessageContaining("no initialised pool");
    }

    @Test
    void rewritingAPublishedObjectReplacesIt() throws Exception {
        try (PoolFiles files = new PoolFiles("rewrite", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude())) {
            SplittableRandom random = new SplittableRandom(5);
            long h = pool.allocate(5000);
            pool.write(h, MemorySegment.ofArray(randomBytes(random, 5000)));
            byte[] second = randomBytes(random, 4321);
            pool.write(h, MemorySegment.ofArray(second));
            byte[] back = new byte[4321];
            assertThat(pool.read(h, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(second);
        }
    }

    /** The descriptor's checksum field of the allocation at {@code handle}, read from the file. */
    private static long storedChecksum(PoolFiles files, PoolTier pool, long handle) throws Exception {
        long at = pool.layout().descriptorTableOffset()
                + handle / pool.layout().chunkSize() * ObjectDescriptorTable.DESCRIPTOR_SIZE
                + ObjectDescriptorTable.CHECKSUM_OFFSET;
        try (FileChannel ch = FileChannel.open(files.paths.getFirst(), StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(b, at);
            return b.getLong(0);
        }
    }

    @Test
    void everyWritePathStoresTheSame64BitChecksumOfThePayload() throws Exception {
        try (PoolFiles files = new PoolFiles("checksum64", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(4 * Sizes.MiB).chunkSize(16 * Sizes.KiB).conclude())) {
            Property.forAll("pool checksum paths", 20, random -> {
                byte[] payload = randomBytes(random, 1 + random.nextInt(200_000));
                long expected = dev.strata.memory.Checksum64.referenceValue(payload);
                long whole = pool.allocate(payload.length);
                pool.write(whole, MemorySegment.ofArray(payload));
                long gathered = pool.allocate(payload.length);
                List<MemorySegment> parts = new ArrayList<>();
                for (int at = 0; at < payload.length; ) {
                    int n = Math.min(payload.length - at, 1 + random.nextInt(5_000)); // splits off 64-byte boundaries
                    parts.add(MemorySegment.ofArray(Arrays.copyOfRange(payload, at, at + n)));
                    at += n;
                }
                pool.gatherWrite(gathered, parts);
                long inPlace = pool.allocate(payload.length);
                MemorySegment.copy(MemorySegment.ofArray(payload), 0, pool.segment(inPlace, 0, payload.length), 0, payload.length);
                pool.publish(inPlace, payload.length);
                try {
                    for (long h : new long[] {whole, gathered, inPlace}) {
                        assertThat(storedChecksum(files, pool, h)).as("stored checksum of handle " + h).isEqualTo(expected);
                        byte[] back = new byte[payload.length];
                        assertThat(pool.read(h, MemorySegment.ofArray(back))).isTrue();
                        assertThat(back).isEqualTo(payload);
                    }
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
                pool.free(whole);
                pool.free(gathered);
                pool.free(inPlace);
            });
        }
    }

    @Test
    void corruptedBytesFailTheChecksum() throws Exception {
        try (PoolFiles files = new PoolFiles("corrupt", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude())) {
            byte[] payload = randomBytes(new SplittableRandom(3), 9999);
            long h = pool.allocate(payload.length);
            pool.write(h, MemorySegment.ofArray(payload));
            MemorySegment view = pool.segment(h, 4567, 1);
            view.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) (payload[4567] ^ 0x20));
            assertThatThrownBy(() -> pool.read(h, MemorySegment.ofArray(new byte[payload.length])))
                    .isInstanceOf(CorruptObjectException.class)
                    .hasMessageContaining("handle " + h).hasMessageContaining("9999 bytes");
        }
    }

    @Test
    void misuseIsReportedWithTheOffendingValues() throws Exception {
        try (PoolFiles files = new PoolFiles("misuse", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude())) {
            long h = pool.allocate(100);
            pool.free(h);
            assertThatThrownBy(() -> pool.free(h)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("handle " + h).hasMessageContaining("not allocated");
            assertThatThrownBy(() -> pool.free(12345)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("handle 12345");
            assertThatThrownBy(() -> pool.allocate(0)).isInstanceOf(IllegalArgumentException.class);
            assertThat(pool.allocate(3 * Sizes.MiB)).isEqualTo(Allocator.FULL);
            long h2 = pool.allocate(100);
            assertThatThrownBy(() -> pool.write(h2, MemorySegment.ofArray(new byte[(int) (2 * PoolConfig.DEFAULT_CHUNK_SIZE)])))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not fit");
        }
        assertThatThrownBy(() -> PoolConfig.builder("bad name!").chunkSize(1000).capacity(-1).conclude())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bad name!").hasMessageContaining("chunk size 1000").hasMessageContaining("capacity -1");
    }

    @Test
    void fillsUpAndEmpties() throws Exception {
        try (PoolFiles files = new PoolFiles("fill", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(1 * Sizes.MiB).chunkSize(64 * Sizes.KiB).conclude())) {
            List<Long> handles = new ArrayList<>();
            long h;
            while ((h = pool.allocate(50_001)) != Allocator.FULL) {
                handles.add(h);
            }
            assertThat(handles).hasSize(16);
            assertThat(pool.used()).isEqualTo(pool.capacity());
            handles.forEach(pool::free);
            assertThat(pool.used()).isZero();
            assertThat(pool.allocate(pool.capacity())).isNotEqualTo(Allocator.FULL);
        }
    }

    @Test
    void newFilesAreCreatedWithMode0600() throws Exception {
        try (PoolFiles files = new PoolFiles("mode", 2);
             PoolTier pool = PoolTier.open(files.config().capacity(3 * Sizes.MiB).conclude())) {
            for (var p : pool.paths()) {
                assertThat(Files.getPosixFilePermissions(p))
                        .isEqualTo(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
            }
        }
    }

    @Test
    void stripesLandInTheRightFileAtTheRightOffset() throws Exception {
        try (PoolFiles files = new PoolFiles("stripes", 3);
             PoolTier pool = PoolTier.open(files.config().capacity(20 * Sizes.MiB).conclude())) {
            PoolHeader.Layout layout = pool.layout();
            assertThat(layout.totalSize() % (3 * PoolHeader.STRIPE_SIZE)).isZero();
            for (var p : pool.paths()) {
                assertThat(Files.size(p)).isEqualTo(layout.perDeviceSize());
            }
            SplittableRandom random = new SplittableRandom(99);
            int size = (int) (7 * Sizes.MiB + 12_345); // spans several stripes and all three files
            byte[] payload = randomBytes(random, size);
            long h = pool.allocate(size);
            pool.write(h, MemorySegment.ofArray(payload));
            long logical = layout.dataOffset() + h;
            byte[] fromFiles = new byte[size];
            long done = 0;
            while (done < size) {
                long l = logical + done;
                long stripe = l / PoolHeader.STRIPE_SIZE;
                int device = (int) (stripe % 3);
                long fileOffset = (stripe / 3) * PoolHeader.STRIPE_SIZE + l % PoolHeader.STRIPE_SIZE;
                int n = (int) Math.min(size - done, PoolHeader.STRIPE_SIZE - l % PoolHeader.STRIPE_SIZE);
                try (FileChannel ch = FileChannel.open(pool.paths().get(device), StandardOpenOption.READ)) {
                    ByteBuffer buf = ByteBuffer.wrap(fromFiles, (int) done, n);
                    while (buf.hasRemaining()) {
                        ch.read(buf, fileOffset + (buf.position() - done));
                    }
                }
                done += n;
            }
            assertThat(fromFiles).isEqualTo(payload);
            // the header is in the first file's first stripe
            try (FileChannel ch = FileChannel.open(pool.paths().getFirst(), StandardOpenOption.READ)) {
                ByteBuffer magic = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
                ch.read(magic, 0);
                assertThat(magic.getLong(0)).isEqualTo(PoolHeader.MAGIC);
            }
            // a second mapping in this process sees the same bytes
            try (PoolTier other = PoolTier.open(files.config().mode(PoolConfig.Mode.ATTACH).conclude())) {
                assertThat(other.isCreator()).isFalse();
                assertThat(other.processSlot()).isNotEqualTo(pool.processSlot());
                byte[] back = new byte[size];
                assertThat(other.read(h, MemorySegment.ofArray(back))).isTrue();
                assertThat(back).isEqualTo(payload);
                assertThat(pool.attachedProcesses()).isEqualTo(2);
            }
            assertThat(pool.attachedProcesses()).isEqualTo(1);
        }
    }

    @Test
    void publishedObjectsOutliveTheProcessThatClosedAndUnpublishedOnesDoNot() throws Exception {
        try (PoolFiles files = new PoolFiles("outlive", 1)) {
            byte[] payload = randomBytes(new SplittableRandom(8), 12_345);
            long kept;
            PoolTier first = PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude());
            kept = first.allocate(payload.length);
            first.write(kept, MemorySegment.ofArray(payload));
            first.allocate(1000); // never published: freed when its writer closes
            first.close();
            try (PoolTier second = PoolTier.open(files.config().mode(PoolConfig.Mode.ATTACH).conclude())) {
                byte[] back = new byte[payload.length];
                assertThat(second.read(kept, MemorySegment.ofArray(back))).isTrue();
                assertThat(back).isEqualTo(payload);
                assertThat(second.stats().allocations()).isEqualTo(1);
                assertThat(second.used()).isEqualTo(second.allocationSize(kept));
                second.free(kept);
                assertThat(second.used()).isZero();
                second.destroy();
            }
            assertThat(Files.exists(files.paths.getFirst())).isFalse();
        }
    }

    @Test
    void badMagicIsRefusedNamingFileAndValue() throws Exception {
        try (PoolFiles files = new PoolFiles("magic", 1)) {
            byte[] junk = new byte[(int) (4 * Sizes.MiB)];
            new SplittableRandom(1).nextBytes(junk);
            Files.write(files.paths.getFirst(), junk);
            long found = ByteBuffer.wrap(junk).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
            assertThatThrownBy(() -> PoolTier.open(files.config().mode(PoolConfig.Mode.ATTACH).conclude()))
                    .isInstanceOf(ShmFormatException.class)
                    .hasMessageContaining(files.paths.getFirst().toString())
                    .hasMessageContaining("field magic = " + String.format("0x%016x", found))
                    .hasMessageContaining("not a Strata pool file");
        }
    }

    @Test
    void wrongMajorVersionIsRefused() throws Exception {
        try (PoolFiles files = new PoolFiles("major", 1)) {
            PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude()).close();
            try (FileChannel ch = FileChannel.open(files.paths.getFirst(), StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, (7L << 32) | 3).rewind(),
                        ShmHeader.VERSION_OFFSET);
            }
            assertThatThrownBy(() -> PoolTier.open(files.config().conclude()))
                    .isInstanceOf(ShmFormatException.class)
                    .hasMessageContaining(files.paths.getFirst().toString())
                    .hasMessageContaining("field version = 7.3").hasMessageContaining("major version 7 is not supported");
        }
    }

    @Test
    void truncatedFileIsRefusedAsTooSmall() throws Exception {
        try (PoolFiles files = new PoolFiles("small", 1)) {
            PoolTier.open(files.config().capacity(6 * Sizes.MiB).conclude()).close();
            long full = Files.size(files.paths.getFirst());
            try (FileChannel ch = FileChannel.open(files.paths.getFirst(), StandardOpenOption.WRITE)) {
                ch.truncate(full / 2);
            }
            assertThatThrownBy(() -> PoolTier.open(files.config().conclude()))
                    .isInstanceOf(ShmFormatException.class)
                    .hasMessageContaining("too small").hasMessageContaining(Long.toString(full / 2));
        }
    }

    @Test
    void attachWaitsForTheVersionAndGivesUpNamingTheProblem() throws Exception {
        try (PoolFiles files = new PoolFiles("noversion", 1)) {
            Files.write(files.paths.getFirst(), new byte[8192]);
            assertThatThrownBy(() -> PoolTier.open(files.config().attachTimeout(Duration.ofMillis(100)).conclude()))
                    .isInstanceOf(ShmFormatException.class)
                    .hasMessageContaining("no initialised pool").hasMessageContaining("8192 bytes");
        }
    }

    @Test
    void attachingToAMissingPoolFailsAndCreateRefusesAnExistingFile() throws Exception {
        try (PoolFiles files = new PoolFiles("missing", 1)) {
            assertThatThrownBy(() -> PoolTier.open(files.config().mode(PoolConfig.Mode.ATTACH).conclude()))
                    .hasMessageContaining(files.paths.getFirst().toString());
            PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude()).close();
            assertThatThrownBy(() -> PoolTier.open(files.config().mode(PoolConfig.Mode.CREATE).conclude()))
                    .hasMessageContaining(files.paths.getFirst().toString());
        }
    }

    @Test
    void closedTierRefusesCalls() throws Exception {
        try (PoolFiles files = new PoolFiles("closed", 1)) {
            PoolTier pool = PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude());
            pool.close();
            pool.close();
            assertThatThrownBy(() -> pool.allocate(10)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        }
    }
}
