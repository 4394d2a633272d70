package dev.strata.memory.disk;

import dev.strata.memory.Allocator;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class DiskTierRoundTripTest {

    /** Odd sizes around block and staging-buffer boundaries (staging buffers are 64 KiB here). */
    private static final long[] SIZES = {1, 7, 4095, 4096, 4097, 12_289, 61_439, 61_440, 65_537, 200_003, 1_000_001};

    private static DiskTierOptions smallOptions(Path dir) {
        return DiskTierOptions.in(dir, 16L << 20).name("disk0").dataFiles(2)
                .stagingBuffers(4).stagingBufferSize(64 * 1024).deleteOnClose(true);
    }

    /** The ways a caller's memory can look to the tier. */
    private enum Shape { ALIGNED_NATIVE, MISALIGNED_NATIVE, HEAP, GATHERED }

    private static MemorySegment shaped(Arena arena, Shape shape, long size) {
        return switch (shape) {
            case ALIGNED_NATIVE, GATHERED -> arena.allocate(size, 4096);
            case MISALIGNED_NATIVE -> arena.allocate(size + 4096, 4096).asSlice(3, size);
            case HEAP -> MemorySegment.ofArray(new byte[(int) size]);
        };
    }

    private static List<MemorySegment> split(MemorySegment whole, SplittableRandom r) {
        List<MemorySegment> parts = new ArrayList<>();
        long at = 0;
        while (at < whole.byteSize()) {
            long n = Math.min(whole.byteSize() - at, r.nextLong(1, Math.max(2, whole.byteSize() / 3 + 1)));
            parts.add(whole.asSlice(at, n));
            at += n;
        }
        parts.add(1, MemorySegment.ofArray(new byte[0])); // an empty part in the middle changes nothing
        return parts;
    }

    private static void put(DiskTier tier, long handle, MemorySegment src, Shape shape, SplittableRandom r) {
        if (shape == Shape.GATHERED) {
            tier.gatherWrite(handle, split(src, r));
        } else {
            tier.write(handle, src);
        }
    }

    private static boolean get(DiskTier tier, long handle, MemorySegment dst, Shape shape, SplittableRandom r) {
        return shape == Shape.GATHERED ? tier.scatterRead(handle, split(dst, r)) : tier.read(handle, dst);
    }

    /**
     * I/O calls one read or write of {@code size} bytes in {@code shape} must make: one when the
     * payload moves in place or header and payload fit one 64 KiB staging buffer (the header always
     * travels with the payload), more only for larger staged objects.
     */
    private static boolean oneIo(DiskTier tier, Shape shape, long size) {
        boolean inPlace = shape == Shape.ALIGNED_NATIVE
                || (shape == Shape.MISALIGNED_NATIVE && tier.ioMode() == IoMode.BUFFERED);
        return inPlace || tier.blockSize() + BlockAlignment.alignUp(size, tier.blockSize()) <= 64 * 1024;
    }

    /** Writes every size in every shape and reads each back in every shape, counting I/O calls. */
    private static void roundTripAllShapes(DiskTier tier) {
        SplittableRandom r = new SplittableRandom(0xD15C);
        try (Arena arena = Arena.ofShared()) {
            for (long size : SIZES) {
                for (Shape writeShape : Shape.values()) {
                    MemorySegment src = shaped(arena, writeShape, size);
                    DiskTestSupport.fillRandom(src, r);
                    long handle = tier.allocate(size);
                    assertThat(handle).isNotEqualTo(Allocator.FULL);
                    assertThat(tier.allocationSize(handle)).isGreaterThanOrEqualTo(size);
                    long calls = tier.ioCalls();
                    put(tier, handle, src, writeShape, r);
                    if (oneIo(tier, writeShape, size)) {
                        assertThat(tier.ioCalls() - calls).as("I/O calls to write %d bytes %s", size, writeShape)
                                .isEqualTo(1);
                    }
                    for (Shape readShape : Shape.values()) {
                        MemorySegment dst = shaped(arena, readShape, size);
                        dst.fill((byte) 0x11);
                        calls = tier.ioCalls();
                        assertThat(get(tier, handle, dst, readShape, r)).isTrue();
                        if (oneIo(tier, readShape, size)) {
                            assertThat(tier.ioCalls() - calls).as("I/O calls to read %d bytes %s", size, readShape)
                                    .isEqualTo(1);
                        }
                        assertThat(dst.mismatch(src)).as("size %d written %s read %s", size, writeShape, readShape)
                                .isEqualTo(-1L);
                    }
                    tier.free(handle);
                }
            }
        }
    }

    @Test
    void roundTripsOnTheDiskUseDirectIo(@TempDir Path dir) {
        FileStoreInfo probe;
        try {
            probe = FileStoreInfo.probe(dir);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        assumeFalse(probe.memoryBacked(), "the temporary directory is on " + probe.type() + ", not a disk");
        try (DiskTier tier = DiskTier.open(smallOptions(dir))) {
            assertThat(tier.ioMode()).as(tier.description()).isEqualTo(IoMode.DIRECT);
            assertThat(tier.description()).contains("DIRECT I/O").contains(probe.type());
            assertThat(tier.blockSize()).isEqualTo(probe.directIoAlignment());
            assertThat(tier.kind()).isEqualTo(TierKind.DISK);
            assertThat(tier.isAddressable()).isFalse();
            assertThat(tier.isPlainMemory()).isFalse();
            roundTripAllShapes(tier);
            assertThat(tier.used()).isZero();
        }
    }

    @Test
    void roundTripsOnTmpfsFallBackToBufferedIoLoudly() throws Exception {
        Path dir = DiskTestSupport.shmDirectory("strata-disk-");
        assumeTrue(dir != null, "no writable /dev/shm");
        try (DiskTestSupport.LogCapture log = new DiskTestSupport.LogCapture();
             DiskTier tier = DiskTier.open(smallOptions(dir))) {
            assertThat(tier.ioMode()).isEqualTo(IoMode.BUFFERED);
            assertThat(tier.ioModeReason()).contains("tmpfs").contains("memory-backed").contains(dir.toString());
            assertThat(tier.description()).contains("BUFFERED I/O");
            assertThat(log.warnings()).anySatisfy(w -> assertThat(w).contains("BUFFERED").contains(dir.toString()));
            roundTripAllShapes(tier);
        } finally {
            DiskTestSupport.deleteTree(dir);
        }
    }

    @Test
    void whereOpeningWithDirectIoIsRefusedTheTierFallsBackToBufferedIoLoudly(@TempDir Path parent) throws Exception {
        Path dir = Files.createDirectory(parent.resolve("ramfs"));
        String problem = DiskTestSupport.mount("ramfs", null, dir);
        assumeTrue(problem == null, "cannot mount a ramfs (which refuses O_DIRECT) here: " + problem);
        try {
            try (DiskTestSupport.LogCapture log = new DiskTestSupport.LogCapture();
                 DiskTier tier = DiskTier.open(smallOptions(dir))) {
                assertThat(tier.fileStore().directIoAccepted()).isFalse();
                assertThat(tier.ioMode()).isEqualTo(IoMode.BUFFERED);
                assertThat(tier.ioModeReason()).contains("O_DIRECT refused").contains(dir.toString());
                assertThat(log.warnings()).anySatisfy(w -> assertThat(w).contains("BUFFERED").contains("refused")
                        .contains(dir.toString()));
                SplittableRandom r = new SplittableRandom(7);
                byte[] data = DiskTestSupport.randomBytes(70_001, r);
                long h = tier.allocate(data.length);
                tier.write(h, MemorySegment.ofArray(data));
                byte[] back = new byte[data.length];
                assertThat(tier.read(h, MemorySegment.ofArray(back))).isTrue();
                assertThat(back).isEqualTo(data);
            }
        } finally {
            assertThat(DiskTestSupport.unmount(dir)).isNull();
        }
    }

    @Test
    void directIoCanBeSwitchedOff(@TempDir Path dir) {
        try (DiskTier tier = DiskTier.open(smallOptions(dir).directIo(false))) {
            assertThat(tier.ioMode()).isEqualTo(IoMode.BUFFERED);
            assertThat(tier.ioModeReason()).contains("switched off");
            roundTripAllShapes(tier);
        }
    }

    @Test
    void missingObjectsReadAsFalseAndMisuseNamesTheValues(@TempDir Path dir) {
        try (DiskTier tier = DiskTier.open(smallOptions(dir))) {
            SplittableRandom r = new SplittableRandom(11);
            byte[] data = DiskTestSupport.randomBytes(9_999, r);
            long h = tier.allocate(data.length);
            MemorySegment dst = MemorySegment.ofArray(new byte[data.length]);
            assertThat(tier.read(h, dst)).as("allocated, never written").isFalse();
            assertThat(tier.read(h + 4096 * 1000, dst)).as("never allocated").isFalse();

            tier.write(h, MemorySegment.ofArray(data));
            assertThatThrownBy(() -> tier.read(h, MemorySegment.ofArray(new byte[100])))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("100").hasMessageContaining("9999");
            assertThatThrownBy(() -> tier.write(h, MemorySegment.ofArray(new byte[(int) tier.allocationSize(h) + 1])))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(String.valueOf(h));
            assertThat(tier.read(h, dst)).as("a refused write leaves the object as it was").isTrue();
            assertThat(dst.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(data);

            long emptyObject = tier.allocate(10);
            tier.write(emptyObject, MemorySegment.ofArray(new byte[0]));
            assertThat(tier.read(emptyObject, MemorySegment.ofArray(new byte[0]))).as("an empty object exists").isTrue();
            tier.free(emptyObject);

            tier.free(h);
            assertThat(tier.read(h, dst)).as("freed").isFalse();
            assertThatThrownBy(() -> tier.free(h)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("handle " + h + " is not allocated in tier 'disk0'");
            assertThatThrownBy(() -> tier.write(h, dst)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(String.valueOf(h));
            assertThatThrownBy(() -> tier.allocate(0)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> tier.segment(0, 0, 1)).isInstanceOf(UnsupportedOperationException.class);
        }
    }

    @Test
    void allocationsReserveAHeaderBlockStayInsideOneFileAndReportFull(@TempDir Path dir) {
        try (DiskTier tier = DiskTier.open(DiskTierOptions.in(dir, 1L << 20).name("disk0").dataFiles(3))) {
            long block = tier.blockSize();
            long fileSize = tier.capacity() / 3;
            assertThat(tier.capacity()).isGreaterThanOrEqualTo(1L << 20);
            SplittableRandom r = new SplittableRandom(3);
            List<Long> handles = new ArrayList<>();
            long expectedUsed = 0;
            while (true) {
                long size = r.nextLong(1, 50_000);
                long h = tier.allocate(size);
                if (h == Allocator.FULL) {
                    break;
                }
                handles.add(h);
                expectedUsed += block + BlockAlignment.alignUp(size, block);
                DiskTier.Location at = tier.location(h);
                assertThat(at.headerOffset() % block).isZero();
                assertThat(at.payloadOffset()).isEqualTo(at.headerOffset() + block);
                assertThat(at.headerOffset() + block + tier.allocationSize(h)).isLessThanOrEqualTo(fileSize);
                assertThat(tier.used()).isEqualTo(expectedUsed).isLessThanOrEqualTo(tier.capacity());
                assertThat(tier.stats().allocations()).isEqualTo(handles.size());
            }
            assertThat(handles).hasSizeGreaterThan(3);
            assertThat(tier.allocate(fileSize)).as("larger than a file").isEqualTo(Allocator.FULL);
            for (long h : handles) {
                tier.free(h);
            }
            assertThat(tier.used()).isZero();
        }
    }

    @Test
    void filesAreOwnerOnlyAndDeletedOnCloseWhenAsked(@TempDir Path dir) throws Exception {
        DiskTier tier = DiskTier.open(smallOptions(dir));
        List<Path> files = tier.dataFiles();
        assertThat(files).hasSize(2);
        for (Path f : files) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(f))).isEqualTo("rw-------");
        }
        tier.close();
        tier.close(); // once is enough; twice does nothing
        for (Path f : files) {
            assertThat(f).doesNotExist();
        }
        assertThatThrownBy(() -> tier.allocate(10)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> tier.read(0, MemorySegment.ofArray(new byte[1]))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void filesAreKeptOnCloseByDefaultAndAreLockedWhileOpen(@TempDir Path dir) {
        DiskTier tier = DiskTier.open(DiskTierOptions.in(dir, 1L << 20).name("kept"));
        try (DiskTestSupport.LogCapture log = new DiskTestSupport.LogCapture()) {
            assertThatThrownBy(() -> DiskTier.open(DiskTierOptions.in(dir, 1L << 20).name("kept")))
                    .isInstanceOf(dev.strata.memory.TierIoException.class).hasMessageContaining("locked");
            assertThat(log.warnings()).as("a lock conflict is not a direct I/O problem")
                    .noneSatisfy(w -> assertThat(w).contains("BUFFERED"));
            byte[] data = DiskTestSupport.randomBytes(5000, new SplittableRandom(9));
            long h = tier.allocate(data.length);
            tier.write(h, MemorySegment.ofArray(data));
            byte[] back = new byte[data.length];
            assertThat(tier.read(h, MemorySegment.ofArray(back))).as("the first tier is untouched").isTrue();
            assertThat(back).isEqualTo(data);
        } finally {
            tier.close();
        }
        assertThat(tier.dataFiles().getFirst()).exists();
    }

    @Test
    void capacityBeyondTheUsableSpaceWarnsOrFailsNamingBothNumbers(@TempDir Path dir) throws Exception {
        long usable = Files.getFileStore(dir).getUsableSpace();
        long capacity = usable + (64L << 30);
        try (DiskTestSupport.LogCapture log = new DiskTestSupport.LogCapture();
             DiskTier tier = DiskTier.open(DiskTierOptions.in(dir, capacity).name("huge").deleteOnClose(true))) {
            assertThat(log.warnings()).anySatisfy(w -> assertThat(w).contains("exceeds the usable space")
                    .contains(String.valueOf(tier.capacity())));
        }
        long effective = BlockAlignment.alignUp(capacity, FileStoreInfo.probe(dir).directIoAlignment());
        assertThatThrownBy(() -> DiskTier.open(DiskTierOptions.in(dir, capacity).name("huge2")
                .capacityCheck(DiskTierOptions.CapacityCheck.FAIL)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("exceeds the usable space").hasMessageContaining(String.valueOf(effective));
    }

    @Test
    void statsCountEveryReadAndWriteWithMeasuredBandwidthAndLatency(@TempDir Path dir) {
        try (DiskTier tier = DiskTier.open(smallOptions(dir)); Arena arena = Arena.ofConfined()) {
            SplittableRandom r = new SplittableRandom(5);
            MemorySegment src = arena.allocate(123_457, 4096);
            DiskTestSupport.fillRandom(src, r);
            MemorySegment dst = arena.allocate(123_457, 4096);
            long h = tier.allocate(src.byteSize());
            for (int i = 0; i < 3; i++) {
                tier.write(h, src);
            }
            for (int i = 0; i < 5; i++) {
                assertThat(tier.read(h, dst)).isTrue();
            }
            TierStats s = tier.stats();
            assertThat(s.name()).isEqualTo("disk0");
            assertThat(s.kind()).isEqualTo(TierKind.DISK);
            assertThat(s.writeOps()).isEqualTo(3);
            assertThat(s.readOps()).isEqualTo(5);
            assertThat(s.bytesWritten()).isEqualTo(3 * 123_457L);
            assertThat(s.bytesRead()).isEqualTo(5 * 123_457L);
            assertThat(s.readBytesPerSec()).isPositive();
            assertThat(s.writeBytesPerSec()).isPositive();
            assertThat(s.readLatencyNanos()).isPositive();
            assertThat(s.writeLatencyNanos()).isPositive();
            assertThat(s.usedBytes()).isEqualTo(tier.used()).isEqualTo(4096 + BlockAlignment.alignUp(123_457, 4096));
        }
    }

    @Test
    void optionsAreCheckedWithTheOffendingValueNamed(@TempDir Path dir) {
        assertThatThrownBy(() -> DiskTierOptions.in(dir, 0).conclude()).hasMessageContaining("capacity").hasMessageContaining("0");
        assertThatThrownBy(() -> DiskTierOptions.in(dir, 1 << 20).dataFiles(0).conclude()).hasMessageContaining("dataFiles");
        assertThatThrownBy(() -> DiskTierOptions.in(dir, 1 << 20).dataFiles(2).fileSize(1 << 19).conclude())
                .hasMessageContaining("not both");
        assertThatThrownBy(() -> DiskTierOptions.in(dir, 1 << 20).stagingBuffers(0).conclude()).hasMessageContaining("stagingBuffers");
        assertThatThrownBy(() -> DiskTier.open(DiskTierOptions.in(dir, 4096).name("tiny")))
                .hasMessageContaining("cannot hold a header block");
        try (DiskTier tier = DiskTier.open(DiskTierOptions.in(dir, 10L << 20).name("bysize").fileSize(4L << 20))) {
            assertThat(tier.dataFiles()).hasSize(3);
            assertThat(tier.capacity()).isEqualTo(12L << 20);
        }
    }
}
