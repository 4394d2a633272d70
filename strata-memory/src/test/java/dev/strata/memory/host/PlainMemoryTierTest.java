package dev.strata.memory.host;

import dev.strata.memory.Allocator;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;
import dev.strata.memory.device.DeviceTier;
import dev.strata.testing.Property;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Behaviour every plain-memory tier shares: HOST (best fit and slab) and DEVICE on the CPU backend. */
class PlainMemoryTierTest {

    static final long CAPACITY = 1L << 20; // bytes per tier under test
    static final long SLAB_BLOCK = 24_000;

    static Stream<Arguments> tiers() {
        return Stream.of(
                Arguments.of("host best-fit", (Supplier<PlainMemoryTier>) () -> HostTier.create("t-host", CAPACITY), TierKind.HOST, 0L),
                Arguments.of("host slab", (Supplier<PlainMemoryTier>) () -> HostTier.slab("t-slab", CAPACITY, SLAB_BLOCK), TierKind.HOST, SLAB_BLOCK),
                Arguments.of("device cpu", (Supplier<PlainMemoryTier>) () -> DeviceTier.cpu("t-dev", CAPACITY), TierKind.DEVICE, 0L));
    }

    static void fill(MemorySegment s, SplittableRandom random) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (random.nextInt(255) + 1));
        }
    }

    static long sizeFor(SplittableRandom random, long maxBlock) {
        long max = maxBlock > 0 ? maxBlock : 50_000;
        return random.nextLong(1, max + 1);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("tiers")
    void randomRoundTripsAreByteExactAndStayWithinCapacity(String label, Supplier<PlainMemoryTier> factory, TierKind kind, long block) {
        Property.forAll("round trips " + label, 6, random -> {
            try (PlainMemoryTier tier = factory.get(); Arena arena = Arena.ofConfined()) {
                assertThat(tier.kind()).isEqualTo(kind);
                assertThat(tier.isPlainMemory()).isTrue();
                assertThat(tier.isAddressable()).isTrue();
                Map<Long, MemorySegment> expected = new HashMap<>();
                List<Long> handles = new ArrayList<>();
                long written = 0;
                long read = 0;
                for (int step = 0; step < 120; step++) {
                    int op = random.nextInt(10);
                    if (handles.isEmpty() || op < 5) {
                        long size = sizeFor(random, block);
                        long h = tier.allocate(size);
                        if (h == Allocator.FULL) {
                            continue;
                        }
                        assertThat(tier.allocationSize(h)).isGreaterThanOrEqualTo(size);
                        MemorySegment data = arena.allocate(size);
                        fill(data, random);
                        tier.write(h, data);
                        written += size;
                        expected.put(h, data);
                        handles.add(h);
                    } else if (op < 8) {
                        long h = handles.get(random.nextInt(handles.size()));
                        MemorySegment want = expected.get(h);
                        MemorySegment got = arena.allocate(want.byteSize());
                        assertThat(tier.read(h, got)).isTrue();
                        read += want.byteSize();
                        assertThat(got.mismatch(want)).as("byte-exact read of handle %d", h).isEqualTo(-1);
                        assertThat(tier.segment(h, 0, want.byteSize()).mismatch(want)).isEqualTo(-1);
                    } else {
                        long h = handles.remove(random.nextInt(handles.size()));
                        expected.remove(h);
                        tier.free(h);
                    }
                    assertThat(tier.used()).isLessThanOrEqualTo(tier.capacity());
                    assertThat(tier.allocationCount()).isEqualTo(handles.size());
                }
                TierStats stats = tier.stats();
                assertThat(stats.bytesWritten()).isEqualTo(written);
                assertThat(stats.bytesRead()).isEqualTo(read);
                assertThat(stats.allocations()).isEqualTo(handles.size());
                for (long h : handles) {
                    tier.free(h);
                }
                assertThat(tier.used()).isZero();
            }
        });
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("tiers")
    void gatherAndScatterRoundTrip(String label, Supplier<PlainMemoryTier> factory, TierKind kind, long block) {
        Property.forAll("gather scatter " + label, 5, random -> {
            try (PlainMemoryTier tier = factory.get(); Arena arena = Arena.ofConfined()) {
                int parts = random.nextInt(1, 40);
                long limit = block > 0 ? block : 200_000;
                List<MemorySegment> sources = new ArrayList<>();
                long total = 0;
                for (int i = 0; i < parts; i++) {
                    long len = random.nextLong(1, Math.max(2, limit / parts));
                    MemorySegment s = arena.allocate(len);
                    fill(s, random);
                    sources.add(s);
                    total += len;
                }
                long h = tier.allocate(total);
                assertThat(h).isNotEqualTo(Allocator.FULL);
                tier.gatherWrite(h, sources);
                MemorySegment whole = arena.allocate(total);
                assertThat(tier.read(h, whole)).isTrue();
                long at = 0;
                for (MemorySegment s : sources) {
                    assertThat(whole.asSlice(at, s.byteSize()).mismatch(s)).isEqualTo(-1);
                    at += s.byteSize();
                }
                List<MemorySegment> outs = new ArrayList<>();
                for (MemorySegment s : sources) {
                    outs.add(arena.allocate(s.byteSize()));
                }
                assertThat(tier.scatterRead(h, outs)).isTrue();
                for (int i = 0; i < parts; i++) {
                    assertThat(outs.get(i).mismatch(sources.get(i))).as("part %d", i).isEqualTo(-1);
                }
                tier.free(h);
            }
        });
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("tiers")
    void misuseNamesTheValues(String label, Supplier<PlainMemoryTier> factory, TierKind kind, long block) {
        try (PlainMemoryTier tier = factory.get(); Arena arena = Arena.ofConfined()) {
            long h = tier.allocate(1000);
            long size = tier.allocationSize(h);
            MemorySegment tooBig = arena.allocate(size + 1);
            assertThatThrownBy(() -> tier.write(h, tooBig)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(tier.name()).hasMessageContaining(String.valueOf(size + 1))
                    .hasMessageContaining(String.valueOf(size)).hasMessageContaining(String.valueOf(h));
            assertThatThrownBy(() -> tier.read(h, tooBig)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(String.valueOf(size + 1));
            assertThatThrownBy(() -> tier.gatherWrite(h, List.of(arena.allocate(size), arena.allocate(3))))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(String.valueOf(size + 3));
            assertThatThrownBy(() -> tier.segment(h, 10, size)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("10").hasMessageContaining(String.valueOf(size));
            assertThatThrownBy(() -> tier.segment(h, -1, 5)).isInstanceOf(IllegalArgumentException.class);
            long notAllocated = h + 4096 * 5;
            assertThatThrownBy(() -> tier.write(notAllocated, arena.allocate(4)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("handle " + notAllocated).hasMessageContaining("'" + tier.name() + "'");
            assertThat(tier.read(notAllocated, arena.allocate(4))).as("missing object reads false").isFalse();
            assertThat(tier.scatterRead(notAllocated, List.of(arena.allocate(4)))).isFalse();
            assertThatThrownBy(() -> tier.allocate(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0");
            tier.free(h);
            assertThatThrownBy(() -> tier.free(h)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("handle " + h).hasMessageContaining(tier.name());
            assertThat(tier.read(h, arena.allocate(4))).as("freed object reads false").isFalse();
            tier.close();
            assertThatThrownBy(() -> tier.allocate(10)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("tiers")
    void closeLeavesNothingInTheAudit(String label, Supplier<PlainMemoryTier> factory, TierKind kind, long block) {
        long before = MemoryAudit.liveRegions().size();
        PlainMemoryTier tier = factory.get();
        assertThat(MemoryAudit.liveRegions()).hasSize((int) before + 1);
        assertThat(MemoryAudit.report()).contains(tier.name());
        tier.close();
        tier.close(); // a second close does nothing
        assertThat(MemoryAudit.liveRegions()).hasSize((int) before);
        assertThat(MemoryAudit.liveRegions()).noneMatch(r -> r.name().endsWith(":" + tier.name()));
    }
}
