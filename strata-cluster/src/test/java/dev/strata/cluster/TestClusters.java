package dev.strata.cluster;

import java.nio.file.Path;
import java.time.Duration;

/** Test fixture: starts a {@link LocalRedisCluster} on free ports in a directory. */
final class TestClusters {
    private TestClusters() {
    }

    /** Starts a cluster of {@code primaries} × (1 + {@code replicas}) nodes with a password, on ports found free. */
    static LocalRedisCluster start(Path dir, int primaries, int replicas) {
        return start(dir, primaries, replicas, LocalRedisCluster.DEFAULT_MAXMEMORY);
    }

    /** As {@link #start(Path, int, int)}, each node keeping at most {@code maxmemory} bytes (allkeys-lru). */
    static LocalRedisCluster start(Path dir, int primaries, int replicas, long maxmemory) {
        return LocalRedisCluster.create(dir, primaries, replicas, LocalRedisCluster.freePortBase(primaries * (1 + replicas)), true,
                maxmemory, "allkeys-lru").start(Duration.ofSeconds(30));
    }

    /** As {@link #start(Path, int, int)}, reached with {@code tls} (certificates made in {@code dir/tls}). */
    static LocalRedisCluster start(Path dir, int primaries, int replicas, LocalRedisCluster.Tls tls) {
        return LocalRedisCluster.create(dir, primaries, replicas, LocalRedisCluster.freePortBase(primaries * (1 + replicas)), true,
                LocalRedisCluster.DEFAULT_MAXMEMORY, "allkeys-lru", tls).start(Duration.ofSeconds(30));
    }
}
