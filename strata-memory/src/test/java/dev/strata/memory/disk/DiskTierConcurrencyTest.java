package dev.strata.memory.disk;

import dev.strata.memory.Allocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several threads write, read, rewrite and free their own objects in one tier at once (more
 * threads than staging buffers, so staged transfers also wait for buffers); every read is
 * verified against the thread's own copy, and the occupancy balances at the end.
 */
class DiskTierConcurrencyTest {

    private static final int THREADS = 6;
    private static final int STEPS = 150;

    @Test
    void manyThreadsMoveDifferentObjectsAtOnceWithoutMixingThem(@TempDir Path dir) throws Exception {
        runWorkers(DiskTier.open(DiskTierOptions.in(dir, 64L << 20).name("disk-mt").dataFiles(4)
                .stagingBuffers(4).stagingBufferSize(64 * 1024).deleteOnClose(true)));
    }

    @Test
    void manyThreadsInBufferedMode(@TempDir Path dir) throws Exception {
        runWorkers(DiskTier.open(DiskTierOptions.in(dir, 64L << 20).name("disk-mt-b").dataFiles(2).directIo(false)
                .stagingBuffers(3).stagingBufferSize(64 * 1024).deleteOnClose(true)));
    }

    private static void runWorkers(DiskTier tier) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try (tier; Arena arena = Arena.ofShared()) {
            CyclicBarrier start = new CyclicBarrier(THREADS);
            List<Future<long[]>> results = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                long seed = 1000 + t;
                results.add(pool.submit(() -> worker(tier, arena, seed, start)));
            }
            long writes = 0;
            long reads = 0;
            for (Future<long[]> f : results) {
                long[] counts = f.get(120, TimeUnit.SECONDS);
                writes += counts[0];
                reads += counts[1];
            }
            assertThat(tier.used()).as("every worker freed all it allocated").isZero();
            assertThat(tier.stats().allocations()).isZero();
            assertThat(tier.stats().writeOps()).isEqualTo(writes);
            assertThat(tier.stats().readOps()).isEqualTo(reads);
        } finally {
            pool.shutdownNow();
        }
    }

    /** Returns {writes, reads}. */
    private static long[] worker(DiskTier tier, Arena arena, long seed, CyclicBarrier start) throws Exception {
        SplittableRandom r = new SplittableRandom(seed);
        Map<Long, byte[]> mine = new HashMap<>(); // handle -> expected bytes
        long writes = 0;
        long reads = 0;
        start.await();
        for (int step = 0; step < STEPS; step++) {
            int action = mine.isEmpty() ? 0 : r.nextInt(4);
            if (action == 0 || action == 1) { // new object, or rewrite of an existing one
                int size = 1 + r.nextInt(180_000);
                long handle;
                if (action == 1) {
                    handle = mine.keySet().stream().skip(r.nextInt(mine.size())).findFirst().orElseThrow();
                    size = (int) Math.min(size, tier.allocationSize(handle));
                } else {
                    handle = tier.allocate(size);
                    assertThat(handle).isNotEqualTo(Allocator.FULL);
                }
                byte[] data = DiskTestSupport.randomBytes(size, r);
                MemorySegment src = r.nextBoolean() ? MemorySegment.ofArray(data)
                        : arena.allocate(size, 4096).copyFrom(MemorySegment.ofArray(data));
                tier.write(handle, src);
                writes++;
                mine.put(handle, data);
            } else if (action == 2) { // read back and verify
                long handle = mine.keySet().stream().skip(r.nextInt(mine.size())).findFirst().orElseThrow();
                byte[] expected = mine.get(handle);
                MemorySegment dst = r.nextBoolean() ? MemorySegment.ofArray(new byte[expected.length])
                        : arena.allocate(expected.length + 1, 4096).asSlice(r.nextInt(2), expected.length);
                assertThat(tier.read(handle, dst)).isTrue();
                reads++;
                assertThat(dst.mismatch(MemorySegment.ofArray(expected))).as("seed %d handle %d", seed, handle).isEqualTo(-1L);
            } else { // free
                long handle = mine.keySet().stream().skip(r.nextInt(mine.size())).findFirst().orElseThrow();
                tier.free(handle);
                mine.remove(handle);
            }
        }
        for (Map.Entry<Long, byte[]> e : mine.entrySet()) {
            MemorySegment dst = MemorySegment.ofArray(new byte[e.getValue().length]);
            assertThat(tier.read(e.getKey(), dst)).isTrue();
            reads++;
            assertThat(dst.mismatch(MemorySegment.ofArray(e.getValue()))).isEqualTo(-1L);
            tier.free(e.getKey());
        }
        return new long[] {writes, reads};
    }
}
