package dev.strata.bench;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import dev.strata.cluster.ClusterBlockFormat;
import dev.strata.cluster.ClusterBlockStore;
import dev.strata.cluster.ClusterSettings;
import dev.strata.memory.Sizes;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Block put and get throughput through {@link ClusterBlockStore} against {@code redis-benchmark}
 * on the same cluster, with the same value size, pipeline depth and connection count.
 *
 * <p>Each run starts from an empty cluster ({@link RedisBenchmark#flushAll}, untimed) and does a
 * put phase, then a get phase:
 * <ul>
 *   <li>candidate: as many blocks as the baseline's SET test writes new keys (the same work
 *       for the nodes), of seeded random bytes, published under distinct keys (new keys every
 *       run) through the store's API from one thread, the store's write window sized to hold
 *       {@link #IN_FLIGHT} values (a publish that finds it full waits for room,
 *       {@link ClusterBlockStore#awaitWriteRoom}, and is offered again), timed until
 *       {@link ClusterBlockStore#awaitWrites} returns; then as many reads as the baseline's GET
 *       test makes, of the first {@code blocks} of them round and round, with
 *       {@link ClusterBlockStore#readAsync}, each into its block's own slot of an off-heap
 *       arena (as an engine loads blocks into its KV slots; each value's header and checksum
 *       verified), {@link #IN_FLIGHT} reads outstanding, each answer starting the next read. A
 *       read that misses fails the measure: a miss is a cheaper request than a load and would
 *       flatter the figure;</li>
 *   <li>baseline: {@code redis-benchmark --cluster} with values of the size Strata stores (the
 *       block and its {@link ClusterBlockFormat#HEADER_BYTES}-byte header), {@link #CONNECTIONS}
 *       connections of pipeline depth {@link #DEPTH} (the same {@link #IN_FLIGHT} requests
 *       outstanding), in two runs from an empty cluster each:
 *       <ul>
 *         <li>put: a SET test of new keys ({@link RedisBenchmark#setNewKeys}), as Strata's
 *             puts write blocks the cluster does not hold. A SET that overwrites a key reuses
 *             memory its node already holds and costs the node less (with 256 KiB values its
 *             rate was 1.1 to 1.5 times that of new keys here); the run must end with every key
 *             new and none evicted, so it writes at most {@value #NEW_KEY_MEMORY_SHARE} of a
 *             primary's {@code maxmemory} into the primary that takes the most connections, or the
 *             measure fails;</li>
 *         <li>get: {@code -t set,get} with its requests picking at random among as many keys as
 *             Strata's run has blocks (in cluster mode {@code -r} counts keys per primary, so it
 *             is the blocks over the primaries): the same working set, spread over the primaries
 *             by hash slot as Strata's keys are. Every GET must find its key, as every Strata read
 *             must: the run has at least {@value #REQUESTS_PER_KEY} requests per key, so that its
 *             SETs write every key, and a run whose GETs found their key less than
 *             {@value #LEAST_BASELINE_HIT_FRACTION} of the time fails the measure (a nil reply is
 *             cheaper than a value and would flatter the baseline).</li>
 *       </ul>
 *       Its clock ends a test on a 250 ms tick ({@link RedisBenchmark}), so its warm-up runs size
 *       the measured ones: enough requests that each measured test lasts at least
 *       {@code baselineSeconds} even at the highest rate the warm-up allows, which bounds the
 *       tick's error to a few percent (given in the note).</li>
 * </ul>
 * Baseline and candidate runs alternate after one warm-up run of each ({@link Trials}).
 * Figures {@code cluster_block_put_<size>} and {@code cluster_block_get_<size>} in blocks/s (one
 * block is one request), goal ratio {@code >= 0.8}; the note gives the bytes per second.
 *
 * <p>Confined to the calling thread; answers complete on the store's client threads.
 */
public final class ClusterThroughputMeasure {
    /** Block sizes measured: a 16-token block of a 16 KiB-per-token model, and one of Llama-3-70B (80 KiB/token). */
    static final long[] BLOCK_SIZES = {256 * Sizes.KiB, 1280 * Sizes.KiB};
    /** redis-benchmark connections ({@code -c}). */
    static final int CONNECTIONS = 4;
    /** Requests pipelined per redis-benchmark connection ({@code -P}). */
    static final int DEPTH = 4;
    /** Requests outstanding at any time, on either side. */
    static final int IN_FLIGHT = CONNECTIONS * DEPTH;
    static final String GOAL = ">= 0.8";
    /** Requests of each redis-benchmark test per key at least: its random SETs then leave no key unwritten (e^-20 per key). */
    static final int REQUESTS_PER_KEY = 20;
    /** The least fraction of redis-benchmark's GETs that must find their key. */
    static final double LEAST_BASELINE_HIT_FRACTION = 0.999;
    /** The most of the primaries' {@code maxmemory} the new-key SET test may write: the rest is the nodes' own. */
    static final double NEW_KEY_MEMORY_SHARE = 0.75;
    /** The memory the new-key SET test may fill on a cluster without a {@code maxmemory}, bytes per primary. */
    private static final long UNLIMITED_NODE_BUDGET = 1L << 30;
    private static final int BLOCK_TOKENS = 16;
    private static final int SOURCES = 16; // distinct source blocks the puts cycle through
    private static final Duration TIMEOUT = Duration.ofSeconds(20); // per call: far above any healthy answer

    private ClusterThroughputMeasure() {
    }

    /** Figure name, e.g. {@code cluster_block_put_256KiB}. */
    static String figureName(boolean put, long blockSize) {
        return "cluster_block_" + (put ? "put" : "get") + "_" + (blockSize / Sizes.KiB) + "KiB";
    }

    /** The baseline's description. */
    static String baseline(boolean put) {
        return String.format(Locale.ROOT, "redis-benchmark --cluster %s, same value size, -P %d -c %d",
                put ? "SET of new keys into an emptied cluster" : "GET of a working set as large as the blocks", DEPTH, CONNECTIONS);
    }

    /**
     * A KV geometry whose blocks of {@value #BLOCK_TOKENS} tokens are {@code blockSize} bytes: 8 KV
     * heads of 128 BF16 values (4 KiB per token and layer), as many layers as the size needs.
     */
    static KvGeometry geometry(long blockSize) {
        long perLayer = 2L * BLOCK_TOKENS * 8 * 128 * 2;
        if (blockSize % perLayer != 0) {
            throw new IllegalArgumentException("block size " + blockSize + " is not a multiple of " + perLayer + " bytes");
        }
        return new KvGeometry((int) (blockSize / perLayer), 8, 128, KvDtype.BF16, BLOCK_TOKENS);
    }

    /**
     * Measures every block size; a size that cannot be measured yields missing figures with the reason.
     *
     * @param settings the cluster, reached as the serving processes reach it
     * @param quick    a smaller working set and fewer rounds
     */
    public static List<Figure> figures(ClusterSettings settings, boolean quick, PrintStream log) {
        long workingSet = quick ? 8 * Sizes.MiB : 384 * Sizes.MiB; // bytes of blocks per run (a third per primary), at least minBlocks blocks
        int minBlocks = quick ? 32 : 128;
        int rounds = quick ? 1 : Trials.FULL_ROUNDS;
        double baselineSeconds = quick ? 1 : 3; // the shortest a measured redis-benchmark test may last
        List<Figure> out = new ArrayList<>();
        for (long size : BLOCK_SIZES) {
            try {
                out.addAll(measure(settings.withTimeout(TIMEOUT), size, (int) Math.max(minBlocks, workingSet / size), rounds,
                        baselineSeconds, log));
            } catch (RuntimeException | IOException e) {
                String why = "not measured: " + e.getMessage();
                out.add(Figure.missing(figureName(true, size), "blocks/s", baseline(true), GOAL, why));
                out.add(Figure.missing(figureName(false, size), "blocks/s", baseline(false), GOAL, why));
            }
        }
        return out;
    }

    private static List<Figure> measure(ClusterSettings settings, long size, int blocks, int rounds, double baselineSeconds,
                                        PrintStream log) throws IOException {
        KvGeometry g = geometry(size);
        String seed = settings.nodes().getFirst();
        long valueBytes = size + ClusterBlockFormat.HEADER_BYTES;
        // written at publish, every block admitted; the write window holds IN_FLIGHT values (a publish beyond
        // it is dropped, FULL, and offered again)
        ClusterSettings windowed = settings.withWrites(StrataConfig.ClusterWrite.COMMIT, StrataConfig.ClusterAdmission.ALL)
                .withQueueBytes(IN_FLIGHT * valueBytes);
        try (Arena arena = Arena.ofShared();
             ClusterBlockStore store = ClusterBlockStore.open(windowed, ModelFingerprint.of("bench-cluster-throughput", g), g,
                     Duration.ofSeconds(30))) {
            MemorySegment sources = arena.allocate(size * SOURCES, 4096);
            SplittableRandom random = new SplittableRandom(size);
            for (long i = 0; i < sources.byteSize(); i += 8) {
                sources.set(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong());
            }
            MemorySegment slots = arena.allocate(size * blocks, 4096); // one destination slot per block
            slots.fill((byte) 0);
            AtomicLong run = new AtomicLong();
            RedisBenchmark.Keyspace layout = RedisBenchmark.keyspace(seed, settings.password());
            int primaries = layout.primaries();
            int keysPerPrimary = (blocks + primaries - 1) / primaries; // redis-benchmark's -r: its keys on each primary
            int leastRequests = REQUESTS_PER_KEY * keysPerPrimary * primaries;
            long nodeBudget = layout.maxmemory() > 0 ? layout.maxmemory() : UNLIMITED_NODE_BUDGET;
            // redis-benchmark binds connection c to primary c % primaries: the busiest primary takes at most
            // ceil(connections / primaries) of the connections' requests
            double busiestShare = (double) ((CONNECTIONS + primaries - 1) / primaries) / CONNECTIONS;
            int mostNewKeys = (int) Math.min(Integer.MAX_VALUE, (long) (NEW_KEY_MEMORY_SHARE * nodeBudget / busiestShare / valueBytes));
            if (mostNewKeys < blocks) {
                throw new IllegalStateException("the cluster's primaries hold " + (nodeBudget >> 20) + " MiB each: too little for a SET test"
                        + " of " + blocks + " new values of " + valueBytes + " bytes, " + busiestShare + " of them on one primary, in "
                        + NEW_KEY_MEMORY_SHARE + " of its memory");
            }
            int[] requests = {leastRequests}; // of each redis-benchmark GET run: the warm-up's, then as its rates say
            int[] newKeys = {blocks};         // new keys of each put run, either side: the warm-up's, then as the baseline's rate says
            double[] leastHits = {1};         // the smallest fraction of GETs that found their key in a run
            double[] uncertainty = {0};    // the largest tick error of a measured redis-benchmark run
            boolean[] sized = {false};     // the warm-up run has sized the measured ones
            Paired[] phases = Trials.pairedEach(rounds, () -> {
                flush(seed, settings.password());
                int m = newKeys[0];
                RedisBenchmark.NewKeys w = setNewKeys(seed, settings.password(), valueBytes, m);
                if (w.evicted() > 0 || w.keys() < LEAST_BASELINE_HIT_FRACTION * m) {
                    throw new IllegalStateException(String.format(Locale.ROOT, "redis-benchmark's SET of %d new keys left %d keys and evicted"
                            + " %d: its rate would not be a rate of new keys written into free memory", m, w.keys(), w.evicted()));
                }
                flush(seed, settings.password());
                int n = requests[0];
                RedisBenchmark.Rates r = redisBenchmark(seed, settings.password(), valueBytes, n, keysPerPrimary);
                log.printf(Locale.ROOT, "      redis-benchmark %d KiB: SET %.0f/s of new keys (%d requests, %.2f s), GET %.0f/s (%d requests,"
                                + " %.2f s; %.2f%% of GETs found their key)%n", size >> 10, w.perSecond(), m, w.seconds(), r.getPerSecond(), n,
                        r.getSeconds(), 100 * r.getHitFraction());
                if (r.getHitFraction() < LEAST_BASELINE_HIT_FRACTION) {
                    throw new IllegalStateException(String.format(Locale.ROOT, "redis-benchmark's GETs found their key %.2f%% of the time"
                                    + " (%d keys on each of %d primaries, %d requests): its GET rate would be partly a rate of nil replies",
                            100 * r.getHitFraction(), keysPerPrimary, primaries, n));
                }
                leastHits[0] = Math.min(leastHits[0], r.getHitFraction());
                if (!sized[0]) { // the warm-up: size the measured runs
                    sized[0] = true;
                    requests[0] = (int) Math.max(leastRequests, Math.ceil(RedisBenchmark.highest(n, r.getSeconds()) * baselineSeconds));
                    newKeys[0] = (int) Math.min(mostNewKeys, Math.max(blocks, Math.ceil(w.highestPerSecond(m) * baselineSeconds)));
                } else {
                    uncertainty[0] = Math.max(uncertainty[0], Math.max(w.uncertainty(), RedisBenchmark.uncertainty(r.getSeconds())));
                }
                return new double[] {w.perSecond(), r.getPerSecond()};
            }, () -> {
                flush(seed, settings.password());
                long id = run.incrementAndGet();
                int m = newKeys[0]; // as many new keys as redis-benchmark's SET test of this round writes
                double put = m / seconds(() -> putAll(store, id, m, size, sources));
                int n = requests[0]; // as many reads as redis-benchmark's GET test of this round
                double get = n / seconds(() -> getAll(store, id, blocks, n, size, slots));
                log.printf(Locale.ROOT, "      strata %d KiB: put %.0f blocks/s, get %.0f blocks/s%n", size >> 10, put, get);
                return new double[] {put, get};
            });
            List<Figure> figures = new ArrayList<>();
            for (int phase = 0; phase < 2; phase++) {
                boolean put = phase == 0;
                Figure f = Figure.paired(figureName(put, size), "blocks/s", baseline(put), phases[phase], GOAL);
                double strata = f.value();
                double redis = f.baselineValue();
                figures.add(f
                        .withNote(String.format(Locale.ROOT, "%.0f MB/s of block bytes against %.0f MB/s; %s of %d KiB per run"
                                        + " on distinct keys, %d requests in flight; redis-benchmark %s, its rates"
                                        + " within %.1f%% (its 250 ms clock); 3 primaries with 1 replica each on this machine;"
                                        + " %d paired rounds", strata * size / 1e6, redis * size / 1e6,
                                put ? newKeys[0] + " blocks written" : requests[0] + " reads of " + blocks + " blocks", size >> 10, IN_FLIGHT,
                                put ? String.format(Locale.ROOT, "%d SETs of new keys per run, none evicted", newKeys[0])
                                        : String.format(Locale.ROOT, "%d requests per test picking among as many keys as there are blocks (-r %d on"
                                                + " each of %d primaries), at least %.2f%% of its GETs finding their key", requests[0],
                                        keysPerPrimary, primaries, 100 * leastHits[0]),
                                100 * uncertainty[0], rounds)));
            }
            return figures;
        }
    }

    /** The key of block {@code i} of run {@code run}. */
    private static ObjectKey key(long run, int i) {
        return new ObjectKey(0x434C_5553_0000_0000L | run, 0x9E37_79B9_7F4A_7C15L * (i + 1));
    }

    /**
     * Publishes blocks 0..blocks-1 of run {@code run} from this thread and waits until the cluster
     * has answered every write ({@link ClusterBlockStore#awaitWrites}). The store's window holds
     * {@link #IN_FLIGHT} values; a publish that finds it full is dropped (FULL) and offered again
     * once an answer has made room, so that the window stays full and every block is written once.
     */
    private static void putAll(ClusterBlockStore store, long run, int blocks, long size, MemorySegment sources) {
        long publishedBefore = store.metrics().published();
        for (int i = 0; i < blocks; i++) {
            List<MemorySegment> src = List.of(sources.asSlice((i % SOURCES) * size, size));
            PublishStatus st;
            long deadline = System.nanoTime() + TIMEOUT.toNanos(); // for this block to find room
            while ((st = store.publish(key(run, i), src)) == PublishStatus.FULL) {
                if (System.nanoTime() > deadline || !store.awaitWriteRoom(TIMEOUT)) {
                    throw new IllegalStateException("the store's write window stayed full for " + TIMEOUT.toSeconds() + " s at block " + i
                            + " of " + blocks);
                }
            }
            if (st != PublishStatus.PUBLISHED) {
                throw new IllegalStateException("block " + i + " of " + blocks + " was not sent (" + st + ")");
            }
        }
        if (!store.awaitWrites(TIMEOUT)) {
            throw new IllegalStateException("writes still unanswered " + TIMEOUT.toSeconds() + " s after the last of " + blocks + " blocks");
        }
        long written = store.metrics().published() - publishedBefore;
        if (written != blocks) {
            throw new IllegalStateException(written + " of " + blocks + " blocks of " + (size >> 10)
                    + " KiB were written (the others failed or were already there): the put rate would not be a rate of writes");
        }
    }

    /**
     * Reads {@code reads} blocks of run {@code run}, blocks 0..blocks-1 round and round (read
     * {@code i} is block {@code i % blocks}), each into its block's slot, with
     * {@link ClusterBlockStore#readAsync}, {@link #IN_FLIGHT} outstanding: this thread starts
     * {@link #IN_FLIGHT} chains, and each read that completes starts the chain's next (as
     * redis-benchmark sends a connection's next request when an answer comes in), so that no
     * other thread stands between an answer and the next request.
     */
    private static void getAll(ClusterBlockStore store, long run, int blocks, int reads, long size, MemorySegment slots) {
        AtomicInteger next = new AtomicInteger();
        AtomicInteger missed = new AtomicInteger();
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(reads);
        class Chain {
            void read(int i) {
                int block = i % blocks;
                store.readAsync(key(run, block), List.of(slots.asSlice(block * size, size))).whenComplete((hit, error) -> {
                    if (error != null || !Boolean.TRUE.equals(hit)) {
                        missed.incrementAndGet();
                    }
                    done.countDown();
                    int n = next.getAndIncrement();
                    if (n < reads) {
                        read(n);
                    }
                });
            }
        }
        Chain chain = new Chain();
        for (int c = 0; c < IN_FLIGHT; c++) {
            int n = next.getAndIncrement();
            if (n < reads) {
                chain.read(n);
            }
        }
        try {
            long wait = TIMEOUT.toNanos() + reads * TimeUnit.MILLISECONDS.toNanos(20); // 20 ms a read: far above any healthy rate
            if (!done.await(wait, TimeUnit.NANOSECONDS)) {
                throw new IllegalStateException(done.getCount() + " of " + reads + " reads still unanswered "
                        + TimeUnit.NANOSECONDS.toSeconds(wait) + " s after the first was sent");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading from the cluster", e);
        }
        if (missed.get() > 0) {
            throw new IllegalStateException(missed.get() + " of " + reads + " reads of published blocks of " + (size >> 10)
                    + " KiB found no value");
        }
    }

    private static double seconds(Runnable r) {
        long start = System.nanoTime();
        r.run();
        return (System.nanoTime() - start) / 1e9;
    }

    private static void flush(String node, String password) {
        try {
            RedisBenchmark.flushAll(node, password);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static RedisBenchmark.NewKeys setNewKeys(String node, String password, long valueBytes, int requests) {
        try {
            return RedisBenchmark.setNewKeys(node, password, valueBytes, DEPTH, CONNECTIONS, requests);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static RedisBenchmark.Rates redisBenchmark(String node, String password, long valueBytes, int requests, int keysPerPrimary) {
        try {
            return RedisBenchmark.run(node, password, valueBytes, DEPTH, CONNECTIONS, requests, keysPerPrimary);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
