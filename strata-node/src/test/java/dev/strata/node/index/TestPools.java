package dev.strata.node.index;

import dev.strata.cache.ObjectKey;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;

/** Pool files under /dev/shm for the index tests, block contents that are a function of the key. */
final class TestPools implements AutoCloseable {
    private static final AtomicInteger COUNTER = new AtomicInteger();
    static final ObjectKey MODEL = new ObjectKey(0x5151_7777_0000_1234L, 0x0BAD_F00D_1234_5678L);
    static final int HASH_VERSION = 3;

    final String name;
    final Path path;

    TestPools(String test) {
        name = "idx-" + test + "-" + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet();
        path = Path.of("/dev/shm", "strata-" + name + ".pool");
    }

    PoolConfig.Builder config(long capacity, long chunk) {
        return PoolConfig.builder(name).path(path).capacity(capacity).chunkSize(chunk)
                .rootRegionSize(PoolBlockIndex.suggestedRegionSize(capacity, chunk, PoolConfig.DEFAULT_PROCESS_SLOTS))
                .sweepInterval(Duration.ZERO);
    }

    PoolTier open(long capacity, long chunk) {
        return PoolTier.open(config(capacity, chunk).conclude());
    }

    static BlockIndexConfig.Builder identity() {
        return BlockIndexConfig.builder(HASH_VERSION, MODEL);
    }

    /** The block's bytes: seeded by the key, never all zero. */
    static byte[] content(long keyHigh, long keyLow, int length) {
        byte[] b = new byte[length];
        new SplittableRandom(ObjectKey.hash64(keyHigh, keyLow)).nextBytes(b);
        b[0] |= 1;
        return b;
    }

    static MemorySegment contentSegment(ObjectKey key, int length) {
        return MemorySegment.ofArray(content(key.high(), key.low(), length));
    }

    @Override
    public void close() throws IOException {
        Files.deleteIfExists(path);
    }
}
