package dev.strata.bench;

import dev.strata.memory.Allocator;
import dev.strata.memory.Sizes;
import dev.strata.memory.Tier;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.disk.IoMode;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.log.Log;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.transfer.Transfer;
import dev.strata.memory.transfer.TransferEngine;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.DoubleSupplier;

/**
 * {@code strata bench tiers}: the Foundation's figures, each against a baseline measured in the
 * same run.
 *
 * <ul>
 *   <li>Block copies HOST ↔ DEVICE ↔ POOL through the transfer engine at 16 KiB, 256 KiB and
 *       2 MiB, against a raw {@link MemorySegment#copy} of the same bytes between the same places
 *       (goal ≥ 0.9×). Copies into the POOL include its checksum and publish protocol.</li>
 *   <li>KV gather (128 × 20 KiB and 64 × 16 KiB chunks of a layer-major DEVICE KV cache into one
 *       contiguous block in HOST or POOL) and scatter back, against a raw copy of the same bytes
 *       (goal ≥ 0.85×).</li>
 *   <li>DISK writes and reads at 256 KiB and 2 MiB with 4 requests in flight, against {@code fio}
 *       with direct I/O and the same request size and depth on the same file system (goal ≥ 0.9×);
 *       the reads also against fio checking a hash in every block as it reads, the same work as the
 *       tier's checksum verification (information), and against the same reads into a HOST tier
 *       reserved without huge pages (information: what huge pages give the reads).</li>
 *   <li>Where the machine has a CUDA device: its host link, host to device and back from
 *       page-locked and pageable memory at the same block sizes, against the host link the models
 *       assume ({@link CudaLinkMeasure}; information).</li>
 *   <li>Object-store put/get/evict of small objects on one thread (JMH), goal ≥ 5 M ops/s.</li>
 * </ul>
 *
 * <p>Runs on the calling thread; the engine's link workers do the engine side.
 */
public final class TiersScenario implements Scenario {

    private static final long[] BLOCK_SIZES = {16 * Sizes.KiB, 256 * Sizes.KiB, 2 * Sizes.MiB};
    private static final long BATCH_BYTES = 16 * Sizes.MiB; // bytes per engine batch (at most 256 transfers) in memory figures
    private static final String COPY_GOAL = ">= 0.9";
    private static final String GATHER_GOAL = ">= 0.85";
    private static final String DISK_GOAL = ">= 0.9";
    /**
     * Longest warm-up of one memory figure, ns: its baseline and engine side run in pairs until
     * the JIT has been quiet for {@link Trials#JIT_QUIET_NANOS} (a gather runs its per-piece code
     * 6,528 times a run; in a probe of the engine's gather, the first rounds after a single
     * warm-up run were the slowest).
     */
    private static final long WARM_UP_NANOS = 3_000_000_000L;
    /** Rounds of an undecided DISK figure after its second look: each DISK round moves a GiB twice, so 18 rather than 27. */
    private static final int DISK_SECOND_LOOK_ROUNDS = 2 * Trials.FULL_ROUNDS;

    private final List<Series> series = new ArrayList<>(); // throughput against block size, filled by run

    @Override
    public List<Series> series() {
        return List.copyOf(series);
    }

    @Override
    public String name() {
        return "tiers";
    }

    @Override
    public String description() {
        return "tier-to-tier block copies, KV gather/scatter, DISK against fio, a CUDA device's host link, object-store operations";
    }

    @Override
    public List<Figure> run(Options options, List<String> notes) throws Exception {
        long workingSet = options.quick() ? 64 * Sizes.MiB : 256 * Sizes.MiB; // bytes per tier per size
        int rounds = options.quick() ? 3 : Trials.FULL_ROUNDS;
        int maxRounds = options.quick() ? rounds : Trials.SECOND_LOOK_ROUNDS; // rounds of a figure still undecided after `rounds`
        List<Figure> figures = new ArrayList<>();
        Progress progress = new Progress(Log.stream("bench"), 5);
        Files.createDirectories(options.workDir());
        Path poolFile = Path.of("/dev/shm", "strata-bench-" + ProcessHandle.current().pid() + ".pool");
        long tierBytes = workingSet + 8 * Sizes.MiB;
        try (HostTier host = HostTier.create("host", tierBytes);
             DeviceTier device = DeviceTier.cpu("device", tierBytes);
             PoolTier pool = PoolTier.open(PoolConfig.builder("pool").path(poolFile).capacity(tierBytes).chunkSize(16 * Sizes.KiB)
                     .mode(PoolConfig.Mode.CREATE).conclude());
             TransferEngine engine = new TransferEngine()) {
            try {
                progress.step("block copies HOST/DEVICE/POOL at 16 KiB, 256 KiB, 2 MiB (" + rounds + " paired rounds each"
                        + (maxRounds > rounds ? ", " + maxRounds + " for a figure they leave undecided)" : ")"));
                long warmUp = options.quick() ? 0 : WARM_UP_NANOS; // quick runs: one warm-up run
                copyFigures(engine, host, device, pool, workingSet, rounds, maxRounds, warmUp, figures, series);
                progress.step("KV gather and scatter (128 x 20 KiB, 64 x 16 KiB)");
                gatherScatterFigures(engine, host, device, pool, workingSet, rounds, maxRounds, warmUp, figures);
            } finally {
                pool.destroy();
            }
            progress.step("DISK at 256 KiB and 2 MiB, 4 in flight, against fio");
            diskFigures(engine, host, options, notes, figures);
        }
        progress.step("the host link of a CUDA device, where this machine has one");
        figures.addAll(CudaLinkMeasure.figures(options.quick(), notes));
        Path jmhLog = options.workDir().resolve("store-jmh.log");
        progress.step("object store put/get/evict (JMH, forked JVMs; its log: " + jmhLog + ")");
        figures.addAll(StoreOpsBenchmark.figures(options.quick(), jmhLog));
        return figures;
    }

    private static String label(long size) {
        return size >= Sizes.MiB ? (size / Sizes.MiB) + "MiB" : (size / Sizes.KiB) + "KiB";
    }

    /** Allocates {@code n} objects of {@code size} in {@code tier}. */
    private static long[] allocate(Tier tier, int n, long size) {
        long[] handles = new long[n];
        for (int i = 0; i < n; i++) {
            handles[i] = tier.allocate(size);
            if (handles[i] == Allocator.FULL) {
                throw new IllegalStateException("tier '" + tier.name() + "' full after " + i + " objects of " + size + " bytes");
            }
        }
        return handles;
    }

    private static void freeAll(Tier tier, long[] handles) {
        for (long h : handles) {
            tier.free(h);
        }
    }

    /**
     * Warms a memory figure's baseline and subject together, a pair per step, until the JIT has
     * compiled both and stayed quiet ({@link Trials#warmUntilCompiled}): the paired rounds then
     * start with neither side still being compiled.
     */
    private static void warmUp(long warmUpNanos, DoubleSupplier baseline, DoubleSupplier subject) {
        Trials.warmUntilCompiled(1, warmUpNanos, () -> {
            baseline.getAsDouble();
            subject.getAsDouble();
        });
    }

    /** Fills a segment with seeded random bytes (never all zero). */
    static void fillRandom(MemorySegment seg, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long n = seg.byteSize() / 8;
        for (long i = 0; i < n; i++) {
            seg.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        for (long i = n * 8; i < seg.byteSize(); i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    private static void copyFigures(TransferEngine engine, HostTier host, DeviceTier device, PoolTier pool,
                                    long workingSet, int rounds, int maxRounds, long warmUpNanos, List<Figure> figures,
                                    List<Series> series) {
        Tier[] tiers = {host, device, pool};
        double[][][] engineGBps = new double[tiers.length][tiers.length][BLOCK_SIZES.length]; // [src][dst][size] medians
        double[][][] rawGBps = new double[tiers.length][tiers.length][BLOCK_SIZES.length];
        double[] sizes = java.util.Arrays.stream(BLOCK_SIZES).asDoubleStream().toArray();
        int sizeIndex = -1;
        for (long size : BLOCK_SIZES) {
            sizeIndex++;
            int n = (int) (workingSet / size);
            long[][] handles = new long[tiers.length][];
            for (int t = 0; t < tiers.length; t++) {
                handles[t] = allocate(tiers[t], n, size);
            }
            for (int i = 0; i < n; i++) { // the same random object everywhere, published in the pool
                MemorySegment h = host.segment(handles[0][i], 0, size);
                fillRandom(h, i * 31L + size);
                device.write(handles[1][i], h);
                pool.write(handles[2][i], h);
            }
            for (int s = 0; s < tiers.length; s++) {
                for (int d = 0; d < tiers.length; d++) {
                    if (s == d) {
                        continue;
                    }
                    Tier src = tiers[s];
                    Tier dst = tiers[d];
                    long[] sh = handles[s];
                    long[] dh = handles[d];
                    DoubleSupplier raw = () -> CopyMeasure.onLinkThread(engine, src, dst, () -> CopyMeasure.raw(src, sh, dst, dh, size));
                    DoubleSupplier subject = () -> CopyMeasure.batched(engine, src, sh, dst, dh, size, BATCH_BYTES);
                    warmUp(warmUpNanos, raw, subject);
                    Paired m = Trials.pairedUntilDecided(rounds, maxRounds, COPY_GOAL, raw, subject);
                    Figure f = Figure.paired(src.name() + "_to_" + dst.name() + "_copy_" + label(size), "GB/s",
                            "raw MemorySegment.copy on the link's thread", m, COPY_GOAL).withNote("submitBatch, 16 MiB or 256 transfers a batch, 2 in flight");
                    figures.add(f);
                    engineGBps[s][d][sizeIndex] = f.value();
                    rawGBps[s][d][sizeIndex] = f.baselineValue();
                }
            }
            for (int t = 0; t < tiers.length; t++) {
                freeAll(tiers[t], handles[t]);
            }
        }
        for (int s = 0; s < tiers.length; s++) {
            for (int d = 0; d < tiers.length; d++) {
                if (s != d) {
                    String plot = "copy throughput " + tiers[s].name() + " to " + tiers[d].name() + " (median of rounds)";
                    series.add(new Series(plot, "transfer engine (submitBatch)", "block size (bytes)", "GB/s", true, sizes,
                            engineGBps[s][d]));
                    series.add(new Series(plot, "raw MemorySegment.copy", "block size (bytes)", "GB/s", true, sizes,
                            rawGBps[s][d]));
                }
            }
        }
    }

    private static void gatherScatterFigures(TransferEngine engine, HostTier host, DeviceTier device, PoolTier pool,
                                             long workingSet, int rounds, int maxRounds, long warmUpNanos,
                                             List<Figure> figures) {
        int[][] shapes = {{128, 20 * 1024}, {64, 16 * 1024}}; // chunks per block x bytes per chunk
        for (int[] shape : shapes) {
            int chunks = shape[0];
            long chunk = shape[1];
            long blockBytes = chunks * chunk;
            int blocks = (int) Math.max(4, workingSet / blockBytes / 2);
            // The engine-side KV cache: for each of `chunks` (layer, K|V) tensors, `blocks` chunks in a row.
            long kv = device.allocate(blockBytes * blocks);
            if (kv == Allocator.FULL) {
                throw new IllegalStateException("device tier too small for the KV layout of " + blocks + " blocks");
            }
            MemorySegment cache = device.segment(kv, 0, blockBytes * blocks);
            fillRandom(cache, blockBytes);
            List<List<MemorySegment>> layouts = new ArrayList<>(blocks); // per block: its chunks in layer order
            for (int b = 0; b < blocks; b++) {
                List<MemorySegment> parts = new ArrayList<>(chunks);
                for (int c = 0; c < chunks; c++) {
                    parts.add(cache.asSlice(((long) c * blocks + b) * chunk, chunk));
                }
                layouts.add(List.copyOf(parts));
            }
            String shapeName = chunks + "x" + (chunk / 1024) + "KiB";
            for (Tier dst : new Tier[] {host, pool}) {
                long[] handles = allocate(dst, blocks, blockBytes);
                DoubleSupplier rawIn = () -> CopyMeasure.onLinkThread(engine, null, dst,
                        () -> rawContiguous(cache, dst, handles, blockBytes, true));
                DoubleSupplier gatherRun = () -> gather(engine, layouts, dst, handles);
                warmUp(warmUpNanos, rawIn, gatherRun);
                Paired g = Trials.pairedUntilDecided(rounds, maxRounds, GATHER_GOAL, rawIn, gatherRun);
                figures.add(Figure.paired("kv_gather_" + shapeName + "_device_to_" + dst.name(), "GB/s",
                        "raw copy of the same bytes (contiguous) on the link's thread", g, GATHER_GOAL));
                DoubleSupplier rawOut = () -> CopyMeasure.onLinkThread(engine, dst, null,
                        () -> rawContiguous(cache, dst, handles, blockBytes, false));
                DoubleSupplier scatterRun = () -> scatter(engine, layouts, dst, handles);
                warmUp(warmUpNanos, rawOut, scatterRun);
                Paired s = Trials.pairedUntilDecided(rounds, maxRounds, GATHER_GOAL, rawOut, scatterRun);
                figures.add(Figure.paired("kv_scatter_" + shapeName + "_" + dst.name() + "_to_device", "GB/s",
                        "raw copy of the same bytes (contiguous) on the link's thread", s, GATHER_GOAL));
                freeAll(dst, handles);
            }
            device.free(kv);
        }
    }

    /** Raw baseline: one contiguous copy per block between the KV area and the block objects. */
    private static double rawContiguous(MemorySegment cache, Tier tier, long[] handles, long blockBytes, boolean toTier) {
        long start = System.nanoTime();
        for (int b = 0; b < handles.length; b++) {
            MemorySegment obj = tier.segment(handles[b], 0, blockBytes);
            if (toTier) {
                MemorySegment.copy(cache, b * blockBytes, obj, 0, blockBytes);
            } else {
                MemorySegment.copy(obj, 0, cache, b * blockBytes, blockBytes);
            }
        }
        return CopyMeasure.gbPerSecond(blockBytes * handles.length, System.nanoTime() - start);
    }

    private static double gather(TransferEngine engine, List<List<MemorySegment>> layouts, Tier dst, long[] handles) {
        List<Transfer> all = new ArrayList<>(handles.length);
        for (int b = 0; b < handles.length; b++) {
            all.add(Transfer.gather(layouts.get(b), dst, handles[b]));
        }
        return CopyMeasure.batched(engine, all, BATCH_BYTES);
    }

    private static double scatter(TransferEngine engine, List<List<MemorySegment>> layouts, Tier src, long[] handles) {
        List<Transfer> all = new ArrayList<>(handles.length);
        for (int b = 0; b < handles.length; b++) {
            all.add(Transfer.scatter(src, handles[b], layouts.get(b)));
        }
        return CopyMeasure.batched(engine, all, BATCH_BYTES);
    }

    private static void diskFigures(TransferEngine engine, HostTier host, Options options, List<String> notes,
                                    List<Figure> figures) throws Exception {
        long total = options.quick() ? 256 * Sizes.MiB : Sizes.GiB; // bytes per measurement
        int rounds = options.quick() ? 1 : Trials.FULL_ROUNDS;
        int maxRounds = options.quick() ? rounds : DISK_SECOND_LOOK_ROUNDS;
        Path dir = options.workDir();
        var fio = Fio.ensureInstalled(options.allowInstall(), notes);
        try (DiskTier disk = DiskTier.open(DiskTierOptions.in(dir.resolve("disk-tier"), total + 16 * Sizes.MiB)
                .name("disk").deleteOnClose(true));
             HostTier basePages = basePagesLike(host)) {
            if (disk.ioMode() != IoMode.DIRECT) {
                notes.add("the DISK tier fell back to buffered I/O in " + dir + " (" + disk.ioModeReason()
                        + "): disk figures are not direct-I/O figures");
            }
            for (long size : new long[] {256 * Sizes.KiB, 2 * Sizes.MiB}) {
                int n = (int) (total / size);
                long[] hostHandles = allocate(host, Math.min(n, (int) (host.available() / size / 2)), size);
                for (int i = 0; i < hostHandles.length; i++) {
                    fillRandom(host.segment(hostHandles[i], 0, size), i + size);
                }
                long[] diskHandles = allocate(disk, n, size);
                long[] src = new long[n];
                for (int i = 0; i < n; i++) {
                    src[i] = hostHandles[i % hostHandles.length];
                }
                for (boolean write : new boolean[] {true, false}) {
                    String name = "disk_" + (write ? "write" : "read") + "_" + label(size) + "_qd4";
                    if (fio.isEmpty()) {
                        Sample v = Trials.sample(rounds, () -> write ? CopyMeasure.engine(engine, host, src, disk, diskHandles, size, 16)
                                : CopyMeasure.engine(engine, disk, diskHandles, host, src, size, 16));
                        figures.add(Figure.sampled(name, "GB/s", "fio (absent)", v, Double.NaN, ">= 0.9")
                                .withNote("fio not available: no baseline"));
                        continue;
                    }
                    Paired m = Trials.pairedUntilDecided(rounds, maxRounds, DISK_GOAL,
                            () -> fioBandwidth(fio.get(), dir, total, size, write),
                            () -> write ? CopyMeasure.engine(engine, host, src, disk, diskHandles, size, 16)
                                    : CopyMeasure.engine(engine, disk, diskHandles, host, src, size, 16));
                    figures.add(Figure.paired(name, "GB/s", "fio direct=1 libaio iodepth=4", m, DISK_GOAL)
                            .withNote(disk.ioMode() == IoMode.DIRECT ? "" : "buffered fallback"));
                    if (!write) {
                        // the same work on both sides: fio checking a hash in every block, as each DISK read checks its checksum;
                        // the file with the hashes is laid out once, outside the rounds
                        Fio.layOutVerified(fio.get(), dir, total, size, 4);
                        Paired v = Trials.paired(rounds, () -> fioVerifyingRead(fio.get(), dir, total, size),
                                () -> CopyMeasure.engine(engine, disk, diskHandles, host, src, size, 16));
                        figures.add(Figure.paired(name + "_vs_fio_verified", "GB/s", "fio direct=1 libaio iodepth=4 verify=xxhash", v,
                                ">= 0").withNote("information: fio verifies an xxhash of every block as it reads, as the tier verifies each"
                                + " object's checksum; the goal is on the plain fio figure above"));
                    }
                }
                hugePagesFigure(engine, disk, diskHandles, host, src, basePages, size, rounds, figures);
                freeAll(disk, diskHandles);
                freeAll(host, hostHandles);
            }
        } finally {
            Fio.cleanUp(dir);
        }
    }

    /**
     * {@code disk_read_<size>_qd4_huge_vs_base_pages} (information): the same DISK reads into the
     * scenario's HOST tier, whose region asked for huge pages, against reads into a HOST tier
     * reserved with {@code memory.huge-pages: off}, in alternating rounds.
     */
    private static void hugePagesFigure(TransferEngine engine, DiskTier disk, long[] diskHandles, HostTier host, long[] dst,
                                        HostTier basePages, long size, int rounds, List<Figure> figures) {
        int n = (int) Math.min(diskHandles.length, basePages.available() / size / 2);
        long[] baseHandles = allocate(basePages, n, size);
        long[] baseDst = new long[diskHandles.length];
        for (int i = 0; i < baseDst.length; i++) {
            baseDst[i] = baseHandles[i % n];
        }
        try {
            Paired p = Trials.paired(rounds, () -> CopyMeasure.engine(engine, disk, diskHandles, basePages, baseDst, size, 16),
                    () -> CopyMeasure.engine(engine, disk, diskHandles, host, dst, size, 16));
            figures.add(Figure.paired("disk_read_" + label(size) + "_qd4_huge_vs_base_pages", "GB/s",
                    "the same reads into HOST memory reserved with memory.huge-pages: off", p, ">= 0")
                    .withNote("information: what huge pages under the HOST tier give DISK reads (the kernel backed "
                            + Sizes.format(Math.max(MemoryAudit.processAnonHugePageBytes(), 0)) + " of this process with huge pages)"));
        } finally {
            freeAll(basePages, baseHandles);
        }
    }

    /** A HOST tier like {@code host} whose region asks for no huge pages ({@code memory.huge-pages: off}). */
    private static HostTier basePagesLike(HostTier host) {
        OffHeapRegion.HugePages setting = OffHeapRegion.hugePages();
        OffHeapRegion.hugePages(OffHeapRegion.HugePages.OFF);
        try {
            return HostTier.create("host-base-pages", host.capacity());
        } finally {
            OffHeapRegion.hugePages(setting);
        }
    }

    private static double fioBandwidth(String fio, Path dir, long total, long size, boolean write) {
        return gbPerSecond(() -> Fio.bandwidth(fio, dir, total, size, 4, write));
    }

    private static double fioVerifyingRead(String fio, Path dir, long total, long size) {
        return gbPerSecond(() -> Fio.verifyingRead(fio, dir, total, size, 4));
    }

    /** A fio run's bytes per second, in GB/s, for a paired round (which takes no checked exceptions). */
    private static double gbPerSecond(FioRun run) {
        try {
            return run.bytesPerSecond() / 1e9;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** One fio measurement. */
    @FunctionalInterface
    private interface FioRun {
        double bytesPerSecond() throws java.io.IOException;
    }
}
