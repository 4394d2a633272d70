package dev.strata.node.daemon;

import dev.strata.cache.ObjectKey;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.node.client.NodeAccess;
import dev.strata.node.rpc.RpcClientOptions;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;

/** Pool and rpc paths under /dev/shm, the identity the tests use, block contents derived from the key. */
final class NodeTestSupport implements AutoCloseable {
    static final ObjectKey MODEL = new ObjectKey(0x1111_2222_3333_4444L, 0x5555_6666_7777_8888L);
    static final int HASH_VERSION = 2;
    private static final AtomicInteger COUNTER = new AtomicInteger();

    final Path pool;
    final Path rpc;

    NodeTestSupport(String test) {
        String id = test + "-" + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet();
        pool = Path.of("/dev/shm", "strata-node-" + id + ".pool");
        rpc = Path.of("/dev/shm", "strata-node-" + id + ".rpc");
    }

    NodeConfig.Builder daemonConfig(long capacity) {
        NodeConfig.Builder b = NodeConfig.builder().poolName("nodetest").poolPath(pool).capacity(capacity).chunkSize(4096)
                .hashVersion(HASH_VERSION).modelFingerprint(MODEL).reapInterval(Duration.ofMillis(200));
        b.rpc().path(rpc).channels(4).slotsPerChannel(16).payloadBytes(128).livenessInterval(Duration.ofMillis(50));
        return b;
    }

    /** Options to reach the daemon's index (or run it embedded on the same pool). */
    NodeAccess.Options access(NodeAccess.Mode mode, long capacity) {
        PoolConfig poolConfig = PoolConfig.builder("nodetest").path(pool).capacity(capacity).chunkSize(4096)
                .rootRegionSize(dev.strata.node.index.PoolBlockIndex.suggestedRegionSize(capacity, 4096,
                        PoolConfig.DEFAULT_PROCESS_SLOTS))
                .conclude();
        return new NodeAccess.Options(mode, poolConfig, rpc, HASH_VERSION, MODEL, RpcClientOptions.defaults(),
                Duration.ofSeconds(10), dev.strata.cache.EvictionSink.NONE);
    }

    static ObjectKey key(int i) {
        return new ObjectKey(0x7E57_0000_0000_0000L | i, ObjectKey.hash64(i, 99));
    }

    /** The bytes of block {@code key}: seeded by the key, never all zero, an odd length. */
    static MemorySegment content(ObjectKey key, int length) {
        byte[] b = new byte[length];
        new SplittableRandom(key.hash64()).nextBytes(b);
        b[0] |= 1;
        return MemorySegment.ofArray(b);
    }

    @Override
    public void close() throws java.io.IOException {
        Files.deleteIfExists(pool);
        Files.deleteIfExists(rpc);
        Files.deleteIfExists(rpc.resolveSibling(rpc.getFileName() + ".lock"));
    }
}
