package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.strata.cache.kv.EngineKv.Kind;
import dev.strata.memory.Allocator;
import dev.strata.memory.Sizes;
import dev.strata.memory.Tier;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.memory.transfer.TransferResult;
import dev.strata.memory.transfer.TransferStatus;
import dev.strata.testing.Property;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Byte-exact round trips of one block slot: gathered from engine-side KV of every layout kind
 * into one contiguous object in a HOST, a POOL and a DISK tier through the {@link TransferEngine},
 * then scattered back into another slot of the same or another layout kind. Every byte is checked
 * against {@link EngineKv}'s scalar reference, the bytes outside the written elements (padding,
 * other slots, guards) must be untouched, and the number of segments must be the fewest that can
 * spell the block from the engine's memory.
 */
class KvLayoutRoundTripTest {
    private static final AtomicInteger POOLS = new AtomicInteger();

    /** Odd geometries: odd layer, head and dim counts, three widths, block sizes 16 and 13. */
    static final List<KvGeometry> GEOMETRIES = List.of(
            new KvGeometry(3, 5, 7, KvDtype.FP16, 16),
            new KvGeometry(3, 5, 7, KvDtype.FP32, 13),
            new KvGeometry(2, 3, 7, KvDtype.FP8_E4M3, 13),
            new KvGeometry(3, 1, 7, KvDtype.BF16, 16),
            new KvGeometry(1, 2, 5, KvDtype.FP8_E5M2, 16));

    @TempDir
    Path tempDir;

    private Arena arena;
    private TransferEngine engine;
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private Path poolFile;

    @BeforeEach
    void open() {
        arena = Arena.ofShared(); // the transfer engine's workers read and write it
        engine = new TransferEngine();
    }

    @AfterEach
    void close() throws Exception {
        engine.close();
        for (AutoCloseable c : closeables.reversed()) {
            c.close();
        }
        arena.close();
        if (poolFile != null) {
            Files.deleteIfExists(poolFile);
        }
    }

    @Test
    void everyLayoutKindRoundTripsThroughHost() throws Exception {
        Tier host = track(HostTier.create("host", 8 * Sizes.MiB));
        allCombinations(host);
    }

    @Test
    void everyLayoutKindRoundTripsThroughPool() throws Exception {
        allCombinations(pool());
    }

    @Test
    void everyLayoutKindRoundTripsThroughDisk() throws Exception {
        allCombinations(disk());
    }

    @Test
    void randomSparseSelectionsRoundTripThroughEveryTier() {
        Tier[] tiers = {track(HostTier.create("host", 8 * Sizes.MiB)), pool(), disk()};
        Kind[] kinds = Kind.values();
        Property.forAll("kv layout sparse round trip", 60, random -> {
            KvGeometry g = GEOMETRIES.get(random.nextInt(GEOMETRIES.size()));
            Kind from = kinds[random.nextInt(kinds.length)];
            Kind to = kinds[random.nextInt(kinds.length)];
            TokenSelection selection = randomSelection(random, g.blockTokens());
            if (selection.count() == 0) {
                selection = TokenSelection.of(g.blockTokens(), random.nextInt(g.blockTokens()));
            }
            roundTrip(tiers[random.nextInt(tiers.length)], g, from, to, selection, random);
        });
    }

    /** Every geometry × source kind × destination kind, for a full block and three sparse shapes. */
    private void allCombinations(Tier tier) throws Exception {
        SplittableRandom random = new SplittableRandom(0x1A7E_0001L ^ tier.name().hashCode());
        for (KvGeometry g : GEOMETRIES) {
            int bt = g.blockTokens();
            List<TokenSelection> selections = List.of(
                    TokenSelection.all(bt),
                    TokenSelection.of(bt, random.nextInt(bt)),
                    TokenSelection.of(bt, 0, 1, 2, 5, 6, bt - 2, bt - 1), // runs touching both ends
                    randomSelection(random, bt));
            for (Kind from : Kind.values()) {
                for (Kind to : Kind.values()) {
                    for (TokenSelection selection : selections) {
                        if (selection.count() > 0) {
                            roundTrip(tier, g, from, to, selection, random);
                        }
                    }
                }
            }
        }
    }

    /**
     * Gathers slot {@code s} of a {@code from} engine into a fresh object of {@code tier}, checks
     * the object's bytes, scatters it into another slot of a {@code to} engine and checks that
     * exactly the selected elements changed, to the source's values.
     */
    private void roundTrip(Tier tier, KvGeometry g, Kind from, Kind to, TokenSelection selection,
            SplittableRandom random) throws Exception {
        int slots = 3;
        EngineKv src = new EngineKv(arena, g, from, slots, random);
        EngineKv dst = new EngineKv(arena, g, to, slots, random);
        int s = random.nextInt(slots);
        int d = (s + 1 + random.nextInt(slots - 1)) % slots; // another slot, whatever the kind
        String what = g + " " + from + " slot " + s + " -> " + tier.name() + " -> " + to + " slot " + d + ", "
                + selection + " " + positions(selection);

        long[] srcOffsets = src.canonicalOffsets(s, selection);
        byte[] expected = src.bytesAt(srcOffsets);
        List<MemorySegment> gather = segmentsOf(src, s, selection, srcOffsets, what);
        assertThat(src.layout.blockBytes(selection)).as(what).isEqualTo(expected.length);

        long handle = tier.allocate(expected.length);
        assertThat(handle).as(what).isNotEqualTo(Allocator.FULL);
        try {
            TransferResult written = engine.gather(gather, tier, handle).get(30, TimeUnit.SECONDS);
            assertThat(written.status()).as(what).isEqualTo(TransferStatus.COMPLETED);
            assertThat(written.bytes()).as(what).isEqualTo(expected.length);
            MemorySegment object = arena.allocate(expected.length);
            assertThat(tier.read(handle, object)).as(what).isTrue();
            assertBytes(object.toArray(ValueLayout.JAVA_BYTE), expected, what + " (object in tier)");

            long[] dstOffsets = dst.canonicalOffsets(d, selection);
            List<MemorySegment> scatter = segmentsOf(dst, d, selection, dstOffsets, what);
            byte[] before = dst.snapshot();
            TransferResult read = engine.scatter(tier, handle, scatter).get(30, TimeUnit.SECONDS);
            assertThat(read.status()).as(what).isEqualTo(TransferStatus.COMPLETED);
            assertThat(read.bytes()).as(what).isEqualTo(expected.length);

            byte[] after = dst.snapshot();
            byte[] expectedAfter = before.clone();
            for (int i = 0; i < dstOffsets.length; i++) {
                expectedAfter[(int) dstOffsets[i]] = expected[i];
            }
            assertBytes(after, expectedAfter, what + " (destination engine memory)");
        } finally {
            tier.free(handle);
        }
    }

    /**
     * The layout's segments for {@code slot}, checked against the reference: their bytes are,
     * in order, exactly the bytes at {@code offsets}, and there are as few as the memory allows.
     */
    private static List<MemorySegment> segmentsOf(EngineKv kv, int slot, TokenSelection selection, long[] offsets,
            String what) {
        List<MemorySegment> segments = new ArrayList<>();
        kv.layout.segments(slot, selection, segments);
        long base = kv.memory.address();
        int i = 0;
        for (MemorySegment seg : segments) {
            assertThat(seg.byteSize()).as(what + ": empty segment").isPositive();
            long start = seg.address() - base;
            assertThat(start).as(what).isBetween(0L, kv.memory.byteSize() - seg.byteSize());
            for (long b = 0; b < seg.byteSize(); b++, i++) {
                if (i >= offsets.length) {
                    fail(what + ": segments hold more than the " + offsets.length + " bytes of the block");
                }
                if (start + b != offsets[i]) {
                    fail(what + ": canonical byte " + i + " comes from engine offset " + (start + b)
                            + " but the reference puts it at " + offsets[i]);
                }
            }
        }
        assertThat(i).as(what + ": bytes covered by the segments").isEqualTo(offsets.length);
        assertThat(segments).as(what + ": segment count").hasSize(EngineKv.contiguousRuns(offsets));
        return segments;
    }

    private static void assertBytes(byte[] actual, byte[] expected, String what) {
        int mismatch = Arrays.mismatch(actual, expected);
        if (mismatch >= 0) {
            fail(what + ": first differing byte at " + mismatch + " of " + expected.length + " (actual "
                    + (mismatch < actual.length ? actual[mismatch] : "none") + ", expected "
                    + (mismatch < expected.length ? expected[mismatch] : "none") + ")");
        }
    }

    static TokenSelection randomSelection(SplittableRandom random, int blockTokens) {
        int[] picked = random.ints(random.nextInt(blockTokens + 1), 0, blockTokens).toArray();
        return TokenSelection.of(blockTokens, picked);
    }

    static String positions(TokenSelection selection) {
        StringBuilder sb = new StringBuilder("{");
        for (int t = selection.nextSelected(0); t >= 0; t = selection.nextSelected(t + 1)) {
            sb.append(sb.length() > 1 ? "," : "").append(t);
        }
        return sb.append('}').toString();
    }

    private <T extends AutoCloseable> T track(T c) {
        closeables.add(c);
        return c;
    }

    private Tier pool() {
        Path dir = Path.of("/dev/shm");
        if (!Files.isDirectory(dir) || !Files.isWritable(dir)) {
            dir = tempDir;
        }
        String name = "test-kvlayout-" + ProcessHandle.current().pid() + "-" + POOLS.incrementAndGet();
        poolFile = dir.resolve("strata-" + name + ".pool");
        return track(PoolTier.open(PoolConfig.builder(name).path(poolFile).capacity(8 * Sizes.MiB)
                .chunkSize(16 * Sizes.KiB).conclude()));
    }

    private Tier disk() {
        return track(DiskTier.open(DiskTierOptions.in(tempDir.resolve("disk"), 32 * Sizes.MiB).name("disk")
                .stagingBuffers(2).stagingBufferSize(256 * Sizes.KiB).deleteOnClose(true)));
    }
}
