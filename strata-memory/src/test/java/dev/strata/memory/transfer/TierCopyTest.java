package dev.strata.memory.transfer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Sizes;
import dev.strata.memory.Tier;
import dev.strata.memory.TierStats;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.transfer.TierCopy.Route;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The one copy path over real tiers: every pairing of plain (HOST, DEVICE) and framed (POOL,
 * DISK) tiers moves the bytes, leaves a framed destination with a frame that verifies, meters
 * the plain sides, and refuses to pass on a corrupted source frame.
 */
class TierCopyTest {

    private static final long STAGING = 512 * 1024; // bytes of one bounce buffer

    @TempDir
    Path dir;

    private HostTier host;
    private DeviceTier device;
    private PoolTier pool;
    private DiskTier disk;
    private StagingPool staging;
    private TierCopy copy;
    private final SplittableRandom random = new SplittableRandom(2026);

    @BeforeEach
    void open() {
        host = HostTier.create("copy-host", 8 * Sizes.MiB);
        device = DeviceTier.cpu("copy-device", 8 * Sizes.MiB);
        pool = PoolTier.open(PoolConfig.builder("copy-test").paths(List.of(dir.resolve("copy.pool")))
                .capacity(8 * Sizes.MiB).chunkSize(4 * Sizes.KiB).conclude());
        disk = DiskTier.open(DiskTierOptions.in(dir.resolve("disk"), 8 * Sizes.MiB).name("copy-disk")
                .stagingBufferSize(64 * 1024).deleteOnClose(true));
        staging = new StagingPool("copy-test-staging", 2, STAGING, OffHeapRegion.PAGE, StagingPool.Reserve.ON_FIRST_BORROW);
        copy = new TierCopy(staging);
    }

    @AfterEach
    void close() {
        staging.close();
        disk.close();
        pool.close();
        device.close();
        host.close();
    }

    private List<Tier> plainTiers() {
        return List.of(host, device);
    }

    private List<Tier> framedTiers() {
        return List.of(pool, disk);
    }

    /** Stores random bytes of {@code length} in a new allocation of {@code tier}; returns the handle. */
    private long store(Tier tier, byte[] bytes) {
        long h = tier.allocate(bytes.length);
        tier.write(h, MemorySegment.ofArray(bytes));
        return h;
    }

    private byte[] randomBytes(int length) {
        byte[] b = new byte[length];
        random.nextBytes(b);
        return b;
    }

    /** The object in {@code tier} at {@code handle}, read through the tier (a framed tier verifies its checksum). */
    private static byte[] readBack(Tier tier, long handle, int length) {
        byte[] back = new byte[length];
        assertThat(tier.read(handle, MemorySegment.ofArray(back))).as("object in '%s' is readable", tier.name()).isTrue();
        return back;
    }

    /** Copies an object of each odd and round size from {@code src} to {@code dst} and checks every byte. */
    private void copiesEveryByte(Tier src, Tier dst, Route expected) {
        assertThat(Route.of(src, dst)).as("%s -> %s", src.name(), dst.name()).isEqualTo(expected);
        for (int length : new int[] {1, 4095, 4096, 77_777, (int) STAGING}) {
            byte[] bytes = randomBytes(length);
            long s = store(src, bytes);
            long d = dst.allocate(length);
            assertThat(copy.copy(src, s, dst, d, length)).as("%s -> %s, %d bytes", src.name(), dst.name(), length)
                    .isEqualTo(length);
            assertThat(readBack(dst, d, length)).as("%s -> %s, %d bytes", src.name(), dst.name(), length).isEqualTo(bytes);
            src.free(s);
            dst.free(d);
        }
    }

    @Test
    void plainToPlainCopiesBetweenTheViewsAndMetersBothSides() {
        copiesEveryByte(host, device, Route.PLAIN_TO_PLAIN);
        copiesEveryByte(device, host, Route.PLAIN_TO_PLAIN);
        copiesEveryByte(host, host, Route.PLAIN_TO_PLAIN);

        TierStats hostBefore = host.stats();
        TierStats deviceBefore = device.stats();
        byte[] bytes = randomBytes(10_000);
        long s = store(host, bytes);
        long d = device.allocate(bytes.length);
        long hostWrites = host.stats().writeOps();
        assertThat(copy.copy(host, s, device, d, bytes.length)).isEqualTo(bytes.length);
        assertThat(host.stats().readOps() - hostBefore.readOps()).as("source view read metered once").isEqualTo(1);
        assertThat(host.stats().writeOps()).as("the copy writes nothing into the source").isEqualTo(hostWrites);
        assertThat(device.stats().writeOps() - deviceBefore.writeOps()).as("destination view write metered once").isEqualTo(1);
        assertThat(device.stats().bytesWritten() - deviceBefore.bytesWritten()).isEqualTo(bytes.length);
        assertThat(staging.isReserved()).as("no bounce buffer between plain tiers").isFalse();
    }

    @Test
    void plainToFramedWritesAFrameThatVerifies() {
        for (Tier src : plainTiers()) {
            for (Tier dst : framedTiers()) {
                copiesEveryByte(src, dst, Route.PLAIN_TO_FRAMED);
            }
        }
        assertThat(staging.isReserved()).as("no bounce buffer out of plain memory").isFalse();
    }

    @Test
    void framedToPlainVerifiesTheSourceFrame() {
        for (Tier src : framedTiers()) {
            for (Tier dst : plainTiers()) {
                copiesEveryByte(src, dst, Route.FRAMED_TO_PLAIN);
            }
        }
        assertThat(staging.isReserved()).as("no bounce buffer into plain memory").isFalse();
    }

    @Test
    void framedToFramedGoesThroughOneBounceBufferAndGivesItBack() {
        copiesEveryByte(pool, disk, Route.FRAMED_TO_FRAMED);
        copiesEveryByte(disk, pool, Route.FRAMED_TO_FRAMED);
        copiesEveryByte(pool, pool, Route.FRAMED_TO_FRAMED);
        assertThat(staging.isReserved()).isTrue();
        assertThat(staging.lent()).as("every bounce buffer given back").isZero();
    }

    @Test
    void aCorruptedPoolFrameIsDetectedAndNothingIsWritten() {
        byte[] bytes = randomBytes(50_000);
        long s = store(pool, bytes);
        MemorySegment payload = pool.segment(s, 0, bytes.length);
        payload.set(ValueLayout.JAVA_BYTE, 31_337, (byte) (bytes[31_337] ^ 0x04)); // one bit flipped behind the frame's back

        for (Tier dst : List.of(host, device, disk)) {
            long d = dst.allocate(bytes.length);
            assertThatThrownBy(() -> copy.copy(pool, s, dst, d, bytes.length)).as("pool -> %s", dst.name())
                    .isInstanceOf(CorruptObjectException.class).hasMessageContaining("handle " + s)
                    .hasMessageContaining("'" + pool.name() + "'");
            if (dst == disk) {
                assertThat(disk.read(d, MemorySegment.ofArray(new byte[bytes.length])))
                        .as("a framed destination is not written from a corrupt source").isFalse();
            }
            dst.free(d);
        }
        assertThat(staging.lent()).as("the bounce buffer comes back after a corrupt read").isZero();
    }

    @Test
    void aCorruptedDiskFrameIsDetectedAndNothingIsWritten() throws IOException {
        byte[] bytes = randomBytes(70_001);
        long s = store(disk, bytes);
        DiskTier.Location at = disk.location(s);
        try (FileChannel ch = FileChannel.open(at.file(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, at.payloadOffset() + 12_345);
            one.put(0, (byte) (one.get(0) ^ 0x10)).rewind();
            ch.write(one, at.payloadOffset() + 12_345);
            ch.force(true);
        }
        for (Tier dst : List.of(host, device, pool)) {
            long d = dst.allocate(bytes.length);
            assertThatThrownBy(() -> copy.copy(disk, s, dst, d, bytes.length)).as("disk -> %s", dst.name())
                    .isInstanceOf(CorruptObjectException.class).hasMessageContaining("handle " + s)
                    .hasMessageContaining("'" + disk.name() + "'");
            if (dst == pool) {
                assertThat(pool.read(d, MemorySegment.ofArray(new byte[bytes.length])))
                        .as("a framed destination is not written from a corrupt source").isFalse();
            }
            dst.free(d);
        }
        assertThat(staging.lent()).isZero();
    }

    @Test
    void aMissingSourceIsNotFoundOnEveryRoute() {
        List<Tier> all = new ArrayList<>(plainTiers());
        all.addAll(framedTiers());
        for (Tier src : all) {
            long missing = src.allocate(5000);
            long[] landing = new long[all.size()];
            for (int i = 0; i < landing.length; i++) {
                landing[i] = all.get(i).allocate(5000); // before the free below, so none reuses the missing handle
            }
            if (src.isPlainMemory()) {
                src.free(missing); // a freed plain allocation holds no object
            } // a framed allocation never written holds none either
            for (int i = 0; i < landing.length; i++) {
                Tier dst = all.get(i);
                assertThat(copy.copy(src, missing, dst, landing[i], 5000)).as("%s -> %s", src.name(), dst.name())
                        .isEqualTo(TierCopy.NOT_FOUND);
                if (!dst.isPlainMemory()) {
                    assertThat(dst.read(landing[i], MemorySegment.ofArray(new byte[5000]))).as("nothing written").isFalse();
                }
                dst.free(landing[i]);
            }
            if (!src.isPlainMemory()) {
                src.free(missing);
            }
        }
        assertThat(staging.lent()).isZero();
    }

    @Test
    void misuseNamesTheSizesAndTheTiers() {
        long s = store(pool, randomBytes((int) STAGING + 1));
        long d = disk.allocate(STAGING + 1);
        assertThatThrownBy(() -> copy.copy(pool, s, disk, d, STAGING + 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(STAGING + 1)).hasMessageContaining(String.valueOf(STAGING));
        assertThatThrownBy(() -> TierCopy.direct().copy(pool, s, disk, d, STAGING + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + pool.name() + "'").hasMessageContaining("'" + disk.name() + "'");
        assertThatThrownBy(() -> copy.copy(pool, s, disk, d, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got 0");
        long h = host.allocate(100);
        long dev = device.allocate(100);
        long tooLong = host.allocationSize(h) + 1;
        assertThatThrownBy(() -> copy.copy(host, h, device, dev, tooLong)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(tooLong)).hasMessageContaining("'" + host.name() + "'");
    }

    /**
     * A run of copies between plain tiers gives each object the result a copy of its own gives:
     * bytes moved, not found, or the error it met (the others still copied); a framed side is
     * refused before anything moves.
     */
    @Test
    void aRunOfCopiesGivesEachObjectItsOwnResult() {
        int[] sizes = {16 * 1024, 5_000, 16 * 1024, 100, 16 * 1024};
        long[] src = new long[sizes.length];
        long[] dst = new long[sizes.length];
        long[] lengths = new long[sizes.length];
        List<byte[]> data = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            byte[] bytes = randomBytes(sizes[i]);
            data.add(bytes);
            src[i] = store(host, bytes);
            dst[i] = device.allocate(sizes[i]);
            lengths[i] = sizes[i];
        }
        host.free(src[1]); // not found
        lengths[3] = 0; // invalid
        long[] moved = new long[sizes.length];
        Throwable[] failures = new Throwable[sizes.length];
        copy.copyRunUnmetered(host, src, device, dst, lengths, sizes.length, moved, failures);
        assertThat(moved).containsExactly(16 * 1024, TierCopy.NOT_FOUND, 16 * 1024, 0, 16 * 1024);
        assertThat(failures[3]).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 0")
                .hasMessageContaining("'" + host.name() + "'");
        assertThat(failures).filteredOn(java.util.Objects::nonNull).hasSize(1);
        for (int i : new int[] {0, 2, 4}) {
            assertThat(device.segment(dst[i], 0, sizes[i]).toArray(ValueLayout.JAVA_BYTE)).as("object %d", i).isEqualTo(data.get(i));
        }
        long p = store(pool, data.get(3));
        long d = disk.allocate(100);
        assertThatThrownBy(() -> copy.copyRunUnmetered(pool, new long[] {p}, disk, new long[] {d}, new long[] {100}, 1,
                new long[1], new Throwable[1])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + pool.name() + "'").hasMessageContaining("'" + disk.name() + "'")
                .hasMessageContaining("run many to a call");
        assertThat(disk.read(d, MemorySegment.ofArray(new byte[100]))).as("nothing written").isFalse();
    }

    /**
     * Runs of copies into and out of the POOL give each object what its own copy gives: written
     * objects are framed and verify, read objects are checked; a source not found, an allocation
     * that is not there or too small, an object not published, a destination of another length and
     * a corrupted frame are each that object's own result, and the others still copy. The same with
     * streaming off, where the pool takes each object in turn.
     */
    @Test
    void runsIntoAndOutOfThePoolFrameAndVerifyEachObjectAsItsOwnCopyWould() {
        for (NonTemporalCopy.Mode mode : NonTemporalCopy.Mode.values()) {
            NonTemporalCopy.mode(mode);
            try {
                int n = 7;
                int size = 16 * 1024;
                long[] src = new long[n];
                long[] dst = new long[n];
                long[] lengths = new long[n];
                List<byte[]> data = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    byte[] bytes = randomBytes(size);
                    data.add(bytes);
                    src[i] = store(host, bytes);
                    dst[i] = pool.allocate(i == 4 ? 4096 : size); // 4: an allocation too small
                    lengths[i] = size;
                }
                host.free(src[1]); // not found
                pool.free(dst[3]); // not allocated
                long streamedBefore = NonTemporalCopy.bytesStreamed();
                long[] moved = new long[n];
                Throwable[] failures = new Throwable[n];
                copy.copyRunUnmetered(host, src, pool, dst, lengths, n, moved, failures);
                String what = "into the pool, " + mode;
                assertThat(moved).as(what).containsExactly(size, TierCopy.NOT_FOUND, size, 0, 0, size, size);
                assertThat(failures[3]).as(what).isInstanceOf(IllegalStateException.class).hasMessageContaining("not allocated");
                assertThat(failures[4]).as(what).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not fit");
                assertThat(failures).as(what).filteredOn(java.util.Objects::nonNull).hasSize(2);
                for (int i : new int[] {0, 2, 5, 6}) {
                    assertThat(readBack(pool, dst[i], size)).as("%s, object %d", what, i).isEqualTo(data.get(i));
                }
                if (mode == NonTemporalCopy.Mode.AUTO && NonTemporalCopy.guardsMappings()) {
                    assertThat(NonTemporalCopy.bytesStreamed() - streamedBefore).as("streamed").isGreaterThanOrEqualTo(4L * size);
                }

                // back out: 0 and 6 whole, 2 corrupted, 5 asked for with another length, 3 never published
                dst[3] = pool.allocate(size);
                MemorySegment frame = pool.segment(dst[2], 0, size);
                frame.set(ValueLayout.JAVA_BYTE, 9_000, (byte) (data.get(2)[9_000] ^ 0x10));
                long[] back = new long[n];
                for (int i = 0; i < n; i++) {
                    back[i] = host.allocate(size);
                }
                long[] backLengths = lengths.clone();
                backLengths[5] = size - 256;
                long[] pooled = {dst[0], dst[2], dst[3], dst[5], dst[6]};
                long[] into = {back[0], back[2], back[3], back[5], back[6]};
                long[] wanted = {size, size, size, size - 256, size};
                long[] out = new long[5];
                Throwable[] outFailures = new Throwable[5];
                copy.copyRunUnmetered(pool, pooled, host, into, wanted, 5, out, outFailures);
                what = "out of the pool, " + mode;
                assertThat(out).as(what).containsExactly(size, 0, TierCopy.NOT_FOUND, 0, size);
                assertThat(outFailures[1]).as(what).isInstanceOf(CorruptObjectException.class)
                        .hasMessageContaining("handle " + dst[2]).hasMessageContaining("'" + pool.name() + "'");
                assertThat(outFailures[3]).as(what).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("does not match object of " + size);
                assertThat(outFailures).as(what).filteredOn(java.util.Objects::nonNull).hasSize(2);
                assertThat(host.segment(back[0], 0, size).toArray(ValueLayout.JAVA_BYTE)).as(what).isEqualTo(data.get(0));
                assertThat(host.segment(back[6], 0, size).toArray(ValueLayout.JAVA_BYTE)).as(what).isEqualTo(data.get(6));
                for (int i = 0; i < n; i++) {
                    if (i != 1) {
                        host.free(src[i]);
                    }
                    host.free(back[i]);
                    pool.free(dst[i]);
                }
            } finally {
                NonTemporalCopy.mode(NonTemporalCopy.Mode.AUTO);
            }
        }
    }

    @Test
    void gatherAndScatterOfViewsKeepTheOrderOfTheParts() {
        byte[] bytes = randomBytes(9000);
        MemorySegment whole = MemorySegment.ofArray(bytes);
        List<MemorySegment> parts = List.of(MemorySegment.ofArray(new byte[1]), MemorySegment.ofArray(new byte[4999]),
                MemorySegment.ofArray(new byte[4000]));
        assertThat(TierCopy.scatterView(whole, parts)).isEqualTo(9000);
        assertThat(parts.get(1).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(java.util.Arrays.copyOfRange(bytes, 1, 5000));
        byte[] joined = new byte[9000];
        assertThat(TierCopy.gatherView(parts, MemorySegment.ofArray(joined))).isEqualTo(9000);
        assertThat(joined).isEqualTo(bytes);
    }
}
