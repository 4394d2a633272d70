package dev.strata.memory;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.testing.Property;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class Checksum64Test {

    private static byte[] randomBytes(java.util.SplittableRandom r, int n) {
        byte[] data = new byte[n];
        for (int i = 0; i < n; i++) {
            data[i] = (byte) r.nextInt(256);
        }
        return data;
    }

    /** {@code data} in native memory starting 0 to 15 bytes past a 64-byte boundary. */
    private static MemorySegment nativeCopyAtOddAddress(Arena arena, java.util.SplittableRandom r, byte[] data) {
        int n = data.length;
        MemorySegment src = arena.allocate(n + 16, 64).asSlice(r.nextInt(0, 16), n);
        MemorySegment.copy(data, 0, src, ValueLayout.JAVA_BYTE, 0, n);
        return src;
    }

    @Test
    void vectorPathMatchesScalarReferenceAtOddSizes() {
        Property.forAll("checksum-vs-reference", 200, r -> {
            int n = r.nextInt(0, 5000);
            byte[] data = randomBytes(r, n);
            MemorySegment seg = MemorySegment.ofArray(data);
            assertThat(Checksum64.of(seg, 0, n)).as("n=%d", n).isEqualTo(Checksum64.referenceValue(data));
        });
    }

    /**
     * Both vector widths (one 512-bit vector per 64-byte block, or two 256-bit ones) give the
     * reference value, summing alone and fused into a copy, whichever width this machine prefers.
     */
    @Test
    void bothVectorWidthsMatchTheScalarReference() {
        try (Arena arena = Arena.ofConfined()) {
            Property.forAll("checksum-widths", 60, r -> {
                int n = r.nextInt(0, 20_000);
                byte[] data = randomBytes(r, n);
                MemorySegment src = nativeCopyAtOddAddress(arena, r, data);
                long expected = Checksum64.referenceValue(data);
                for (boolean wholeBlocks : new boolean[] {false, true}) {
                    assertThat(new Checksum64(wholeBlocks).update(src, 0, n).value())
                            .as("sum, n=%d, whole-block vectors %s", n, wholeBlocks).isEqualTo(expected);
                    MemorySegment dst = arena.allocate(Math.max(n, 1), 64).asSlice(0, n);
                    long half = r.nextLong(0, n + 1);
                    Checksum64 c = new Checksum64(wholeBlocks);
                    c.copyAndUpdate(src, 0, dst, 0, half).copyAndUpdate(src, half, dst, half, n - half);
                    assertThat(dst.toArray(ValueLayout.JAVA_BYTE)).as("copy, n=%d", n).isEqualTo(data);
                    assertThat(c.value()).as("copy and sum, n=%d, whole-block vectors %s", n, wholeBlocks)
                            .isEqualTo(expected);
                }
            });
        }
    }

    @Test
    void valueDoesNotDependOnHowTheBytesAreSplit() {
        Property.forAll("checksum-streaming", 200, r -> {
            int n = r.nextInt(1, 9000);
            byte[] data = randomBytes(r, n);
            MemorySegment seg = MemorySegment.ofArray(data);
            Checksum64 c = new Checksum64();
            long pos = 0;
            while (pos < n) {
                long len = Math.min(n - pos, r.nextInt(0, 300));
                c.update(seg, pos, len);
                pos += len;
            }
            assertThat(c.value()).isEqualTo(Checksum64.referenceValue(data));
        });
    }

    @Test
    void copyAndUpdateCopiesExactlyAndSumsTheSame() {
        try (Arena arena = Arena.ofConfined()) {
            Property.forAll("checksum-copy", 100, r -> {
                int n = r.nextInt(1, 70_000);
                byte[] data = randomBytes(r, n);
                MemorySegment src = nativeCopyAtOddAddress(arena, r, data);
                MemorySegment dst = arena.allocate(n + 8, 64).asSlice(r.nextInt(0, 8), n);
                Checksum64 c = new Checksum64();
                long half = r.nextLong(0, n + 1);
                c.copyAndUpdate(src, 0, dst, 0, half).copyAndUpdate(src, half, dst, half, n - half);
                assertThat(dst.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(data);
                assertThat(c.value()).isEqualTo(Checksum64.referenceValue(data));
            });
        }
    }

    /**
     * Heap, native and file-mapped segments on either side of the copy (heap and mapped ones take
     * the stepped path through native memory): the same bytes copied, the same value.
     */
    @Test
    void everyKindOfSegmentOnEitherSideCopiesAndSumsTheSame(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws java.io.IOException {
        int max = 3 * Checksum64.MAPPED_STEP + 1000;
        try (Arena arena = Arena.ofConfined();
             java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(dir.resolve("mapped"),
                     java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.READ,
                     java.nio.file.StandardOpenOption.WRITE)) {
            MemorySegment file = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, 2L * max + 64, arena);
            java.util.List<java.util.function.IntFunction<MemorySegment>> kinds = java.util.List.of(
                    n -> MemorySegment.ofArray(new byte[n + 8]).asSlice(8, n),     // heap (byte[])
                    n -> MemorySegment.ofArray(new long[n / 8 + 2]).asSlice(3, n), // heap (long[]), unaligned
                    n -> arena.allocate(n + 8, 64).asSlice(5, n),                  // native
                    n -> file.asSlice(7, n));                                      // mapped
            Property.forAll("checksum-segment-kinds", 64, r -> {
                int n = r.nextInt(1, max);
                byte[] data = randomBytes(r, n);
                int from = r.nextInt(kinds.size());
                int to = r.nextInt(kinds.size());
                MemorySegment src = from == 3 ? file.asSlice(max + 8, n) : kinds.get(from).apply(n);
                MemorySegment dst = kinds.get(to).apply(n);
                MemorySegment.copy(data, 0, src, ValueLayout.JAVA_BYTE, 0, n);
                long split = r.nextLong(0, n + 1);
                Checksum64 copied = new Checksum64().copyAndUpdate(src, 0, dst, 0, split).copyAndUpdate(src, split, dst, split, n - split);
                Checksum64 summed = new Checksum64().update(src, 0, split).update(src, split, n - split);
                long expected = Checksum64.referenceValue(data);
                assertThat(dst.toArray(ValueLayout.JAVA_BYTE)).as("kind %d -> %d, %d bytes", from, to, n).isEqualTo(data);
                assertThat(copied.value()).as("kind %d -> %d, %d bytes", from, to, n).isEqualTo(expected);
                assertThat(summed.value()).as("kind %d, %d bytes", from, n).isEqualTo(expected);
            });
        }
    }

    @Test
    void thePartsVariantsCopyIntoAndOutOfAFileMappingAndSumTheSame(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws java.io.IOException {
        long room = 12L << 20;
        try (Arena arena = Arena.ofShared();
             java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(dir.resolve("mapped"),
                     java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.READ,
                     java.nio.file.StandardOpenOption.WRITE)) {
            MemorySegment file = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, room, arena);
            Property.forAll("checksum-parts-mapped", 40, r -> {
                // whole 256-byte passes on cache lines (the streaming loop's parts) or odd lengths and addresses;
                // one case in eight of more than one call of the loop, with a part longer than a call
                boolean passes = r.nextBoolean();
                boolean large = r.nextInt(8) == 0;
                int count = large ? 3 : r.nextInt(1, 9);
                java.util.List<MemorySegment> parts = new java.util.ArrayList<>();
                java.util.List<MemorySegment> back = new java.util.ArrayList<>();
                java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
                for (int i = 0; i < count; i++) {
                    int n = large && i == 1 ? (5 << 20) + 512 : passes ? 256 * r.nextInt(1, 160) : r.nextInt(1, 40_000);
                    byte[] data = randomBytes(r, n);
                    all.writeBytes(data);
                    int skew = passes ? 0 : r.nextInt(1, 64);
                    MemorySegment part = arena.allocate(n + 64L, 64).asSlice(skew, n);
                    MemorySegment.copy(data, 0, part, ValueLayout.JAVA_BYTE, 0, n);
                    parts.add(part);
                    back.add(arena.allocate(n + 64L, 64).asSlice(skew, n));
                }
                byte[] data = all.toByteArray();
                long at = passes ? 64L * r.nextInt(0, 1000) : r.nextInt(0, 64_000);
                long streamedBefore = dev.strata.memory.transfer.NonTemporalCopy.bytesStreamed();
                Checksum64 in = new Checksum64().copyPartsToMappedAndUpdate(parts, file, at);
                Checksum64 out = new Checksum64().copyMappedToPartsAndUpdate(file, at, back);
                long expected = Checksum64.referenceValue(data);
                String what = count + " parts, " + data.length + " bytes at " + at + (passes ? ", whole passes" : "");
                assertThat(file.asSlice(at, data.length).toArray(ValueLayout.JAVA_BYTE)).as(what).isEqualTo(data);
                java.io.ByteArrayOutputStream read = new java.io.ByteArrayOutputStream();
                back.forEach(b -> read.writeBytes(b.toArray(ValueLayout.JAVA_BYTE)));
                assertThat(read.toByteArray()).as(what).isEqualTo(data);
                assertThat(in.value()).as(what).isEqualTo(expected);
                assertThat(out.value()).as(what).isEqualTo(expected);
                if (passes && data.length >= dev.strata.memory.transfer.NonTemporalCopy.MIN_BYTES
                        && dev.strata.memory.transfer.NonTemporalCopy.guardsMappings()) {
                    assertThat(dev.strata.memory.transfer.NonTemporalCopy.bytesStreamed() - streamedBefore)
                            .as("both ways streamed: " + what).isGreaterThanOrEqualTo(2L * data.length);
                }
            });
        }
    }

    @Test
    void theMappedVariantsCopyExactlyAndSumAsTheFusedCopy() {
        try (Arena arena = Arena.ofConfined()) {
            Property.forAll("checksum-mapped", 60, r -> {
                int n = r.nextInt(1, 3 * Checksum64.MAPPED_STEP + 1000);
                byte[] data = randomBytes(r, n);
                MemorySegment src = nativeCopyAtOddAddress(arena, r, data);
                MemorySegment mapped = arena.allocate(n + 8, 64).asSlice(r.nextInt(0, 8), n);
                MemorySegment back = arena.allocate(n, 64);
                long half = r.nextLong(0, n + 1);
                Checksum64 in = new Checksum64().copyToMappedAndUpdate(src, 0, mapped, 0, half)
                        .copyToMappedAndUpdate(src, half, mapped, half, n - half);
                Checksum64 out = new Checksum64().copyFromMappedAndUpdate(mapped, 0, back, 0, half)
                        .copyFromMappedAndUpdate(mapped, half, back, half, n - half);
                Checksum64 inPlace = new Checksum64().updateMapped(mapped, 0, half).updateMapped(mapped, half, n - half);
                assertThat(mapped.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(data);
                assertThat(back.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(data);
                long expected = Checksum64.referenceValue(data);
                assertThat(in.value()).isEqualTo(expected);
                assertThat(out.value()).isEqualTo(expected);
                assertThat(inPlace.value()).isEqualTo(expected);
            });
        }
    }

    @Test
    void detectsEverySingleBitFlipAndLengthChange() {
        Property.forAll("checksum-bitflip", 50, r -> {
            int n = r.nextInt(1, 2000);
            byte[] data = randomBytes(r, n);
            long good = Checksum64.referenceValue(data);
            int bit = r.nextInt(n * 8);
            data[bit / 8] ^= (byte) (1 << (bit % 8));
            assertThat(Checksum64.referenceValue(data)).isNotEqualTo(good);
            data[bit / 8] ^= (byte) (1 << (bit % 8));
            assertThat(Checksum64.referenceValue(java.util.Arrays.copyOf(data, n + 1))).isNotEqualTo(good);
        });
    }

    @Test
    void detectsSwappedBlocks() {
        Property.forAll("checksum-swap", 50, r -> {
            byte[] data = randomBytes(r, 64 * 8);
            long good = Checksum64.referenceValue(data);
            byte[] swapped = data.clone();
            System.arraycopy(data, 0, swapped, 64, 64);
            System.arraycopy(data, 64, swapped, 0, 64);
            assertThat(Checksum64.referenceValue(swapped)).isNotEqualTo(good);
        });
    }
}
