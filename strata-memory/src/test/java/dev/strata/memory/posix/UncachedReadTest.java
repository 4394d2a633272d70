package dev.strata.memory.posix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link UncachedRead}: the bytes of a range, across chunk boundaries, and errors naming the file. */
class UncachedReadTest {
    @TempDir
    Path dir;

    @Test
    void readsARangeSpanningSeveralChunksByteForByte() throws IOException {
        byte[] content = new byte[(int) (UncachedRead.CHUNK_BYTES * 2 + 12_345)];
        new Random(7).nextBytes(content);
        Path file = Files.write(dir.resolve("weights.bin"), content);
        long from = 1_000;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(content.length - from - 17);
            UncachedRead.into(file, from, dst);
            byte[] got = dst.toArray(ValueLayout.JAVA_BYTE);
            byte[] want = java.util.Arrays.copyOfRange(content, (int) from, (int) (content.length - 17));
            assertThat(got).isEqualTo(want);
        }
    }

    @Test
    void readsSeveralRangesThroughOneCallEachIntoItsDestination() throws IOException {
        byte[] content = new byte[50_000];
        new Random(11).nextBytes(content);
        Path file = Files.write(dir.resolve("shard.bin"), content);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(300);
            MemorySegment b = arena.allocate(7_000);
            UncachedRead.into(file, java.util.List.of(new UncachedRead.Part(40_000, a), new UncachedRead.Part(123, b)));
            assertThat(a.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(java.util.Arrays.copyOfRange(content, 40_000, 40_300));
            assertThat(b.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(java.util.Arrays.copyOfRange(content, 123, 7_123));
        }
    }

    @Test
    void aFileShorterThanTheRangeFailsNamingTheFileAndWhereItEnded() throws IOException {
        Path file = Files.write(dir.resolve("short.bin"), new byte[100]);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(200);
            assertThatThrownBy(() -> UncachedRead.into(file, 10, dst)).isInstanceOf(EOFException.class)
                    .hasMessageContaining(file.toString()).hasMessageContaining("ended at byte 100")
                    .hasMessageContaining("[10, 210)");
        }
    }

    @Test
    void aMissingFileFailsNamingItAndTheErrno() {
        Path file = dir.resolve("absent.bin");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(8);
            assertThatThrownBy(() -> UncachedRead.into(file, 0, dst)).isInstanceOf(IOException.class)
                    .hasMessageContaining(file.toString()).hasMessageContaining("ENOENT");
        }
    }

    @Test
    void aHeapOrReadOnlyDestinationIsRefused() {
        Path file = dir.resolve("any.bin");
        assertThatThrownBy(() -> UncachedRead.into(file, 0, MemorySegment.ofArray(new byte[8])))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("writable native segment");
    }
}
