package dev.strata.memory.transfer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.strata.memory.host.OffHeapRegion;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The streaming copy routine against {@link MemorySegment#copy}: every alignment and length
 * copies the same bytes and nothing outside the range, gathers and scatters of odd pieces too;
 * memory that is not registered anonymous memory, short copies, overlapping ranges and the
 * {@code off} setting take the plain copy; the routine is installed wherever the processor has
 * AVX2 on x86-64 Linux, and its AVX-512 loop wherever the kernel lists AVX-512; each of the two
 * loops installed here copies every alignment and length exactly.
 */
class NonTemporalCopyTest {

    private static final long SPAN = 1 << 20; // bytes of each test region
    private static final long GUARD = 4096; // untouched bytes checked around each destination range
    private static final long EDGES = 63 + NonTemporalCopy.passBytes() - 1; // most bytes of one copy left to MemorySegment.copy at its two ends

    private OffHeapRegion source;
    private OffHeapRegion target;

    @BeforeEach
    void setUp() {
        source = OffHeapRegion.allocate("nt-source", SPAN, false);
        target = OffHeapRegion.allocate("nt-target", SPAN, false);
        fill(source.segment(), 17);
    }

    @AfterEach
    void tearDown() {
        NonTemporalCopy.mode(NonTemporalCopy.Mode.AUTO);
        source.close();
        target.close();
    }

    @Test
    void theRoutineIsInstalledOnX8664LinuxWithAvx2() throws IOException {
        boolean avx2 = cpuFlag("avx2");
        if (avx2) {
            assertThat(NonTemporalCopy.unavailableReason()).isNull();
            assertThat(NonTemporalCopy.available()).isTrue();
            boolean avx512 = cpuFlag("avx512f");
            assertThat(NonTemporalCopy.hasWideLoop()).as("AVX-512 loop installed").isEqualTo(avx512);
            assertThat(NonTemporalCopy.routine()).startsWith(avx512 ? "AVX-512" : "AVX2");
            assertThat(NonTemporalCopy.passBytes()).isEqualTo(avx512 ? 256 : 128);
        } else {
            assertThat(NonTemporalCopy.unavailableReason()).isNotBlank();
            assertThat(NonTemporalCopy.available()).isFalse();
        }
    }

    @Test
    void regionsQualifyUntilClosedAndOtherMemoryNever() {
        assertThat(NonTemporalCopy.qualifies(source.segment())).isTrue();
        assertThat(NonTemporalCopy.qualifies(source.segment().asSlice(100, 200))).isTrue();
        try (Arena arena = Arena.ofConfined()) {
            assertThat(NonTemporalCopy.qualifies(arena.allocate(64))).isFalse();
        }
        assertThat(NonTemporalCopy.qualifies(MemorySegment.ofArray(new byte[64]))).isFalse();
        MemorySegment view = target.segment();
        target.close();
        assertThat(NonTemporalCopy.qualifies(view)).isFalse();
        target = OffHeapRegion.allocate("nt-target", SPAN, false);
    }

    /** True on x86-64 Linux where /proc/cpuinfo lists {@code flag} for the processor. */
    private static boolean cpuFlag(String flag) throws IOException {
        boolean x86Linux = System.getProperty("os.name").toLowerCase(Locale.ROOT).startsWith("linux")
                && List.of("amd64", "x86_64").contains(System.getProperty("os.arch"));
        return x86Linux && Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
                .filter(l -> l.startsWith("flags")).findFirst()
                .map(l -> (" " + l.substring(l.indexOf(':') + 1) + " ").contains(" " + flag + " ")).orElse(false);
    }

    @Test
    void eachInstalledLoopCopiesEveryAlignmentAndLengthExactly() throws IOException {
        assumeTrue(cpuFlag("avx2"), "no AVX2 loop on this machine");
        SplittableRandom random = new SplittableRandom(11);
        for (boolean wide : loops()) {
            long pass = wide ? 256 : 128;
            for (long length : new long[] {1, 63, pass, pass + 1, 4 * pass - 1, 16 * 1024, 20 * 1024 + 37, 99_999}) {
                for (int trial = 0; trial < 8; trial++) {
                    long from = random.nextLong(0, 200);
                    long to = GUARD + random.nextLong(0, 200);
                    target.segment().fill((byte) 0x5A);
                    long moved = NonTemporalCopy.copyWithLoop(wide, source.segment().asSlice(from, length),
                            target.segment().asSlice(to, length));
                    assertCopied(from, to, length);
                    assertThat(moved).as("bytes the %s loop moved of %d", wide ? "AVX-512" : "AVX2", length)
                            .isBetween(Math.max(0, length - 63 - (pass - 1)), length);
                }
            }
        }
    }

    @Test
    void aGatherOfWholePassesFromOneRegionStreamsEveryByteAndRoundTrips() {
        // KV-block shaped: pieces of whole 256-byte passes, far apart in one region, into a line-aligned whole
        List<MemorySegment> parts = new ArrayList<>();
        long total = 0;
        for (int i = 0; i < 24; i++) {
            long len = 256L * (1 + i % 5) * 4; // 1 KiB to 5 KiB
            parts.add(source.segment().asSlice(SPAN - (i + 1) * 40_000L + 64L * i, len));
            total += len;
        }
        target.segment().fill((byte) 0x5A);
        MemorySegment whole = target.segment().asSlice(GUARD, total);
        long before = NonTemporalCopy.bytesStreamed();
        assertThat(NonTemporalCopy.gather(parts, whole)).isEqualTo(total);
        long offset = 0;
        for (MemorySegment part : parts) {
            assertThat(MemorySegment.mismatch(part, 0, part.byteSize(), whole, offset, offset + part.byteSize())).isEqualTo(-1);
            offset += part.byteSize();
        }
        assertThat(target.segment().get(ValueLayout.JAVA_BYTE, GUARD - 1)).isEqualTo((byte) 0x5A);
        assertThat(target.segment().get(ValueLayout.JAVA_BYTE, GUARD + total)).isEqualTo((byte) 0x5A);
        scatterBack(whole, parts, total, 4096); // over line-aligned pieces of the target's upper half
        long streamed = NonTemporalCopy.bytesStreamed() - before;
        assertThat(streamed).as("the loop streams every byte of both, where there is one")
                .isEqualTo(NonTemporalCopy.available() ? 2 * total : 0);
    }

    @Test
    void aGatherLongerThanOneTableCallIsCopiedWhole() {
        long piece = 160 * 1024;
        int pieces = (int) (NonTemporalCopy.TABLE_CALL_BYTES / piece) * 2 + 3; // three calls of the table loop
        long total = piece * pieces;
        try (OffHeapRegion from = OffHeapRegion.allocate("nt-big-source", 2 * total, false);
             OffHeapRegion to = OffHeapRegion.allocate("nt-big-target", total + 2 * GUARD, false)) {
            fill(from.segment(), 5);
            List<MemorySegment> parts = new ArrayList<>();
            for (int i = 0; i < pieces; i++) { // every other piece-sized span, last first
                parts.add(from.segment().asSlice((2L * (pieces - 1 - i)) * piece + 128, piece));
            }
            to.segment().fill((byte) 0x5A);
            MemorySegment whole = to.segment().asSlice(GUARD, total);
            long before = NonTemporalCopy.bytesStreamed();
            assertThat(NonTemporalCopy.gather(parts, whole)).isEqualTo(total);
            for (int i = 0; i < pieces; i++) {
                assertThat(MemorySegment.mismatch(parts.get(i), 0, piece, whole, i * piece, (i + 1) * piece))
                        .as("piece %d", i).isEqualTo(-1);
            }
            assertThat(to.segment().get(ValueLayout.JAVA_BYTE, GUARD - 1)).isEqualTo((byte) 0x5A);
            assertThat(to.segment().get(ValueLayout.JAVA_BYTE, GUARD + total)).isEqualTo((byte) 0x5A);
            if (NonTemporalCopy.available()) {
                assertThat(NonTemporalCopy.bytesStreamed() - before).isEqualTo(total);
            }
        }
    }

    /**
     * A run of pairs: the pairs the loop takes stream in one table (more entries than one call
     * holds, more bytes than one call moves), every other pair (another region, heap memory, an
     * odd length, a destination off a cache line, a short one) copies as {@link NonTemporalCopy#copy}
     * would, each pair lands whole and nothing around it moves, and pairs that read what an earlier
     * pair wrote see it written (the order of the pairs is kept).
     */
    @Test
    void aRunOfPairsCopiesEachPairWholeInOrderAndStreamsThoseTheLoopTakes() {
        long pass = NonTemporalCopy.passBytes();
        int streamedPairs = 1100; // past the 1,024 entries of one table call
        long big = 2L * 1024 * 1024; // three of these pass one call's bytes, each short of the JVM's own streaming
        long span = streamedPairs * 2 * pass + 3 * big + (1 << 20);
        try (OffHeapRegion from = OffHeapRegion.allocate("nt-pairs-source", span, false);
             OffHeapRegion to = OffHeapRegion.allocate("nt-pairs-target", span, false);
             OffHeapRegion other = OffHeapRegion.allocate("nt-pairs-other", SPAN, false);
             Arena arena = Arena.ofConfined()) {
            fill(from.segment(), 23);
            fill(other.segment(), 29);
            to.segment().fill((byte) 0x5A);
            List<MemorySegment> sources = new ArrayList<>();
            List<MemorySegment> destinations = new ArrayList<>();
            long expectStreamed = 0;
            long at = 0;
            for (int i = 0; i < streamedPairs; i++) { // every other pass-sized span, into the target's every other
                sources.add(from.segment().asSlice(at, pass));
                destinations.add(to.segment().asSlice(at, pass));
                expectStreamed += pass;
                at += 2 * pass;
            }
            for (int i = 0; i < 3; i++) {
                sources.add(from.segment().asSlice(at, big - pass));
                destinations.add(to.segment().asSlice(at, big - pass));
                expectStreamed += big - pass;
                at += big;
            }
            MemorySegment heap = MemorySegment.ofArray(new byte[64 * 1024]);
            sources.add(other.segment().asSlice(0, 32 * 1024)); // another region: copy() streams it on its own
            destinations.add(to.segment().asSlice(at, 32 * 1024));
            sources.add(from.segment().asSlice(0, heap.byteSize())); // into heap memory: the plain copy
            destinations.add(heap);
            sources.add(from.segment().asSlice(7, 20 * 1024 + 37)); // an odd length at an odd place
            destinations.add(to.segment().asSlice(at + 65_536, 20 * 1024 + 37));
            sources.add(from.segment().asSlice(0, 2 * pass)); // a destination off a cache line
            destinations.add(to.segment().asSlice(at + 131_072 + 8, 2 * pass));
            sources.add(from.segment().asSlice(0, 100)); // shorter than a pass
            destinations.add(to.segment().asSlice(at + 196_608, 100));
            sources.add(to.segment().asSlice(0, pass)); // reads what the first pair wrote
            destinations.add(to.segment().asSlice(at + 262_144, pass));
            MemorySegment notCopied = arena.allocate(pass); // past the count: left alone
            sources.add(from.segment().asSlice(0, pass));
            destinations.add(notCopied);
            int count = sources.size() - 1;

            long before = NonTemporalCopy.bytesStreamed();
            NonTemporalCopy.copyPairs(sources.toArray(MemorySegment[]::new), destinations.toArray(MemorySegment[]::new), count);

            for (int i = 0; i < count; i++) {
                MemorySegment expected = i == count - 1 ? from.segment().asSlice(0, pass) : sources.get(i);
                assertThat(destinations.get(i).mismatch(expected)).as("pair %d", i).isEqualTo(-1);
            }
            for (int i = 0; i < streamedPairs; i++) { // the spans between the streamed pairs are untouched
                long gap = (2L * i + 1) * pass;
                assertThat(to.segment().get(ValueLayout.JAVA_BYTE, gap)).as("byte after pair %d", i).isEqualTo((byte) 0x5A);
                assertThat(to.segment().get(ValueLayout.JAVA_BYTE, gap + pass - 1)).as("byte before pair %d", i + 1)
                        .isEqualTo((byte) 0x5A);
            }
            assertThat(to.segment().get(ValueLayout.JAVA_BYTE, at + 131_072 + 7)).isEqualTo((byte) 0x5A);
            assertThat(notCopied.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 0);
            if (NonTemporalCopy.available()) { // the table's pairs, and the other region's pair on its own
                assertThat(NonTemporalCopy.bytesStreamed() - before).isGreaterThanOrEqualTo(expectStreamed + 32 * 1024)
                        .isLessThan(expectStreamed + 32 * 1024 + 20 * 1024 + 37);
            }
        }
    }

    @Test
    void aRunOfPairsWithLengthsThatDifferIsRefusedBeforeAnyByteMoves() {
        target.segment().fill((byte) 0x5A);
        MemorySegment[] sources = {source.segment().asSlice(0, 16 * 1024), source.segment().asSlice(0, 16 * 1024)};
        MemorySegment[] destinations = {target.segment().asSlice(0, 16 * 1024), target.segment().asSlice(65_536, 16 * 1024 - 1)};
        assertThatThrownBy(() -> NonTemporalCopy.copyPairs(sources, destinations, 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pair 1 of 2")
                .hasMessageContaining("16384 bytes into 16383");
        assertThat(target.segment().get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 0x5A);
        NonTemporalCopy.copyPairs(sources, destinations, 1); // the count bounds what is read
        assertThat(target.segment().asSlice(0, 16 * 1024).mismatch(sources[0])).isEqualTo(-1);
    }

    @Test
    void aGatherFromTwoRegionsCopiesTheSameBytes() {
        try (OffHeapRegion other = OffHeapRegion.allocate("nt-other", SPAN, false)) {
            fill(other.segment(), 99);
            List<MemorySegment> parts = new ArrayList<>();
            long total = 0;
            for (int i = 0; i < 16; i++) {
                MemorySegment from = i % 2 == 0 ? source.segment() : other.segment();
                parts.add(from.asSlice(i * 50_000L, 2048));
                total += 2048;
            }
            target.segment().fill((byte) 0x5A);
            MemorySegment whole = target.segment().asSlice(GUARD, total);
            assertThat(NonTemporalCopy.gather(parts, whole)).isEqualTo(total);
            for (int i = 0; i < parts.size(); i++) {
                assertThat(MemorySegment.mismatch(parts.get(i), 0, 2048, whole, i * 2048L, (i + 1) * 2048L))
                        .as("piece %d", i).isEqualTo(-1);
            }
            assertThat(target.segment().get(ValueLayout.JAVA_BYTE, GUARD + total)).isEqualTo((byte) 0x5A);
        }
    }

    @Test
    void everyAlignmentAndLengthCopiesTheSameBytesAndNothingElse() {
        SplittableRandom random = new SplittableRandom(42);
        long[] lengths = {NonTemporalCopy.MIN_BYTES - 1, NonTemporalCopy.MIN_BYTES, NonTemporalCopy.MIN_BYTES + 1,
            20 * 1024, 20 * 1024 + 37, 64 * 1024 - 1, 256 * 1024 + 5, 300_001};
        for (long length : lengths) {
            for (int trial = 0; trial < 6; trial++) {
                long from = random.nextLong(0, 200);
                long to = GUARD + random.nextLong(0, 200);
                target.segment().fill((byte) 0x5A);
                long before = NonTemporalCopy.bytesStreamed();
                NonTemporalCopy.copy(source.segment(), from, target.segment(), to, length);
                assertCopied(from, to, length);
                long streamed = NonTemporalCopy.bytesStreamed() - before;
                if (NonTemporalCopy.available() && length >= NonTemporalCopy.MIN_BYTES) {
                    // all but the bytes before the first destination line and after the last whole pass
                    assertThat(streamed).as("bytes streamed for a copy of %d bytes", length)
                            .isBetween(length - EDGES, length);
                } else {
                    assertThat(streamed).as("bytes streamed for a copy of %d bytes", length).isZero();
                }
            }
        }
    }

    @Test
    void gathersAndScattersOfOddPiecesRoundTrip() {
        SplittableRandom random = new SplittableRandom(7);
        List<MemorySegment> parts = new ArrayList<>();
        long at = 0;
        long total = 0;
        while (total < 400_000) { // pieces from 1 byte to 40 KiB, at odd places in the source
            long len = random.nextLong(1, 40 * 1024);
            at += random.nextLong(0, 300);
            parts.add(source.segment().asSlice(at, len));
            at += len;
            total += len;
        }
        target.segment().fill((byte) 0x5A);
        long before = NonTemporalCopy.bytesStreamed();
        MemorySegment whole = target.segment().asSlice(GUARD + 3, total);
        assertThat(NonTemporalCopy.gather(parts, whole)).isEqualTo(total);
        long offset = 0;
        for (MemorySegment part : parts) {
            assertThat(MemorySegment.mismatch(part, 0, part.byteSize(), whole, offset, offset + part.byteSize())).isEqualTo(-1);
            offset += part.byteSize();
        }
        assertThat(target.segment().get(ValueLayout.JAVA_BYTE, GUARD + 2)).isEqualTo((byte) 0x5A);
        assertThat(target.segment().get(ValueLayout.JAVA_BYTE, GUARD + 3 + total)).isEqualTo((byte) 0x5A);

        scatterBack(whole, parts, total, 11); // over fresh, unaligned pieces of the target's upper half
        long streamed = NonTemporalCopy.bytesStreamed() - before;
        if (NonTemporalCopy.available()) {
            assertThat(streamed).isBetween(2 * (total - EDGES * parts.size()), 2 * total);
        } else {
            assertThat(streamed).isZero();
        }
    }

    @Test
    void memoryOutsideRegisteredRegionsTakesThePlainCopy() {
        long before = NonTemporalCopy.bytesStreamed();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment other = arena.allocate(256 * 1024);
            NonTemporalCopy.copy(source.segment(), 5, other, 0, other.byteSize());
            assertThat(MemorySegment.mismatch(source.segment(), 5, 5 + other.byteSize(), other, 0, other.byteSize())).isEqualTo(-1);
            byte[] heap = new byte[100_000];
            NonTemporalCopy.copy(source.segment(), 0, MemorySegment.ofArray(heap), 0, heap.length);
            assertThat(MemorySegment.mismatch(source.segment(), 0, heap.length, MemorySegment.ofArray(heap), 0, heap.length))
                    .isEqualTo(-1);
            NonTemporalCopy.gather(List.of(other.asSlice(0, 100_000), other.asSlice(100_000, 100_000)),
                    target.segment().asSlice(0, 200_000));
            assertThat(MemorySegment.mismatch(other, 0, 200_000, target.segment(), 0, 200_000)).isEqualTo(-1);
        }
        assertThat(NonTemporalCopy.bytesStreamed()).isEqualTo(before);
    }

    @Test
    void copiesFromTwoAndAHalfMebibytesAreLeftToTheJvm() {
        long length = NonTemporalCopy.JVM_STREAMING_BYTES + 4096;
        try (OffHeapRegion from = OffHeapRegion.allocate("nt-large-source", length, false);
             OffHeapRegion to = OffHeapRegion.allocate("nt-large-target", length, false)) {
            fill(from.segment(), 3);
            long before = NonTemporalCopy.bytesStreamed();
            NonTemporalCopy.copy(from.segment(), 0, to.segment(), 0, length);
            assertThat(from.segment().mismatch(to.segment())).isEqualTo(-1);
            assertThat(NonTemporalCopy.bytesStreamed()).isEqualTo(before);
            // in a gather, the long piece is the JVM's and the short one streams
            to.segment().fill((byte) 0);
            NonTemporalCopy.gather(List.of(from.segment().asSlice(0, NonTemporalCopy.JVM_STREAMING_BYTES),
                    from.segment().asSlice(NonTemporalCopy.JVM_STREAMING_BYTES, 4096)), to.segment());
            assertThat(from.segment().mismatch(to.segment())).isEqualTo(-1);
            assertThat(NonTemporalCopy.bytesStreamed() - before).isEqualTo(NonTemporalCopy.available() ? 4096 : 0);
        }
    }

    @Test
    void closingARegionWaitsOutACopyInFlightAndLaterCopiesFail() throws Exception {
        for (int trial = 0; trial < 20; trial++) {
            OffHeapRegion busy = OffHeapRegion.allocate("nt-busy", SPAN, false);
            java.util.concurrent.CountDownLatch copying = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.atomic.AtomicReference<Throwable> ended = new java.util.concurrent.atomic.AtomicReference<>();
            Thread copier = new Thread(() -> {
                try {
                    while (true) { // copies back to back until the region is gone
                        NonTemporalCopy.copy(source.segment(), 0, busy.segment(), 0, SPAN);
                        copying.countDown();
                    }
                } catch (Throwable t) {
                    ended.set(t);
                }
            });
            copier.start();
            copying.await();
            busy.close(); // must not throw while a copy holds the memory
            copier.join(10_000);
            assertThat(copier.isAlive()).isFalse();
            assertThat(ended.get()).isInstanceOf(IllegalStateException.class);
            assertThat(busy.isOpen()).isFalse();
        }
    }

    @Test
    void anotherThreadThatLearnsOfACopySeesAllItsBytes() throws Exception {
        // the writer streams a fresh pattern, then hands the round over through a queue (a
        // happens-before edge); the reader must see every byte of it, which the store fence at
        // the end of each call guarantees for the weakly ordered non-temporal stores
        long length = 256 * 1024;
        java.util.concurrent.SynchronousQueue<Integer> handOff = new java.util.concurrent.SynchronousQueue<>();
        java.util.concurrent.SynchronousQueue<Integer> checked = new java.util.concurrent.SynchronousQueue<>();
        java.util.concurrent.atomic.AtomicReference<String> wrong = new java.util.concurrent.atomic.AtomicReference<>();
        Thread reader = new Thread(() -> {
            try {
                for (int round = 0; round < 200; round++) {
                    int pattern = handOff.take();
                    MemorySegment t = target.segment();
                    for (long i = 0; i < length; i += 8) {
                        if (t.get(ValueLayout.JAVA_LONG_UNALIGNED, i) != pattern * 0x0101_0101_0101_0101L) {
                            wrong.compareAndSet(null, "round " + round + ": byte " + i + " is stale");
                            break;
                        }
                    }
                    checked.put(round);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        reader.start();
        for (int round = 0; round < 200; round++) {
            int pattern = round + 1; // 1 to 200, a different byte every round
            source.segment().asSlice(0, length).fill((byte) pattern);
            NonTemporalCopy.copy(source.segment(), 0, target.segment(), 0, length);
            handOff.put(pattern);
            assertThat(checked.take()).isEqualTo(round);
        }
        reader.join(10_000);
        assertThat(wrong.get()).isNull();
    }

    @Test
    void overlappingRangesCopyAsMemorySegmentCopyDoes() {
        MemorySegment s = source.segment();
        byte[] expected = new byte[(int) SPAN];
        MemorySegment e = MemorySegment.ofArray(expected);
        MemorySegment.copy(s, 0, e, 0, SPAN);
        MemorySegment.copy(e, 1000, e, 1100, 300_000); // forward overlap, the hard direction
        NonTemporalCopy.copy(s, 1000, s, 1100, 300_000);
        assertThat(s.mismatch(e)).isEqualTo(-1);
    }

    @Test
    void offSettingTakesThePlainCopy() {
        NonTemporalCopy.mode(NonTemporalCopy.Mode.OFF);
        assertThat(NonTemporalCopy.available()).isFalse();
        target.segment().fill((byte) 0x5A);
        long before = NonTemporalCopy.bytesStreamed();
        NonTemporalCopy.copy(source.segment(), 0, target.segment(), GUARD, 200_000);
        assertCopied(0, GUARD, 200_000);
        assertThat(NonTemporalCopy.bytesStreamed()).isEqualTo(before);
    }

    @Test
    void outOfBoundsAndReadOnlyCopiesAreRefusedBeforeAnyByteMoves() {
        target.segment().fill((byte) 0x5A);
        assertThatThrownBy(() -> NonTemporalCopy.copy(source.segment(), SPAN - 100_000, target.segment(), 0, 100_001))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> NonTemporalCopy.gather(List.of(source.segment().asSlice(0, 600_000),
                source.segment().asSlice(0, 600_000)), target.segment().asSlice(0, SPAN - 1)))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(target.segment().get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 0x5A);
        MemorySegment readOnly = target.segment().asReadOnly(); // same region, so it qualifies
        assertThatThrownBy(() -> NonTemporalCopy.copy(source.segment(), 0, readOnly, 0, 100_000))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> NonTemporalCopy.gather(List.of(source.segment().asSlice(0, 100_000)), readOnly))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(target.segment().get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 0x5A);
    }

    @Test
    void theGuardIsInstalledWithTheLoops() {
        assertThat(NonTemporalCopy.guardsMappings()).as(String.valueOf(NonTemporalCopy.routine()))
                .isEqualTo(NonTemporalCopy.available());
        if (NonTemporalCopy.guardsMappings()) {
            assertThat(NonTemporalCopy.routine()).contains("into file mappings too");
        }
    }

    @Test
    void aTruncatedFileUnderTheLoopIsAnInternalErrorAndTheJvmsOwnFaultsStillReachTheJvm(@TempDir Path dir) throws IOException {
        assumeTrue(NonTemporalCopy.guardsMappings(), "no guarded loop on this machine");
        long size = 1 << 20;
        Path file = dir.resolve("truncated");
        try (Arena arena = Arena.ofShared();
             FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            List<MemorySegment> parts = List.of(source.segment().asSlice(0, 64 * 1024), source.segment().asSlice(256 * 1024, 64 * 1024));
            long[] a = new long[8];
            long[] b = new long[8];
            assertThat(NonTemporalCopy.gatherSummed(parts, mapped, a, b)).as("streamed while the file is whole").isEqualTo(128 * 1024);
            assertThat(mapped.asSlice(0, 64 * 1024).mismatch(parts.get(0))).isEqualTo(-1);

            channel.truncate(4096); // every page of the mapping after the first is gone

            for (boolean wide : loops()) {
                assertThatThrownBy(() -> NonTemporalCopy.moveSummedWithLoop(wide, parts, mapped, true, a, b))
                        .as(wide ? "AVX-512" : "AVX2").isInstanceOf(InternalError.class)
                        .hasMessageContaining("fault occurred in an unsafe memory access").hasMessageContaining("gather");
                assertThatThrownBy(() -> NonTemporalCopy.moveSummedWithLoop(wide, parts, mapped, false, a, b))
                        .as(wide ? "AVX-512" : "AVX2").isInstanceOf(InternalError.class)
                        .hasMessageContaining("fault occurred in an unsafe memory access").hasMessageContaining("scatter");
            }
            assertThatThrownBy(() -> NonTemporalCopy.copyPairsSummed(new MemorySegment[] {parts.get(0), parts.get(1)},
                    new MemorySegment[] {mapped.asSlice(0, 64 * 1024), mapped.asSlice(128 * 1024, 64 * 1024)}, 2, new long[32]))
                    .isInstanceOf(InternalError.class).hasMessageContaining("fault occurred in an unsafe memory access")
                    .hasMessageContaining("run of copies");
            // a fault outside the loop goes on to the JVM's handler, which reports its own copy's fault as before
            assertThatThrownBy(() -> MemorySegment.copy(source.segment(), 0, mapped, 8192, 4096)).isInstanceOf(InternalError.class)
                    .hasMessageContaining("fault occurred in an unsafe memory access");
            assertThatThrownBy(() -> mapped.get(ValueLayout.JAVA_LONG, size - 8)).isInstanceOf(InternalError.class);
            // and the loop still copies where nothing faults
            NonTemporalCopy.copy(source.segment(), 0, target.segment(), 0, SPAN / 2);
            assertThat(MemorySegment.mismatch(source.segment(), 0, SPAN / 2, target.segment(), 0, SPAN / 2)).isEqualTo(-1);
        }
    }

    @Test
    void eachLoopAddsTheBytesItMovesToTheChecksumSums() {
        assumeTrue(NonTemporalCopy.guardsMappings(), "no guarded loop on this machine");
        SplittableRandom random = new SplittableRandom(31);
        for (boolean wide : loops()) {
            for (int round = 0; round < 20; round++) {
                target.segment().fill((byte) 0x5A);
                List<MemorySegment> parts = new ArrayList<>();
                long total = 0;
                for (int i = 0, n = random.nextInt(1, 12); i < n; i++) { // whole passes of either loop, anywhere
                    long len = 256L * random.nextInt(1, 40);
                    parts.add(source.segment().asSlice(random.nextLong(0, SPAN - len), len));
                    total += len;
                }
                long[] a = new long[8];
                long[] b = new long[8];
                for (int j = 0; j < 8; j++) { // sums carried in from earlier bytes
                    a[j] = random.nextLong();
                    b[j] = random.nextLong();
                }
                long[] expectA = a.clone();
                long[] expectB = b.clone();
                MemorySegment whole = target.segment().asSlice(64L * random.nextInt(0, 1000), total);
                long moved = total < NonTemporalCopy.MIN_BYTES ? -1 : total;
                assertThat(NonTemporalCopy.moveSummedWithLoop(wide, parts, whole, true, a, b)).isEqualTo(moved);
                if (moved < 0) {
                    continue;
                }
                for (long block = 0; block < total; block += 64) { // the sums as Checksum64 defines them
                    for (int j = 0; j < 8; j++) {
                        expectA[j] += whole.get(ValueLayout.JAVA_LONG_UNALIGNED, block + 8L * j);
                        expectB[j] += expectA[j];
                    }
                }
                String what = (wide ? "AVX-512" : "AVX2") + ", " + parts.size() + " parts of " + total + " bytes";
                assertThat(a).as(what).containsExactly(expectA);
                assertThat(b).as(what).containsExactly(expectB);
                scatterBack(whole, parts, total, 4096);
            }
        }
    }

    /**
     * A run of pairs with their own sums, into a file mapping and back out of it, with each loop:
     * more pairs than one call's entries, a pair longer than one call's bytes (split over entries
     * and calls, its sums carried), pairs of one pass; every pair's bytes land where they should,
     * and every pair's sums give the checksum of its bytes alone.
     */
    @Test
    void aRunOfPairsSummedGivesEveryPairItsOwnChecksumAcrossEntriesAndCalls(@TempDir Path dir) throws IOException {
        assumeTrue(NonTemporalCopy.guardsMappings(), "no guarded loop on this machine");
        long big = NonTemporalCopy.TABLE_CALL_BYTES + 3 * 256 * 1024; // split over two calls
        int small = 1_100; // pairs of 256 bytes: more than one call's 1,024 entries
        long[] lengths = new long[small + 4];
        for (int i = 0; i < small; i++) {
            lengths[i] = 256;
        }
        lengths[small] = 16 * 1024;
        lengths[small + 1] = big;
        lengths[small + 2] = 512;
        lengths[small + 3] = 64 * 1024;
        long total = 0;
        for (long l : lengths) {
            total += l;
        }
        try (Arena arena = Arena.ofShared();
             FileChannel channel = FileChannel.open(dir.resolve("run"), StandardOpenOption.CREATE, StandardOpenOption.READ,
                     StandardOpenOption.WRITE)) {
            MemorySegment privateSide = arena.allocate(total, 64);
            MemorySegment back = arena.allocate(total, 64);
            MemorySegment mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, total + 4096, arena);
            for (boolean wide : loops()) {
                fill(privateSide, wide ? 5 : 6);
                mapped.fill((byte) 0x5A);
                back.fill((byte) 0x5A);
                MemorySegment[] from = new MemorySegment[lengths.length];
                MemorySegment[] into = new MemorySegment[lengths.length];
                MemorySegment[] out = new MemorySegment[lengths.length];
                long at = 0;
                for (int i = 0; i < lengths.length; i++) { // the mapping's pieces in reverse order, one line apart
                    from[i] = privateSide.asSlice(at, lengths[i]);
                    out[i] = back.asSlice(at, lengths[i]);
                    at += lengths[i];
                    into[i] = mapped.asSlice(total - at, lengths[i]);
                }
                long[] sums = new long[16 * lengths.length];
                String what = wide ? "AVX-512" : "AVX2";
                assertThat(NonTemporalCopy.copyPairsSummedWithLoop(wide, from, into, lengths.length, sums)).as(what).isTrue();
                long[] backSums = new long[16 * lengths.length];
                assertThat(NonTemporalCopy.copyPairsSummedWithLoop(wide, into, out, lengths.length, backSums)).as(what).isTrue();
                for (int i = 0; i < lengths.length; i++) {
                    long expected = dev.strata.memory.Checksum64.of(from[i], 0, lengths[i]);
                    assertThat(into[i].mismatch(from[i])).as("%s, pair %d into the mapping", what, i).isEqualTo(-1);
                    assertThat(out[i].mismatch(from[i])).as("%s, pair %d out of it", what, i).isEqualTo(-1);
                    assertThat(dev.strata.memory.Checksum64.ofSums(sums, 16 * i, lengths[i])).as("%s, pair %d's sums", what, i)
                            .isEqualTo(expected);
                    assertThat(dev.strata.memory.Checksum64.ofSums(backSums, 16 * i, lengths[i]))
                            .as("%s, pair %d's sums out of the mapping", what, i).isEqualTo(expected);
                }
                assertThat(mapped.get(ValueLayout.JAVA_BYTE, total)).as("the byte after the last piece").isEqualTo((byte) 0x5A);
            }
        }
    }

    /**
     * A run the loop cannot take whole is refused before any byte moves, so that the caller copies
     * each pair another way; pairs whose lengths differ and too few sums are errors.
     */
    @Test
    void aRunOfPairsSummedThatTheLoopCannotTakeMovesNothing() {
        assumeTrue(NonTemporalCopy.guardsMappings(), "no guarded loop on this machine");
        long pass = NonTemporalCopy.passBytes();
        MemorySegment s = source.segment();
        MemorySegment t = target.segment();
        target.segment().fill((byte) 0x5A);
        try (Arena other = Arena.ofConfined()) {
            MemorySegment elsewhere = other.allocate(4 * pass, 64);
            MemorySegment first = s.asSlice(SPAN / 2, pass); // a pair the loop takes, ahead of the one it does not
            MemorySegment firstInto = t.asSlice(SPAN / 2, pass);
            MemorySegment[][][] refused = { // {sources, destinations}
                {{first, s.asSlice(0, 4 * pass)}, {firstInto, t.asSlice(64 + 8, 4 * pass)}}, // a destination off a cache line
                {{first, s.asSlice(0, 4 * pass + 64)}, {firstInto, t.asSlice(0, 4 * pass + 64)}}, // not whole passes
                {{t.asSlice(0, 4 * pass)}, {t.asSlice(2 * pass, 4 * pass)}}, // overlap
                {{first, elsewhere}, {firstInto, t.asSlice(0, 4 * pass)}}, // a second source in another arena
                {{first, s.asSlice(0, 4 * pass)}, {firstInto, t.asSlice(0, 4 * pass).asReadOnly()}}, // a read-only destination
            };
            for (int k = 0; k < refused.length; k++) {
                MemorySegment[] from = refused[k][0];
                MemorySegment[] into = refused[k][1];
                assertThat(NonTemporalCopy.copyPairsSummed(from, into, from.length, new long[32])).as("case %d", k).isFalse();
                assertThat(t.get(ValueLayout.JAVA_BYTE, SPAN / 2)).as("case %d: the first pair not copied", k).isEqualTo((byte) 0x5A);
                assertThat(t.get(ValueLayout.JAVA_BYTE, 2 * pass)).as("case %d", k).isEqualTo((byte) 0x5A);
                assertThat(t.get(ValueLayout.JAVA_BYTE, 64 + 8)).as("case %d", k).isEqualTo((byte) 0x5A);
            }
        }
        MemorySegment[] from = {s.asSlice(0, pass)};
        MemorySegment[] into = {t.asSlice(0, pass)};
        NonTemporalCopy.mode(NonTemporalCopy.Mode.OFF);
        assertThat(NonTemporalCopy.copyPairsSummed(from, into, 1, new long[16])).as("setting off").isFalse();
        NonTemporalCopy.mode(NonTemporalCopy.Mode.AUTO);
        assertThatThrownBy(() -> NonTemporalCopy.copyPairsSummed(from, into, 1, new long[15]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("15 words");
        assertThatThrownBy(() -> NonTemporalCopy.copyPairsSummed(from, new MemorySegment[] {t.asSlice(0, 2 * pass)}, 1,
                new long[16])).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pair 0");
        assertThat(t.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 0x5A);
        assertThat(NonTemporalCopy.copyPairsSummed(from, into, 1, new long[16])).isTrue();
        assertThat(t.asSlice(0, pass).mismatch(from[0])).isEqualTo(-1);
    }

    /** The loops installed here: the AVX2 loop, and the AVX-512 loop where the processor has it. */
    private static boolean[] loops() {
        return NonTemporalCopy.hasWideLoop() ? new boolean[] {false, true} : new boolean[] {false};
    }

    /**
     * Scatters {@code whole} ({@code total} bytes gathered from {@code parts}) over pieces of the
     * target's upper half, {@code gap} bytes apart, and checks each equals its part and the byte
     * after it is untouched.
     */
    private void scatterBack(MemorySegment whole, List<MemorySegment> parts, long total, long gap) {
        List<MemorySegment> back = new ArrayList<>();
        long place = SPAN / 2;
        for (MemorySegment part : parts) {
            back.add(target.segment().asSlice(place, part.byteSize()));
            place += part.byteSize() + gap;
        }
        assertThat(NonTemporalCopy.scatter(whole, back)).isEqualTo(total);
        for (int i = 0; i < parts.size(); i++) {
            assertThat(parts.get(i).mismatch(back.get(i))).as("piece %d", i).isEqualTo(-1);
            assertThat(target.segment().get(ValueLayout.JAVA_BYTE, back.get(i).address() - target.segment().address()
                    + back.get(i).byteSize())).as("byte after piece %d", i).isEqualTo((byte) 0x5A);
        }
    }

    private void assertCopied(long from, long to, long length) {
        MemorySegment s = source.segment();
        MemorySegment t = target.segment();
        assertThat(MemorySegment.mismatch(s, from, from + length, t, to, to + length)).isEqualTo(-1);
        for (long i = to - GUARD; i < to; i++) {
            assertThat(t.get(ValueLayout.JAVA_BYTE, i)).as("byte %d before the range", i).isEqualTo((byte) 0x5A);
        }
        for (long i = to + length; i < Math.min(to + length + GUARD, SPAN); i++) {
            assertThat(t.get(ValueLayout.JAVA_BYTE, i)).as("byte %d after the range", i).isEqualTo((byte) 0x5A);
        }
    }

    private static void fill(MemorySegment segment, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        for (long i = 0; i < segment.byteSize(); i += 8) {
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong());
        }
    }
}
