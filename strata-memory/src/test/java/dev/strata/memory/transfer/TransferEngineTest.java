package dev.strata.memory.transfer;

import dev.strata.memory.Allocator;
import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.testing.Property;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TransferEngineTest {

    private Arena arena;
    private final List<Tier> tiers = new ArrayList<>();

    @BeforeEach
    void open() {
        arena = Arena.ofShared();
    }

    @AfterEach
    void closeAll() {
        for (Tier t : tiers) {
            t.close();
        }
        arena.close();
    }

    private <T extends Tier> T track(T tier) {
        tiers.add(tier);
        return tier;
    }

    static void fill(MemorySegment s, SplittableRandom random) {
        long i = 0;
        for (; i + 8 <= s.byteSize(); i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong() | 0x0101_0101_0101_0101L);
        }
        for (; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (random.nextInt(255) + 1));
        }
    }

    private MemorySegment randomBytes(long size, SplittableRandom random) {
        MemorySegment s = arena.allocate(size);
        fill(s, random);
        return s;
    }

    private static MemorySegment contents(Tier tier, long handle, long length, Arena arena) {
        MemorySegment out = arena.allocate(length);
        assertThat(tier.read(handle, out)).isTrue();
        return out;
    }

    private static TransferResult done(CompletableFuture<TransferResult> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    private static LinkStats stats(TransferEngine engine, String name) {
        return engine.linkStats().stream().filter(s -> s.name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no link " + name + " in " + engine.linkStats()));
    }

    @Test
    void randomCopiesAmongTiersAreByteExactAndCountedExactly() {
        Property.forAll("engine random copies", 4, random -> {
            HostTier host = track(HostTier.create("host", 8L << 20));
            DeviceTier device = track(DeviceTier.cpu("device", 8L << 20));
            WrappedTier opaque = track(new WrappedTier("opaque", TierKind.POOL, false, HostTier.create("opaque-inner", 8L << 20)));
            List<Tier> all = List.of(host, device, opaque);
            record Obj(Tier tier, long handle, MemorySegment bytes) { }
            List<Obj> objects = new ArrayList<>();
            Map<String, long[]> expected = new HashMap<>(); // link -> {ops, bytes}
            try (TransferEngine engine = new TransferEngine()) {
                for (int step = 0; step < 150; step++) {
                    if (objects.size() < 4 || random.nextInt(4) == 0) {
                        Tier t = all.get(random.nextInt(all.size()));
                        long size = random.nextLong(1, 300_000);
                        long h = t.allocate(size);
                        if (h == Allocator.FULL) {
                            continue;
                        }
                        MemorySegment bytes = randomBytes(size, random);
                        t.write(h, bytes);
                        objects.add(new Obj(t, h, bytes));
                        continue;
                    }
                    Obj src = objects.get(random.nextInt(objects.size()));
                    Tier dstTier = all.get(random.nextInt(all.size()));
                    if (dstTier == src.tier()) {
                        dstTier = all.get((all.indexOf(dstTier) + 1) % all.size());
                    }
                    long len = src.bytes().byteSize();
                    long dh = dstTier.allocate(len);
                    if (dh == Allocator.FULL) {
                        Obj victim = objects.remove(0);
                        victim.tier().free(victim.handle());
                        continue;
                    }
                    TransferResult r = done(engine.copy(src.tier(), src.handle(), dstTier, dh, len));
                    assertThat(r.status()).isEqualTo(TransferStatus.COMPLETED);
                    assertThat(r.bytes()).isEqualTo(len);
                    assertThat(r.nanosQueued()).isNotNegative();
                    assertThat(r.nanosRun()).isNotNegative();
                    assertThat(contents(dstTier, dh, len, arena).mismatch(src.bytes()))
                            .as("copy %s -> %s of %d bytes", src.tier().name(), dstTier.name(), len).isEqualTo(-1);
                    long[] e = expected.computeIfAbsent(src.tier().name() + "->" + dstTier.name(), k -> new long[2]);
                    e[0]++;
                    e[1] += len;
                    objects.add(new Obj(dstTier, dh, src.bytes()));
                }
                for (Map.Entry<String, long[]> e : expected.entrySet()) {
                    LinkStats s = stats(engine, e.getKey());
                    assertThat(s.operations()).as("ops on %s", e.getKey()).isEqualTo(e.getValue()[0]);
                    assertThat(s.completed()).isEqualTo(e.getValue()[0]);
                    assertThat(s.bytes()).as("bytes on %s", e.getKey()).isEqualTo(e.getValue()[1]);
                    assertThat(s.failed()).isZero();
                    assertThat(s.p50Nanos()).isPositive();
                    assertThat(s.p999Nanos()).isGreaterThanOrEqualTo(s.p99Nanos()).isGreaterThanOrEqualTo(s.p50Nanos());
                    assertThat(s.busyGBps()).isPositive();
                    assertThat(s.wallGBps()).isPositive();
                    assertThat(s.queueDepth()).isZero();
                    assertThat(s.maxQueueDepth()).isGreaterThanOrEqualTo(1);
                }
                assertThat(engine.linkStats()).hasSize(expected.size());
            }
            for (Obj o : objects) {
                o.tier().free(o.handle());
            }
            for (Tier t : all) {
                assertThat(t.used()).isZero();
                t.close();
            }
            tiers.clear();
        });
    }

    @Test
    void gatherAndScatterRoundTripBetweenDeviceChunksAndOneObject() throws Exception {
        SplittableRandom random = new SplittableRandom(42);
        DeviceTier device = track(DeviceTier.cpu("device", 16L << 20));
        HostTier host = track(HostTier.create("host", 16L << 20));
        WrappedTier opaque = track(new WrappedTier("disk0", TierKind.DISK, false, HostTier.create("disk-inner", 16L << 20)));
        try (TransferEngine engine = new TransferEngine()) {
            for (boolean oddSizes : new boolean[] {false, true}) {
                int chunks = 128;
                List<MemorySegment> sources = new ArrayList<>();
                List<Long> handles = new ArrayList<>();
                long total = 0;
                for (int i = 0; i < chunks; i++) {
                    long len = oddSizes ? random.nextLong(1, 40_000) : 20 * 1024;
                    long h = device.allocate(len);
                    device.write(h, randomBytes(len, random));
                    handles.add(h);
                    sources.add(device.segment(h, 0, len));
                    total += len;
                }
                for (Tier target : List.of(host, opaque)) {
                    long object = target.allocate(total);
                    TransferResult g = done(engine.gather(sources, target, object));
                    assertThat(g.status()).isEqualTo(TransferStatus.COMPLETED);
                    assertThat(g.bytes()).isEqualTo(total);
                    MemorySegment whole = contents(target, object, total, arena);
                    long at = 0;
                    for (MemorySegment s : sources) {
                        assertThat(whole.asSlice(at, s.byteSize()).mismatch(s)).isEqualTo(-1);
                        at += s.byteSize();
                    }
                    List<MemorySegment> back = new ArrayList<>();
                    List<Long> backHandles = new ArrayList<>();
                    for (MemorySegment s : sources) {
                        long h = device.allocate(s.byteSize());
                        backHandles.add(h);
                        back.add(device.segment(h, 0, s.byteSize()));
                    }
                    TransferResult sc = done(engine.scatter(target, object, back));
                    assertThat(sc.bytes()).isEqualTo(total);
                    for (int i = 0; i < chunks; i++) {
                        assertThat(back.get(i).mismatch(sources.get(i))).as("chunk %d via %s", i, target.name()).isEqualTo(-1);
                    }
                    backHandles.forEach(device::free);
                    target.free(object);
                }
                handles.forEach(device::free);
            }
            assertThat(stats(engine, "memory->host").operations()).isEqualTo(2);
            assertThat(stats(engine, "disk0->memory").operations()).isEqualTo(2);
            assertThat(stats(engine, "memory->disk0").workers()).as("links touching DISK get 4 workers").isEqualTo(4);
            assertThat(stats(engine, "host->memory").workers()).isEqualTo(1);
        }
    }

    @Test
    void copyBetweenTwoNonPlainTiersGoesThroughStaging() throws Exception {
        SplittableRandom random = new SplittableRandom(7);
        WrappedTier disk = track(new WrappedTier("disk", TierKind.DISK, false, HostTier.create("d-inner", 4L << 20)));
        WrappedTier pool = track(new WrappedTier("pool", TierKind.POOL, false, HostTier.create("p-inner", 4L << 20)));
        try (TransferEngine engine = new TransferEngine(TransferEngine.Settings.defaults().withStagingBytes(1L << 20))) {
            List<CompletableFuture<TransferResult>> futures = new ArrayList<>();
            List<long[]> pairs = new ArrayList<>();
            List<MemorySegment> data = new ArrayList<>();
            for (int i = 0; i < 24; i++) {
                long len = random.nextLong(1, 200_000);
                long s = disk.allocate(len);
                long d = pool.allocate(len);
                MemorySegment bytes = randomBytes(len, random);
                disk.write(s, bytes);
                pairs.add(new long[] {s, d, len});
                data.add(bytes);
                futures.add(engine.copy(disk, s, pool, d, len));
            }
            for (int i = 0; i < futures.size(); i++) {
                assertThat(done(futures.get(i)).completed()).isTrue();
                long[] p = pairs.get(i);
                assertThat(contents(pool, p[1], p[2], arena).mismatch(data.get(i))).isEqualTo(-1);
            }
            long tooLarge = (1L << 20) + 1;
            long s = disk.allocate(tooLarge);
            long d = pool.allocate(tooLarge);
            assertThatThrownBy(() -> done(engine.copy(disk, s, pool, d, tooLarge)))
                    .isInstanceOf(ExecutionException.class).hasMessageContaining("disk->pool")
                    .hasMessageContaining(String.valueOf(tooLarge));
        }
    }

    @Test
    void missingSourceCompletesAsNotFound() throws Exception {
        HostTier host = track(HostTier.create("host", 1L << 20));
        DeviceTier device = track(DeviceTier.cpu("device", 1L << 20));
        WrappedTier pool = track(new WrappedTier("pool", TierKind.POOL, false, HostTier.create("p-inner", 1L << 20)));
        try (TransferEngine engine = new TransferEngine()) {
            long h = host.allocate(5000);
            host.free(h); // the object is gone
            long d = device.allocate(5000);
            TransferResult r = done(engine.copy(host, h, device, d, 5000));
            assertThat(r.status()).isEqualTo(TransferStatus.NOT_FOUND);
            assertThat(r.bytes()).isZero();
            long p = pool.allocate(100);
            pool.free(p);
            assertThat(done(engine.scatter(pool, p, List.of(arena.allocate(50), arena.allocate(50)))).notFound()).isTrue();
            assertThat(stats(engine, "host->device").notFound()).isEqualTo(1);
            assertThat(stats(engine, "host->device").bytes()).isZero();
        }
    }

    @Test
    void tierFailureFailsOnlyThatTransferAndTheLinkKeepsServing() throws Exception {
        SplittableRandom random = new SplittableRandom(99);
        HostTier host = track(HostTier.create("host", 1L << 20));
        WrappedTier flaky = track(new WrappedTier("flaky", TierKind.POOL, false, HostTier.create("f-inner", 1L << 20)));
        try (TransferEngine engine = new TransferEngine()) {
            long src = host.allocate(7777);
            MemorySegment bytes = randomBytes(7777, random);
            host.write(src, bytes);
            long bad = flaky.allocate(7777);
            long good = flaky.allocate(7777);
            flaky.failingHandles.add(bad);
            CompletableFuture<TransferResult> failing = engine.copy(host, src, flaky, bad, 7777);
            CompletableFuture<TransferResult> later = engine.copy(host, src, flaky, good, 7777);
            assertThatThrownBy(() -> done(failing)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(TransferException.class)
                    .hasMessageContaining("host->flaky").hasMessageContaining("handle " + src)
                    .hasMessageContaining("handle " + bad).hasMessageContaining("injected write failure");
            assertThat(done(later).completed()).isTrue();
            assertThat(contents(flaky, good, 7777, arena).mismatch(bytes)).isEqualTo(-1);
            flaky.failingHandles.clear();
            assertThat(done(engine.copy(host, src, flaky, bad, 7777)).completed()).as("same link, after the failure").isTrue();
            LinkStats s = stats(engine, "host->flaky");
            assertThat(s.operations()).isEqualTo(3);
            assertThat(s.failed()).isEqualTo(1);
            assertThat(s.completed()).isEqualTo(2);
            assertThat(s.bytes()).isEqualTo(2 * 7777);
        }
    }

    @Test
    void batchCompletesWithOneResultPerTransferAcrossLinks() throws Exception {
        SplittableRandom random = new SplittableRandom(5);
        HostTier host = track(HostTier.create("host", 4L << 20));
        DeviceTier device = track(DeviceTier.cpu("device", 4L << 20));
        WrappedTier flaky = track(new WrappedTier("flaky", TierKind.POOL, false, HostTier.create("f-inner", 4L << 20)));
        try (TransferEngine engine = new TransferEngine()) {
            List<Transfer> batch = new ArrayList<>();
            List<MemorySegment> data = new ArrayList<>();
            List<long[]> dsts = new ArrayList<>();
            long expectedBytes = 0;
            for (int i = 0; i < 40; i++) {
                long len = random.nextLong(1, 30_000);
                long s = host.allocate(len);
                MemorySegment bytes = randomBytes(len, random);
                host.write(s, bytes);
                data.add(bytes);
                Tier dst = i % 3 == 0 ? flaky : device;
                long d = dst.allocate(len);
                dsts.add(new long[] {d, len, i % 3 == 0 ? 1 : 0});
                batch.add(Transfer.copy(host, s, dst, d, len));
                expectedBytes += len;
            }
            long s2 = host.allocate(10);
            long missing = host.allocate(10);
            host.free(missing); // stays free: nothing is allocated after it
            long d1 = device.allocate(10);
            batch.add(Transfer.copy(host, missing, device, d1, 10));
            long d2 = flaky.allocate(10);
            host.write(s2, randomBytes(10, random));
            flaky.failingHandles.add(d2);
            batch.add(Transfer.copy(host, s2, flaky, d2, 10));

            BatchResult result = engine.submitBatch(batch).get(30, TimeUnit.SECONDS);
            assertThat(result.results()).hasSize(42);
            assertThat(result.count(TransferStatus.COMPLETED)).isEqualTo(40);
            assertThat(result.results().get(40).status()).isEqualTo(TransferStatus.NOT_FOUND);
            assertThat(result.results().get(41).status()).isEqualTo(TransferStatus.FAILED);
            assertThat(result.firstFailure()).isInstanceOf(TransferException.class).hasMessageContaining("host->flaky")
                    .hasMessageContaining("batch item 41");
            assertThat(result.bytes()).isEqualTo(expectedBytes);
            for (int i = 0; i < 40; i++) {
                long[] d = dsts.get(i);
                Tier dst = d[2] == 1 ? flaky : device;
                assertThat(contents(dst, d[0], d[1], arena).mismatch(data.get(i))).as("item %d", i).isEqualTo(-1);
            }
            assertThat(stats(engine, "host->device").operations()).isEqualTo(27);
            assertThat(stats(engine, "host->flaky").operations()).isEqualTo(15);
            assertThat(engine.submitBatch(List.of()).get().results()).isEmpty();
        }
    }

    /**
     * Copies between plain-memory tiers in a batch run many to a call of the copy loop; each item
     * still gets its own result (a source not found, a length its allocation cannot hold, an
     * odd-sized object beside 16 KiB ones, runs longer than one call), the bytes land exactly and
     * nowhere else, and the link's counters and both tiers' meters count what each result says.
     */
    @Test
    void copiesBetweenPlainTiersRunManyToACallAndEachKeepsItsOwnResult() throws Exception {
        SplittableRandom random = new SplittableRandom(29);
        HostTier host = track(HostTier.create("host", 8L << 20));
        DeviceTier device = track(DeviceTier.cpu("device", 8L << 20));
        int items = 3 * Link.RUN_ITEMS + 7;
        int notFoundAt = Link.RUN_ITEMS + 3;
        int tooLongAt = 2 * Link.RUN_ITEMS - 1;
        try (TransferEngine engine = new TransferEngine()) {
            List<Transfer> batch = new ArrayList<>();
            List<MemorySegment> data = new ArrayList<>();
            long[] dsts = new long[items];
            long[] lengths = new long[items];
            long expectedBytes = 0;
            long freed = -1;
            for (int i = 0; i < items; i++) {
                long len = i % 10 == 9 ? random.nextLong(1, 20_000) : 16 * 1024;
                long s = host.allocate(len);
                MemorySegment bytes = randomBytes(len, random);
                host.write(s, bytes);
                data.add(bytes);
                dsts[i] = device.allocate(len + 64); // room after the object, which must stay untouched
                device.write(dsts[i], arena.allocate(len + 64).fill((byte) 0x5A));
                lengths[i] = len;
                if (i == notFoundAt) {
                    freed = s;
                } else if (i != tooLongAt) {
                    expectedBytes += len;
                }
                batch.add(Transfer.copy(host, s, device, dsts[i], i == tooLongAt ? len + (1 << 20) : len));
            }
            host.free(freed); // after every allocation, so that no other object takes its place
            long hostReadBefore = host.stats().bytesRead();
            long deviceWrittenBefore = device.stats().bytesWritten();

            BatchResult result = engine.submitBatch(batch).get(30, TimeUnit.SECONDS);

            assertThat(result.results()).hasSize(items);
            assertThat(result.count(TransferStatus.COMPLETED)).isEqualTo(items - 2);
            assertThat(result.results().get(notFoundAt).status()).isEqualTo(TransferStatus.NOT_FOUND);
            assertThat(result.results().get(tooLongAt).status()).isEqualTo(TransferStatus.FAILED);
            assertThat(result.firstFailure()).isInstanceOf(TransferException.class)
                    .hasMessageContaining("batch item " + tooLongAt).hasRootCauseInstanceOf(IllegalArgumentException.class);
            assertThat(result.bytes()).isEqualTo(expectedBytes);
            for (int i = 0; i < items; i++) {
                TransferResult r = result.results().get(i);
                MemorySegment landed = contents(device, dsts[i], lengths[i] + 64, arena);
                if (r.status() == TransferStatus.COMPLETED) {
                    assertThat(r.bytes()).as("item %d", i).isEqualTo(lengths[i]);
                    assertThat(landed.asSlice(0, lengths[i]).mismatch(data.get(i))).as("item %d", i).isEqualTo(-1);
                } else {
                    assertThat(landed.get(ValueLayout.JAVA_BYTE, 0)).as("item %d untouched", i).isEqualTo((byte) 0x5A);
                }
                assertThat(landed.get(ValueLayout.JAVA_BYTE, lengths[i])).as("byte after item %d", i).isEqualTo((byte) 0x5A);
                assertThat(r.nanosQueued()).as("item %d", i).isNotNegative();
                assertThat(r.nanosRun()).as("item %d", i).isNotNegative();
            }
            LinkStats link = stats(engine, "host->device");
            assertThat(link.operations()).isEqualTo(items);
            assertThat(link.completed()).isEqualTo(items - 2);
            assertThat(link.notFound()).isEqualTo(1);
            assertThat(link.failed()).isEqualTo(1);
            assertThat(link.bytes()).isEqualTo(expectedBytes);
            assertThat(host.stats().bytesRead() - hostReadBefore).isEqualTo(expectedBytes);
            assertThat(device.stats().bytesWritten() - deviceWrittenBefore).isEqualTo(expectedBytes);
        }
    }

    /**
     * Copies into and out of a POOL in a batch run many to a call too: each item still gets its own
     * result (a source not found and an allocation too small on the way in, a corrupted frame on
     * the way out, runs longer than one call), every object written verifies, and the links'
     * counters and the tiers' meters count what each result says.
     */
    @Test
    void copiesIntoAndOutOfThePoolRunManyToACallAndEachKeepsItsOwnResult(@TempDir Path dir) throws Exception {
        SplittableRandom random = new SplittableRandom(31);
        HostTier host = track(HostTier.create("host", 16L << 20));
        PoolTier pool = track(PoolTier.open(PoolConfig.builder("pool").paths(List.of(dir.resolve("engine.pool")))
                .capacity(8L << 20).chunkSize(4096).conclude()));
        int items = 3 * Link.RUN_ITEMS + 7;
        int size = 16 * 1024;
        int notFoundAt = Link.RUN_ITEMS + 3;
        int tooSmallAt = 2 * Link.RUN_ITEMS - 1;
        int corruptAt = 2 * Link.RUN_ITEMS + 5;
        try (TransferEngine engine = new TransferEngine()) {
            List<Transfer> in = new ArrayList<>();
            List<MemorySegment> data = new ArrayList<>();
            long[] pooled = new long[items];
            long freed = -1;
            for (int i = 0; i < items; i++) {
                long s = host.allocate(size);
                MemorySegment bytes = randomBytes(size, random);
                host.write(s, bytes);
                data.add(bytes);
                pooled[i] = pool.allocate(i == tooSmallAt ? 4096 : size);
                if (i == notFoundAt) {
                    freed = s;
                }
                in.add(Transfer.copy(host, s, pool, pooled[i], size));
            }
            host.free(freed); // after every allocation, so that no other object takes its place
            long hostReadBefore = host.stats().bytesRead();
            long poolWrittenBefore = pool.stats().bytesWritten();

            BatchResult written = engine.submitBatch(in).get(30, TimeUnit.SECONDS);

            assertThat(written.count(TransferStatus.COMPLETED)).isEqualTo(items - 2);
            assertThat(written.results().get(notFoundAt).status()).isEqualTo(TransferStatus.NOT_FOUND);
            assertThat(written.results().get(tooSmallAt).status()).isEqualTo(TransferStatus.FAILED);
            assertThat(written.firstFailure()).hasMessageContaining("batch item " + tooSmallAt)
                    .hasRootCauseInstanceOf(IllegalArgumentException.class);
            long expected = (long) (items - 2) * size;
            assertThat(written.bytes()).isEqualTo(expected);
            assertThat(host.stats().bytesRead() - hostReadBefore).isEqualTo(expected);
            assertThat(pool.stats().bytesWritten() - poolWrittenBefore).isEqualTo(expected);
            LinkStats inLink = engine.linkStats().stream().filter(l -> l.bytes() == expected).findFirst().orElseThrow();
            assertThat(inLink.completed()).isEqualTo(items - 2);
            assertThat(inLink.notFound()).isEqualTo(1);
            assertThat(inLink.failed()).isEqualTo(1);

            MemorySegment frame = pool.segment(pooled[corruptAt], 0, size);
            frame.set(ValueLayout.JAVA_BYTE, 100, (byte) (frame.get(ValueLayout.JAVA_BYTE, 100) ^ 1)); // behind the frame's back
            List<Transfer> out = new ArrayList<>();
            long[] back = new long[items];
            for (int i = 0; i < items; i++) {
                back[i] = host.allocate(size);
                host.write(back[i], arena.allocate(size).fill((byte) 0x5A));
                out.add(Transfer.copy(pool, pooled[i], host, back[i], size));
            }
            long poolReadBefore = pool.stats().bytesRead();

            BatchResult read = engine.submitBatch(out).get(30, TimeUnit.SECONDS);

            for (int i = 0; i < items; i++) {
                TransferStatus status = read.results().get(i).status();
                MemorySegment landed = contents(host, back[i], size, arena);
                if (i == notFoundAt || i == tooSmallAt) {
                    assertThat(status).as("item %d, never published", i).isEqualTo(TransferStatus.NOT_FOUND);
                } else if (i == corruptAt) {
                    assertThat(status).as("item %d", i).isEqualTo(TransferStatus.FAILED);
                } else {
                    assertThat(status).as("item %d", i).isEqualTo(TransferStatus.COMPLETED);
                    assertThat(landed.mismatch(data.get(i))).as("item %d", i).isEqualTo(-1);
                    continue;
                }
                if (i != corruptAt) {
                    assertThat(landed.get(ValueLayout.JAVA_BYTE, 0)).as("item %d untouched", i).isEqualTo((byte) 0x5A);
                }
            }
            assertThat(read.firstFailure()).hasMessageContaining("batch item " + corruptAt)
                    .hasRootCauseInstanceOf(CorruptObjectException.class);
            long readBytes = (long) (items - 3) * size;
            assertThat(read.bytes()).isEqualTo(readBytes);
            assertThat(pool.stats().bytesRead() - poolReadBefore).isEqualTo(readBytes);
            LinkStats outLink = engine.linkStats().stream().filter(l -> l.bytes() == readBytes).findFirst().orElseThrow();
            assertThat(outLink.completed()).isEqualTo(items - 3);
            assertThat(outLink.notFound()).isEqualTo(2);
            assertThat(outLink.failed()).isEqualTo(1);
        }
    }

    /**
     * A link's latency percentiles are those of all its transfers, whichever worker ran them and
     * whether they came alone or in a batch: each worker keeps its own histogram and a snapshot
     * merges them. Latency is submission to completion, the result's queued plus run time.
     */
    @Test
    void linkLatencyCoversEveryTransferOfBatchesAndSingleCopiesOnEveryWorker() throws Exception {
        SplittableRandom random = new SplittableRandom(11);
        HostTier host = track(HostTier.create("host", 8L << 20));
        DeviceTier device = track(DeviceTier.cpu("device", 8L << 20));
        try (TransferEngine engine = new TransferEngine(TransferEngine.Settings.defaults().withMemoryLinkWorkers(3))) {
            List<Long> latencies = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                List<Transfer> batch = new ArrayList<>();
                List<CompletableFuture<TransferResult>> singles = new ArrayList<>();
                for (int i = 0; i < 48; i++) {
                    long len = random.nextLong(1, 20_000);
                    long s = host.allocate(len);
                    host.write(s, randomBytes(len, random));
                    long d = device.allocate(len);
                    if (i % 4 == 0) {
                        singles.add(engine.copy(host, s, device, d, len)); // spread over the link's workers
                    } else {
                        batch.add(Transfer.copy(host, s, device, d, len));
                    }
                }
                BatchResult result = engine.submitBatch(batch).get(30, TimeUnit.SECONDS);
                for (TransferResult r : result.results()) {
                    assertThat(r.status()).isEqualTo(TransferStatus.COMPLETED);
                    latencies.add(r.nanosQueued() + r.nanosRun());
                }
                for (CompletableFuture<TransferResult> f : singles) {
                    TransferResult r = done(f);
                    assertThat(r.status()).isEqualTo(TransferStatus.COMPLETED);
                    latencies.add(r.nanosQueued() + r.nanosRun());
                }
                if (round == 1) {
                    stats(engine, "host->device"); // a snapshot in between: the next one still covers everything
                }
            }
            latencies.sort(null);
            int n = latencies.size();
            LinkStats s = stats(engine, "host->device");
            assertThat(s.completed()).isEqualTo(n);
            long max = latencies.get(n - 1);
            // the histogram keeps three significant digits: a value reads back within 0.1% above it
            assertThat(s.maxNanos()).isBetween(max, max + max / 500 + 1);
            long lowerMedian = latencies.get((n + 1) / 2 - 1);
            assertThat(s.p50Nanos()).isBetween(lowerMedian, latencies.get(n / 2) + latencies.get(n / 2) / 500 + 1);
            long p99 = latencies.get((int) Math.ceil(0.99 * n) - 1);
            assertThat(s.p99Nanos()).isBetween(p99, p99 + p99 / 500 + 1);
        }
    }

    @Test
    void severalSubmittingThreadsAllCompleteByteExact() throws Exception {
        HostTier host = track(HostTier.create("host", 32L << 20));
        DeviceTier device = track(DeviceTier.cpu("device", 32L << 20));
        int threads = 4;
        int perThread = 300;
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch start = new CountDownLatch(1);
        try (TransferEngine engine = new TransferEngine(TransferEngine.Settings.defaults().withQueueCapacity(16))) {
            List<Thread> submitters = new ArrayList<>();
            long[] bytesPerThread = new long[threads];
            for (int t = 0; t < threads; t++) {
                int id = t;
                Thread th = new Thread(() -> {
                    SplittableRandom random = new SplittableRandom(1234 + id);
                    try (Arena local = Arena.ofConfined()) {
                        start.await();
                        List<CompletableFuture<TransferResult>> futures = new ArrayList<>();
                        List<long[]> objs = new ArrayList<>();
                        List<MemorySegment> data = new ArrayList<>();
                        for (int i = 0; i < perThread; i++) {
                            long len = random.nextLong(1, 20_000);
                            long s = host.allocate(len);
                            long d = device.allocate(len);
                            MemorySegment bytes = local.allocate(len);
                            fill(bytes, random);
                            host.write(s, bytes);
                            futures.add(engine.copy(host, s, device, d, len));
                            objs.add(new long[] {s, d, len});
                            data.add(bytes);
                            bytesPerThread[id] += len;
                        }
                        for (int i = 0; i < perThread; i++) {
                            assertThat(futures.get(i).get(30, TimeUnit.SECONDS).completed()).isTrue();
                            long[] o = objs.get(i);
                            assertThat(contents(device, o[1], o[2], local).mismatch(data.get(i))).isEqualTo(-1);
                            host.free(o[0]);
                            device.free(o[1]);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                submitters.add(th);
                th.start();
            }
            start.countDown();
            for (Thread th : submitters) {
                th.join();
            }
            assertThat(failure.get()).isNull();
            LinkStats s = stats(engine, "host->device");
            assertThat(s.operations()).isEqualTo((long) threads * perThread);
            long total = 0;
            for (long b : bytesPerThread) {
                total += b;
            }
            assertThat(s.bytes()).isEqualTo(total);
            assertThat(s.queueDepth()).isZero();
            assertThat(host.used()).isZero();
            assertThat(device.used()).isZero();
        }
    }

    @Test
    void closeFinishesQueuedWorkThenRefusesNewTransfers() throws Exception {
        SplittableRandom random = new SplittableRandom(3);
        HostTier host = track(HostTier.create("host", 8L << 20));
        DeviceTier device = track(DeviceTier.cpu("device", 8L << 20));
        int before = MemoryAudit.liveRegions().size();
        TransferEngine engine = new TransferEngine(TransferEngine.Settings.defaults().withSpinNanos(0));
        List<CompletableFuture<TransferResult>> futures = new ArrayList<>();
        long s = host.allocate(64 * 1024);
        host.write(s, randomBytes(64 * 1024, random));
        for (int i = 0; i < 100; i++) {
            long d = device.allocate(64 * 1024);
            futures.add(engine.copy(host, s, device, d, 64 * 1024));
        }
        engine.close();
        for (CompletableFuture<TransferResult> f : futures) {
            assertThat(f).isDone();
            assertThat(f.get().completed()).isTrue();
        }
        assertThatThrownBy(() -> engine.copy(host, s, device, 0, 10)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        engine.close();
        assertThat(MemoryAudit.liveRegions()).hasSize(before);
        for (Link link : engine.links()) {
            assertThat(link.stats().queueDepth()).isZero();
        }
    }

    @Test
    void aTaskRunsOnTheLinksWorkerAfterTheRequestsBeforeItAndIsNotCountedAsATransfer() throws Exception {
        SplittableRandom random = new SplittableRandom(17);
        HostTier host = track(HostTier.create("host", 8L << 20));
        DeviceTier device = track(DeviceTier.cpu("device", 8L << 20));
        try (TransferEngine engine = new TransferEngine(TransferEngine.Settings.defaults().withSpinNanos(0))) {
            long s = host.allocate(256 * 1024);
            MemorySegment bytes = randomBytes(256 * 1024, random);
            host.write(s, bytes);
            List<CompletableFuture<TransferResult>> before = new ArrayList<>();
            long[] d = new long[20];
            for (int i = 0; i < d.length; i++) {
                d[i] = device.allocate(256 * 1024);
                before.add(engine.copy(host, s, device, d[i], 256 * 1024));
            }
            // the task sees every copy queued before it done, and runs on the link's own thread
            CompletableFuture<String> task = engine.runOnLink(host, device, () -> {
                for (CompletableFuture<TransferResult> f : before) {
                    if (!f.isDone()) {
                        return "ran before a copy queued ahead of it";
                    }
                }
                return Thread.currentThread().getName();
            });
            assertThat(task.get(10, TimeUnit.SECONDS)).isEqualTo("strata-link-host->device-0");
            for (int i = 0; i < d.length; i++) {
                assertThat(contents(device, d[i], 256 * 1024, arena).mismatch(bytes)).isEqualTo(-1);
            }
            // gathers' and scatters' links take tasks too (null stands for raw memory)
            assertThat(engine.runOnLink(null, host, () -> Thread.currentThread().getName()).get(10, TimeUnit.SECONDS))
                    .isEqualTo("strata-link-memory->host-0");
            assertThat(engine.runOnLink(device, null, () -> Thread.currentThread().getName()).get(10, TimeUnit.SECONDS))
                    .isEqualTo("strata-link-device->memory-0");
            // a task that throws fails its own future; the worker goes on with the next copy
            CompletableFuture<Object> failing = engine.runOnLink(host, device, () -> {
                throw new IllegalStateException("injected task failure");
            });
            CompletableFuture<TransferResult> after = engine.copy(host, s, device, d[0], 256 * 1024);
            assertThatThrownBy(() -> failing.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(IllegalStateException.class).hasMessage("injected task failure");
            assertThat(done(after).completed()).isTrue();
            LinkStats stats = stats(engine, "host->device");
            assertThat(stats.operations()).as("tasks are not transfers").isEqualTo(d.length + 1);
            assertThat(stats.completed()).isEqualTo(d.length + 1);
            assertThat(stats.failed()).isZero();
            assertThat(stats(engine, "memory->host").operations()).isZero();
            assertThatThrownBy(() -> engine.runOnLink(null, null, () -> 1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("both were null");
            engine.close();
            assertThatThrownBy(() -> engine.runOnLink(host, device, () -> 1)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
        }
    }

    @Test
    void aLinkStatesWhenItsQueuedWorkShouldBeDoneSoItsWaitersNeedNoWakeUp() throws Exception {
        SplittableRandom random = new SplittableRandom(23);
        HostTier host = track(HostTier.create("host", 16L << 20));
        DeviceTier device = track(DeviceTier.cpu("device", 16L << 20));
        try (TransferEngine engine = new TransferEngine()) {
            int n = 16;
            long size = 256 * 1024;
            long[] s = new long[n];
            long[] d = new long[n];
            List<Transfer> batch = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                s[i] = host.allocate(size);
                host.write(s[i], randomBytes(size, random));
                d[i] = device.allocate(size);
                batch.add(Transfer.copy(host, s[i], device, d[i], size));
            }
            SpinningFuture<BatchResult> first = (SpinningFuture<BatchResult>) engine.submitBatch(batch);
            assertThat(first.expectedDoneAt()).as("no estimate before the link has measured itself").isZero();
            assertThat(first.get(10, TimeUnit.SECONDS).count(TransferStatus.COMPLETED)).isEqualTo(n);
            Link link = engine.links().getFirst();
            assertThat(link.pendingBytes()).as("a finished batch is no longer pending").isZero();

            long before = System.nanoTime();
            SpinningFuture<BatchResult> second = (SpinningFuture<BatchResult>) engine.submitBatch(batch);
            SpinningFuture<BatchResult> third = (SpinningFuture<BatchResult>) engine.submitBatch(batch);
            assertThat(second.expectedDoneAt()).as("measured: the batch's bytes at the link's rate").isGreaterThan(before);
            assertThat(third.expectedDoneAt()).as("queued behind the second").isGreaterThan(second.expectedDoneAt());
            assertThat(second.get(10, TimeUnit.SECONDS).count(TransferStatus.COMPLETED)).isEqualTo(n);
            assertThat(third.get(10, TimeUnit.SECONDS).count(TransferStatus.COMPLETED)).isEqualTo(n);
            SpinningFuture<TransferResult> single = (SpinningFuture<TransferResult>) engine.copy(host, s[0], device, d[0], size);
            assertThat(single.expectedDoneAt()).isGreaterThan(before);
            assertThat(single.get(10, TimeUnit.SECONDS).completed()).isTrue();
            for (int i = 0; i < n; i++) {
                assertThat(contents(device, d[i], size, arena).mismatch(contents(host, s[i], size, arena))).isEqualTo(-1);
            }

            // failed and missing copies are taken off the pending bytes too
            host.free(s[1]);
            List<Transfer> some = List.of(batch.get(0), batch.get(1), Transfer.copy(host, s[2], device, d[2], size + 1));
            BatchResult r = engine.submitBatch(some).get(10, TimeUnit.SECONDS);
            assertThat(r.results().get(1).status()).isEqualTo(TransferStatus.NOT_FOUND);
            assertThat(r.results().get(2).status()).isEqualTo(TransferStatus.FAILED);
            assertThat(link.pendingBytes()).isZero();
        }
    }

    @Test
    void settingsOverrideWorkersAndRejectNonsense() throws Exception {
        HostTier host = track(HostTier.create("host", 1L << 20));
        DeviceTier device = track(DeviceTier.cpu("device", 1L << 20));
        try (TransferEngine engine = new TransferEngine(TransferEngine.Settings.defaults().withLinkWorkers("host->device", 3))) {
            long s = host.allocate(100);
            host.write(s, randomBytes(100, new SplittableRandom(1)));
            long d = device.allocate(100);
            done(engine.copy(host, s, device, d, 100));
            assertThat(stats(engine, "host->device").workers()).isEqualTo(3);
            assertThatThrownBy(() -> engine.copy(host, s, device, d, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("0").hasMessageContaining("host").hasMessageContaining("device");
        }
        assertThatThrownBy(() -> TransferEngine.Settings.defaults().withQueueCapacity(100)).hasMessageContaining("100");
        assertThatThrownBy(() -> TransferEngine.Settings.defaults().withLinkWorkers("a->b", 0)).hasMessageContaining("a->b");
    }
}
