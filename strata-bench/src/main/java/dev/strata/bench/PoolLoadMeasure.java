package dev.strata.bench;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.memory.Sizes;
import dev.strata.memory.log.Log;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.node.index.BlockIndex;
import dev.strata.node.index.BlockIndexConfig;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.index.PoolSharedBlockStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;

/**
 * Loads KV blocks from the POOL that another process published, through the pool's block index,
 * against a raw copy of the same bytes from the same mapping in the same run.
 *
 * <p>A child JVM ({@link #main}) attaches to a fresh pool under {@code /dev/shm}, publishes
 * blocks of seeded random bytes through {@link PoolSharedBlockStore} and exits. This process
 * then loads every block, in a shuffled order, two ways, alternating rounds ({@link Trials}):
 * <ul>
 *   <li>candidate: {@link PoolSharedBlockStore#read} — acquire a pin in the index, copy out of
 *       the pool mapping into the block's own slot of an off-heap arena (as an engine loads
 *       blocks into its KV slots) while verifying the block's Checksum64 (one pass), release the
 *       pin;</li>
 *   <li>baseline: {@link MemorySegment#copy} of the same bytes from the same mapping into the same
 *       slots (locations looked up before timing).</li>
 * </ul>
 * The working sets, source and destination (each more than the last-level cache holds), are the
 * same for both sides.
 * Figures: {@code pool_block_load_cross_process_<size>} in GB/s, goal ratio {@code >= 0.85}.
 *
 * <p>Confined to the calling thread.
 */
public final class PoolLoadMeasure {
    /** Block sizes measured: a 16-token block of a 16 KiB-per-token model, and one of Llama-3-70B (80 KiB/token). */
    static final long[] BLOCK_SIZES = {256 * Sizes.KiB, 1280 * Sizes.KiB};
    static final String GOAL = ">= 0.85";
    static final String BASELINE = "raw MemorySegment.copy from the same pool mapping";
    private static final int HASH_VERSION = 1;
    /** Untimed passes over the working set on each side before the timed rounds. */
    private static final int WARM_UP_PASSES = 4;
    private static final ObjectKey MODEL = new ObjectKey(0x504F_4F4C_4C4F_4144L, 0x4D45_4153_5552_4531L);

    private PoolLoadMeasure() {
    }

    /** Figure name for a block size, e.g. {@code pool_block_load_cross_process_1280KiB}. */
    static String figureName(long blockSize) {
        return "pool_block_load_cross_process_" + (blockSize / Sizes.KiB) + "KiB";
    }

    /** The key of block {@code i}. */
    static ObjectKey key(long blockSize, int i) {
        return new ObjectKey(0x4B56_0000_0000_0000L | blockSize, 0x9E37_79B9_7F4A_7C15L * (i + 1));
    }

    /**
     * Runs the measurement for every block size; quick mode uses a smaller working set and fewer
     * rounds. A size that cannot be measured (the child fails) yields a missing figure with the reason.
     */
    public static List<Figure> figures(boolean quick) {
        long workingSet = quick ? 48 * Sizes.MiB : 192 * Sizes.MiB; // bytes of blocks per size
        int rounds = quick ? 3 : Trials.FULL_ROUNDS;
        int maxRounds = quick ? rounds : Trials.SECOND_LOOK_ROUNDS; // rounds of a figure still undecided after `rounds`
        Progress progress = new Progress(Log.stream("bench"), BLOCK_SIZES.length);
        List<Figure> figures = new ArrayList<>();
        for (long size : BLOCK_SIZES) {
            progress.step("pool block load, " + Sizes.format(size) + " blocks published by another process");
            try {
                figures.add(measure(size, (int) (workingSet / size), rounds, maxRounds));
            } catch (RuntimeException | IOException | InterruptedException e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                figures.add(Figure.missing(figureName(size), "GB/s", BASELINE, GOAL, "not measured: " + e));
            }
        }
        return figures;
    }

    private static Figure measure(long size, int blocks, int rounds, int maxRounds) throws IOException, InterruptedException {
        String name = "bench-load-" + ProcessHandle.current().pid() + "-" + (size / Sizes.KiB);
        Path path = Path.of("/dev/shm", "strata-" + name + ".pool");
        long capacity = Sizes.alignUp(size, PoolConfig.DEFAULT_CHUNK_SIZE) * (blocks + 2);
        PoolConfig config = PoolConfig.builder(name).path(path).capacity(capacity)
                .rootRegionSize(PoolBlockIndex.suggestedRegionSize(capacity, PoolConfig.DEFAULT_CHUNK_SIZE,
                        PoolConfig.DEFAULT_PROCESS_SLOTS))
                .sweepInterval(Duration.ZERO).conclude();
        try (PoolTier tier = PoolTier.open(config);
             PoolBlockIndex index = PoolBlockIndex.open(tier, BlockIndexConfig.builder(HASH_VERSION, MODEL).conclude());
             Arena arena = Arena.ofConfined()) {
            long childPid = publishInChild(name, path, size, blocks);
            PoolSharedBlockStore store = new PoolSharedBlockStore(index);
            // one device slot per block, as an engine loads blocks into its KV arena: the working set
            // of the destination is as large as the source's, as it is in serving
            MemorySegment slots = arena.allocate(size * blocks, 4096);
            slots.fill((byte) 1); // pre-touch
            @SuppressWarnings("unchecked")
            List<MemorySegment>[] destinations = new List[blocks];
            for (int i = 0; i < blocks; i++) {
                destinations[i] = List.of(slots.asSlice(i * size, size));
            }
            int[] order = shuffled(blocks, new SplittableRandom(size));
            ObjectKey[] keys = new ObjectKey[blocks];
            long[] handles = new long[blocks];
            long[] location = new long[BlockIndex.LOCATION_LONGS];
            for (int i = 0; i < blocks; i++) {
                keys[i] = key(size, order[i]);
                long pin = index.acquire(keys[i].high(), keys[i].low(), location);
                if (pin < 0 || location[BlockIndex.LENGTH] != size) {
                    throw new IllegalStateException("block " + order[i] + " of " + size + " bytes published by pid "
                            + childPid + " is not in the index (status " + pin + ")");
                }
                handles[i] = location[BlockIndex.HANDLE];
                index.release(pin);
            }
            MemorySegment data = tier.dataArea();
            DoubleSupplier raw = () -> {
                long start = System.nanoTime();
                for (int i = 0; i < blocks; i++) {
                    MemorySegment.copy(data, handles[i], slots, i * size, size);
                }
                return gb(size * blocks, System.nanoTime() - start);
            };
            DoubleSupplier throughIndex = () -> {
                long start = System.nanoTime();
                for (int i = 0; i < blocks; i++) {
                    if (!store.read(keys[i], destinations[i])) {
                        throw new IllegalStateException("block " + keys[i] + " vanished from the index during the measurement");
                    }
                }
                return gb(size * blocks, System.nanoTime() - start);
            };
            for (int w = 0; w < WARM_UP_PASSES; w++) { // both paths compiled by C2 before any timed round
                raw.getAsDouble();
                throughIndex.getAsDouble();
            }
            Paired gbs = Trials.pairedUntilDecided(rounds, maxRounds, GOAL, raw, throughIndex);
            return Figure.paired(figureName(size), "GB/s", BASELINE, gbs, GOAL)
                    .withNote(blocks + " blocks published by another JVM (pid " + childPid + "); acquire, copy with "
                            + "Checksum64 verification into its own slot of an off-heap arena, release; " + gbs.rounds() + " paired rounds");
        } finally {
            Files.deleteIfExists(path);
        }
    }

    private static double gb(long bytes, long nanos) {
        return bytes / (double) nanos;
    }

    private static int[] shuffled(int n, SplittableRandom random) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) {
            a[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
        return a;
    }

    /** Starts the publishing JVM and waits for it; returns its pid. */
    private static long publishInChild(String name, Path path, long size, int blocks) throws IOException, InterruptedException {
        String java = System.getProperty("strata.java");
        if (java == null || java.isBlank()) {
            java = ProcessHandle.current().info().command().orElse("java");
        }
        List<String> command = List.of(java, "--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector",
                "-Xmx256m", "-cp", System.getProperty("java.class.path"), PoolLoadMeasure.class.getName(),
                name, path.toString(), Long.toString(size), Integer.toString(blocks));
        Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        List<String> lines;
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            lines = out.lines().toList();
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        if (!child.waitFor(5, TimeUnit.MINUTES) || child.exitValue() != 0
                || lines.stream().noneMatch(l -> l.equals("published " + blocks))) {
            child.destroyForcibly();
            throw new IllegalStateException("publishing process failed: " + lines);
        }
        return child.pid();
    }

    /**
     * The publishing process: {@code PoolLoadMeasure <pool name> <path> <block size> <blocks>}.
     * Attaches to the pool, publishes the blocks (seeded random bytes), prints
     * {@code published <blocks>} and exits.
     */
    public static void main(String[] args) {
        Log.useForJavaLogging();
        String name = args[0];
        Path path = Path.of(args[1]);
        long size = Long.parseLong(args[2]);
        int blocks = Integer.parseInt(args[3]);
        PoolConfig config = PoolConfig.builder(name).path(path).mode(PoolConfig.Mode.ATTACH)
                .sweepInterval(Duration.ZERO).conclude();
        try (PoolTier tier = PoolTier.open(config);
             PoolBlockIndex index = PoolBlockIndex.open(tier, BlockIndexConfig.builder(HASH_VERSION, MODEL).conclude());
             Arena arena = Arena.ofConfined()) {
            PoolSharedBlockStore store = new PoolSharedBlockStore(index);
            MemorySegment source = arena.allocate(size, 4096);
            byte[] bytes = new byte[(int) size];
            SplittableRandom random = new SplittableRandom(size);
            int published = 0;
            for (int i = 0; i < blocks; i++) {
                random.nextBytes(bytes);
                bytes[0] |= 1;
                MemorySegment.copy(MemorySegment.ofArray(bytes), 0, source, 0, size);
                if (store.publish(key(size, i), List.of(source)) == SharedBlockStore.PublishStatus.PUBLISHED) {
                    published++;
                }
            }
            System.out.println("published " + published);
        }
    }
}
