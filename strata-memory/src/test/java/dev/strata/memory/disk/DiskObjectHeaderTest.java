package dev.strata.memory.disk;

import dev.strata.memory.CorruptObjectException;
import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DiskObjectHeaderTest {

    private static DiskObjectHeader randomHeader(java.util.SplittableRandom r) {
        return new DiskObjectHeader(r.nextLong(0, 1L << 40) * 4096, r.nextLong(0, 1L << 34), r.nextLong(1, Long.MAX_VALUE),
                r.nextLong(), r.nextInt(1, 1 << 22), r.nextLong(0, 1L << 42));
    }

    @Test
    void encodeThenDecodeGivesTheSameHeaderAndZeroPadding() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(4096, 4096);
            Property.forAll("headerRoundTrip", 500, r -> {
                DiskTestSupport.fillRandom(block, r); // stale bytes must be overwritten
                DiskObjectHeader h = randomHeader(r);
                h.encodeTo(block);
                assertThat(DiskObjectHeader.decode(block, "t", h.handle())).isEqualTo(h);
                assertThat(block.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN),
                        DiskObjectHeader.OFFSET_MAGIC)).isEqualTo(DiskObjectHeader.MAGIC);
                assertThat(block.asSlice(DiskObjectHeader.SIZE).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 0);
            });
        }
    }

    @Test
    void magicSpellsItsAsciiName() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(64);
            new DiskObjectHeader(0, 1, 1, 7, 1, 0).encodeTo(block);
            assertThat(new String(block.asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE), java.nio.charset.StandardCharsets.US_ASCII))
                    .isEqualTo("STRADSKO");
        }
    }

    @Test
    void anyFlippedByteInTheChecksummedRangeIsDetected() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(4096, 4096);
            Property.forAll("headerFlip", 1000, r -> {
                DiskObjectHeader h = randomHeader(r);
                h.encodeTo(block);
                long at = r.nextLong(0, DiskObjectHeader.OFFSET_HEADER_CHECKSUM + 4);
                byte old = block.get(ValueLayout.JAVA_BYTE, at);
                block.set(ValueLayout.JAVA_BYTE, at, (byte) (old ^ (1 << r.nextInt(8))));
                assertThatThrownBy(() -> DiskObjectHeader.decode(block, "disk0", 8192))
                        .isInstanceOf(CorruptObjectException.class)
                        .hasMessageContaining("disk0").hasMessageContaining("8192").hasMessageContaining("header");
            });
        }
    }

    @Test
    void tornHeaderWithOnlyTheFirstHalfWrittenIsDetected() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(4096, 4096);
            new DiskObjectHeader(4096, 12345, 9, 0x1234_5678, 42, 1).encodeTo(block);
            block.asSlice(32, 32).fill((byte) 0);
            assertThatThrownBy(() -> DiskObjectHeader.decode(block, "disk0", 4096))
                    .isInstanceOf(CorruptObjectException.class).hasMessageContaining("torn header");
        }
    }

    @Test
    void anotherMajorVersionIsRefusedEvenWithAValidChecksum() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(4096, 4096);
            new DiskObjectHeader(4096, 12345, 9, 0x1234_5678, 42, 1).encodeTo(block);
            var shortLe = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
            var intLe = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
            block.set(shortLe, DiskObjectHeader.OFFSET_MAJOR_VERSION, (short) 3);
            block.set(intLe, DiskObjectHeader.OFFSET_HEADER_CHECKSUM, DiskObjectHeader.headerChecksum(block));
            assertThatThrownBy(() -> DiskObjectHeader.decode(block, "disk0", 4096))
                    .isInstanceOf(CorruptObjectException.class).hasMessageContaining("major version 3");
        }
    }
}
