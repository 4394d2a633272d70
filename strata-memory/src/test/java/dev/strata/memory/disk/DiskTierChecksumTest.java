package dev.strata.memory.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.memory.Checksum64;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every write path of the DISK tier stores the payload's {@link Checksum64} in the object header. */
class DiskTierChecksumTest {

    private static DiskObjectHeader headerOnDisk(DiskTier tier, long handle) throws Exception {
        DiskTier.Location at = tier.location(handle);
        try (FileChannel ch = FileChannel.open(at.file(), StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(DiskObjectHeader.SIZE);
            while (b.hasRemaining() && ch.read(b, at.headerOffset() + b.position()) > 0) {
                // read the whole header
            }
            return DiskObjectHeader.decode(MemorySegment.ofArray(b.array()), "disk-sum", handle);
        }
    }

    @Test
    void stagedInPlaceChunkedAndGatheredWritesStoreTheChecksumOfThePayload(@TempDir Path dir) throws Exception {
        SplittableRandom random = new SplittableRandom(404);
        try (DiskTier tier = DiskTier.open(DiskTierOptions.in(dir, 16L << 20).name("disk-sum").dataFiles(1)
                .stagingBuffers(2).stagingBufferSize(64 * 1024));
             Arena arena = Arena.ofConfined()) {
            for (int size : new int[] {1, 4095, 40_001, 300_007}) { // one staged write, and chunked ones
                byte[] payload = DiskTestSupport.randomBytes(size, random);
                long expected = Checksum64.referenceValue(payload);

                long staged = tier.allocate(size);
                tier.write(staged, MemorySegment.ofArray(payload));

                MemorySegment aligned = arena.allocate(size, 4096); // written in place where possible
                MemorySegment.copy(MemorySegment.ofArray(payload), 0, aligned, 0, size);
                long inPlace = tier.allocate(size);
                tier.write(inPlace, aligned);

                List<MemorySegment> parts = new ArrayList<>();
                for (int at = 0; at < size; ) {
                    int n = Math.min(size - at, 1 + random.nextInt(9_000));
                    parts.add(MemorySegment.ofArray(Arrays.copyOfRange(payload, at, at + n)));
                    at += n;
                }
                long gathered = tier.allocate(size);
                tier.gatherWrite(gathered, parts);

                for (long h : new long[] {staged, inPlace, gathered}) {
                    DiskObjectHeader header = headerOnDisk(tier, h);
                    assertThat(header.payloadChecksum()).as("size " + size + ", handle " + h).isEqualTo(expected);
                    assertThat(header.payloadLength()).isEqualTo(size);
                    MemorySegment back = arena.allocate(size, 4096); // read in place where possible
                    assertThat(tier.read(h, back)).isTrue();
                    assertThat(back.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)).isEqualTo(payload);
                    byte[] heapBack = new byte[size]; // read through staging
                    assertThat(tier.read(h, MemorySegment.ofArray(heapBack))).isTrue();
                    assertThat(heapBack).isEqualTo(payload);
                    tier.free(h);
                }
            }
        }
    }
}
