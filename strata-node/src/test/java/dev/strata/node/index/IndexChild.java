package dev.strata.node.index;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * A process that attaches to a pool's block index and does one job, for the multi-process tests.
 * Usage: {@code IndexChild <job> <pool name> <pool path> args...}; it reports on stdout.
 *
 * <ul>
 *   <li>{@code write <seed> <millis> <keys>}: publishes blocks of random keys of the key space
 *       for that long; prints {@code published N} at the end.</li>
 *   <li>{@code read <seed> <millis> <keys>}: reads random keys for that long, verifying every
 *       block's bytes (a function of its key; the checksum is verified by the read itself);
 *       holds a few pins on blocks for a while; exits 3 on wrong bytes.</li>
 *   <li>{@code hold <key>}: acquires a pin on the key's block, prints {@code held}, sleeps.</li>
 *   <li>{@code reserve <key>}: reserves the key, prints {@code reserved}, sleeps.</li>
 *   <li>{@code verify <keys>}: reads every published key of the key space, prints {@code verified N}.</li>
 * </ul>
 */
public final class IndexChild {
    private IndexChild() {
    }

    static ObjectKey key(int i) {
        return new ObjectKey(0x7A7A_0000_0000_0000L | i, 0xC2B2_AE3D_27D4_EB4FL * (i + 11));
    }

    /** Block length, a function of the key: odd sizes from 1 byte to about 160 KiB. */
    static int length(int i) {
        return 1 + (int) Math.floorMod(key(i).hash64(), 160 * 1024L);
    }

    static Process start(String... args) throws IOException {
        String java = System.getProperty("strata.java");
        if (java == null || java.isBlank()) {
            java = ProcessHandle.current().info().command().orElse("java");
        }
        List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "--add-modules=jdk.incubator.vector", "-Xmx96m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), IndexChild.class.getName()));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = System.out;
        PoolConfig config = PoolConfig.builder(args[1]).path(Path.of(args[2])).mode(PoolConfig.Mode.ATTACH)
                .sweepInterval(Duration.ZERO).conclude();
        int status;
        try (PoolTier tier = PoolTier.open(config);
             PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
            PoolSharedBlockStore store = new PoolSharedBlockStore(index);
            out.println("attached slot " + tier.processSlot());
            out.flush();
            status = switch (args[0]) {
                case "write" -> write(store, Long.parseLong(args[3]), Long.parseLong(args[4]), Integer.parseInt(args[5]), out);
                case "read" -> read(store, Long.parseLong(args[3]), Long.parseLong(args[4]), Integer.parseInt(args[5]), out);
                case "hold" -> hold(index, Integer.parseInt(args[3]), out);
                case "reserve" -> reserve(index, Integer.parseInt(args[3]), out);
                case "verify" -> verify(store, Integer.parseInt(args[3]), out);
                default -> throw new IllegalArgumentException("unknown job " + args[0]);
            };
            out.flush();
        }
        System.exit(status);
    }

    private static int write(PoolSharedBlockStore store, long seed, long millis, int keys, PrintStream out) {
        SplittableRandom random = new SplittableRandom(seed);
        long end = System.nanoTime() + millis * 1_000_000;
        int published = 0;
        int full = 0;
        while (System.nanoTime() < end) {
            int i = random.nextInt(keys);
            PublishStatus s = store.publish(key(i), List.of(MemorySegment.ofArray(
                    TestPools.content(key(i).high(), key(i).low(), length(i)))));
            if (s == PublishStatus.PUBLISHED) {
                published++;
                if (published % 20 == 1) { // from the first block on: a slow start still reports progress
                    out.println("progress " + published);
                    out.flush();
                }
            } else if (s == PublishStatus.FULL) {
                full++;
            }
        }
        out.println("published " + published + " full " + full);
        return 0;
    }

    private static int read(PoolSharedBlockStore store, long seed, long millis, int keys, PrintStream out) {
        SplittableRandom random = new SplittableRandom(seed);
        PoolBlockIndex index = (PoolBlockIndex) store.index();
        long start = System.nanoTime();
        long end = start + millis * 1_000_000;
        long cap = start + 5 * millis * 1_000_000; // writers' JVMs may start seconds late on a loaded machine
        int hits = 0;
        int misses = 0;
        long[] location = new long[BlockIndex.LOCATION_LONGS];
        byte[] buffer = new byte[200 * 1024];
        // reads for the whole window, and on past it until a first block was found (bounded by the cap):
        // a reader whose window closed before any writer published would check nothing
        while (System.nanoTime() < end || (hits == 0 && System.nanoTime() < cap)) {
            int i = random.nextInt(keys);
            byte[] expected = TestPools.content(key(i).high(), key(i).low(), length(i));
            if (random.nextInt(4) == 0) {
                // hold a pin across a pause: the block must stay while pinned
                long pin = index.acquire(key(i).high(), key(i).low(), location);
                if (pin > 0) {
                    LockSupport.parkNanos(random.nextInt(3_000_000));
                    MemorySegment dst = MemorySegment.ofArray(buffer).asSlice(0, location[BlockIndex.LENGTH]);
                    boolean ok = index.tier().read(location[BlockIndex.HANDLE], dst);
                    if (!ok || !Arrays.equals(Arrays.copyOf(buffer, expected.length), expected)
                            || location[BlockIndex.LENGTH] != expected.length) {
                        out.println("WRONG pinned block " + i + " ok=" + ok);
                        return 3;
                    }
                    if (index.release(pin) != BlockIndex.OK) {
                        out.println("WRONG pin of block " + i + " expired");
                        return 3;
                    }
                    hits++;
                } else {
                    misses++;
                }
                continue;
            }
            byte[] back = new byte[expected.length];
            if (store.read(key(i), List.of(MemorySegment.ofArray(back)))) {
                if (!Arrays.equals(back, expected)) {
                    out.println("WRONG bytes of block " + i);
                    return 3;
                }
                hits++;
                if (hits % 50 == 1) {
                    out.println("progress " + hits);
                    out.flush();
                }
            } else {
                misses++;
            }
        }
        out.println("read hits " + hits + " misses " + misses);
        return 0;
    }

    private static int hold(PoolBlockIndex index, int i, PrintStream out) {
        long pin = index.acquire(key(i).high(), key(i).low(), new long[BlockIndex.LOCATION_LONGS]);
        out.println(pin > 0 ? "held " + pin : "missing " + pin);
        out.flush();
        LockSupport.parkNanos(60_000_000_000L);
        return 0;
    }

    private static int reserve(PoolBlockIndex index, int i, PrintStream out) {
        long handle = index.reserve(key(i).high(), key(i).low(), length(i));
        out.println("reserved " + handle);
        out.flush();
        LockSupport.parkNanos(60_000_000_000L);
        return 0;
    }

    private static int verify(PoolSharedBlockStore store, int keys, PrintStream out) {
        int verified = 0;
        for (int i = 0; i < keys; i++) {
            byte[] expected = TestPools.content(key(i).high(), key(i).low(), length(i));
            byte[] back = new byte[expected.length];
            if (store.read(key(i), List.of(MemorySegment.ofArray(back)))) {
                if (!Arrays.equals(back, expected)) {
                    out.println("WRONG bytes of block " + i);
                    return 3;
                }
                verified++;
            }
        }
        out.println("verified " + verified);
        return 0;
    }
}
