package dev.strata.memory.disk;

import dev.strata.memory.Checksum64;
import dev.strata.memory.CorruptObjectException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Damages data files behind the tier's back, through a separate file channel, and checks that
 * reads detect it: flipped payload bytes, a torn header, a stale header from an earlier write.
 */
class DiskTierCorruptionTest {

    @TempDir
    Path tempDir;
    private Path shm;

    @AfterEach
    void removeShm() throws IOException {
        DiskTestSupport.deleteTree(shm);
    }

    private DiskTier open(String where) throws IOException {
        Path dir = tempDir;
        if (where.equals("shm")) {
            shm = DiskTestSupport.shmDirectory("strata-corrupt-");
            assumeTrue(shm != null, "no writable /dev/shm");
            dir = shm;
        }
        return DiskTier.open(DiskTierOptions.in(dir, 8L << 20).name("disk-c").dataFiles(2)
                .stagingBuffers(2).stagingBufferSize(64 * 1024).deleteOnClose(true));
    }

    private static long checksum(byte[] data) {
        return Checksum64.of(MemorySegment.ofArray(data), 0, data.length);
    }

    private static byte[] readFile(Path file, long position, int length) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(length);
            while (b.hasRemaining()) {
                if (ch.read(b, position + b.position()) < 0) {
                    throw new IOException("short file");
                }
            }
            return b.array();
        }
    }

    private static void writeFile(Path file, long position, byte[] bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b, position + b.position());
            }
            ch.force(true);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"disk", "shm"})
    void flippedPayloadBytesAreReportedWithBothChecksums(String where) throws Exception {
        try (DiskTier tier = open(where)) {
            SplittableRandom r = new SplittableRandom(21);
            for (int size : new int[] {5_003, 150_001}) { // one-shot staged read, and chunked read
                byte[] data = DiskTestSupport.randomBytes(size, r);
                byte[] other = DiskTestSupport.randomBytes(777, r);
                long h = tier.allocate(size);
                long neighbour = tier.allocate(other.length);
                tier.write(h, MemorySegment.ofArray(data));
                tier.write(neighbour, MemorySegment.ofArray(other));

                DiskTier.Location at = tier.location(h);
                int k = r.nextInt(size);
                byte[] one = readFile(at.file(), at.payloadOffset() + k, 1);
                writeFile(at.file(), at.payloadOffset() + k, new byte[] {(byte) (one[0] ^ 0x5A)});
                byte[] damaged = data.clone();
                damaged[k] ^= 0x5A;

                String expected = String.format("0x%x", checksum(data));
                String actual = String.format("0x%x", checksum(damaged));
                assertThatThrownBy(() -> tier.read(h, MemorySegment.ofArray(new byte[size])))
                        .isInstanceOf(CorruptObjectException.class)
                        .hasMessageContaining("disk-c").hasMessageContaining("handle " + h)
                        .hasMessageContaining(expected).hasMessageContaining(actual);

                byte[] back = new byte[other.length];
                assertThat(tier.read(neighbour, MemorySegment.ofArray(back))).as("other objects are intact").isTrue();
                assertThat(back).isEqualTo(other);

                tier.write(h, MemorySegment.ofArray(data)); // rewriting repairs the object
                byte[] again = new byte[size];
                assertThat(tier.read(h, MemorySegment.ofArray(again))).isTrue();
                assertThat(again).isEqualTo(data);
                tier.free(h);
                tier.free(neighbour);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"disk", "shm"})
    void tornHeaderIsDetected(String where) throws Exception {
        try (DiskTier tier = open(where)) {
            byte[] data = DiskTestSupport.randomBytes(30_011, new SplittableRandom(22));
            long h = tier.allocate(data.length);
            tier.write(h, MemorySegment.ofArray(data));
            DiskTier.Location at = tier.location(h);
            // the header's second half never reached the disk: a torn header write
            writeFile(at.file(), at.headerOffset() + 32, new byte[32]);
            assertThatThrownBy(() -> tier.read(h, MemorySegment.ofArray(new byte[data.length])))
                    .isInstanceOf(CorruptObjectException.class)
                    .hasMessageContaining("handle " + h).hasMessageContaining("torn header");

            // a header never written at all
            writeFile(at.file(), at.headerOffset(), new byte[DiskObjectHeader.SIZE]);
            assertThatThrownBy(() -> tier.read(h, MemorySegment.ofArray(new byte[data.length])))
                    .isInstanceOf(CorruptObjectException.class).hasMessageContaining("magic");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"disk", "shm"})
    void staleHeaderFromAnEarlierWriteIsDetected(String where) throws Exception {
        try (DiskTier tier = open(where)) {
            SplittableRandom r = new SplittableRandom(23);
            byte[] first = DiskTestSupport.randomBytes(10_007, r);
            byte[] second = DiskTestSupport.randomBytes(10_007, r);
            long h = tier.allocate(first.length);
            tier.write(h, MemorySegment.ofArray(first));
            DiskTier.Location at = tier.location(h);
            byte[] oldHeader = readFile(at.file(), at.headerOffset(), DiskObjectHeader.SIZE);
            tier.write(h, MemorySegment.ofArray(second));
            writeFile(at.file(), at.headerOffset(), oldHeader); // the new header was lost, the old one remains
            assertThatThrownBy(() -> tier.read(h, MemorySegment.ofArray(new byte[second.length])))
                    .isInstanceOf(CorruptObjectException.class)
                    .hasMessageContaining("handle " + h).hasMessageContaining("stale");
        }
    }
}
