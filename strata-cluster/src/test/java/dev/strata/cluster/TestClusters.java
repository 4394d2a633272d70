package dev.strata.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

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
        int nodes = primaries * (1 + replicas);
        for (int attempt = 0; attempt < 50; attempt++) {
            int base = 20_000 + ThreadLocalRandom.current().nextInt(0, 30_000);
            if (free(base, nodes) && free(base + 10_000, nodes)) {
                return LocalRedisCluster.create(dir, primaries, replicas, base, true, maxmemory, "allkeys-lru").start(Duration.ofSeconds(30));
            }
        }
        throw new IllegalStateException("found no " + nodes + " free consecutive ports for a test cluster");
    }

    private static boolean free(int base, int count) {
        if (base + count > 65_535) {
            return false;
        }
        for (int p = base; p < base + count; p++) {
            try (ServerSocket s = new ServerSocket(p, 1, InetAddress.getByName(LocalRedisCluster.HOST))) {
                s.setReuseAddress(true);
            } catch (IOException e) {
                return false;
            }
        }
        return true;
    }
}
