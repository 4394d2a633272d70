package dev.strata.node.shm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.memory.Sizes;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.shm.ShmFiles;
import dev.strata.node.peer.FixedDemand;
import dev.strata.node.peer.PeerAgent;
import dev.strata.node.peer.PeerAgentConfig;
import dev.strata.node.rpc.RpcServer;
import dev.strata.node.rpc.RpcServerConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Every shared file Strata creates, and the lock file beside each owned one, is readable and
 * writable by its owner only (mode 0600), whatever the process's umask would give.
 */
class SharedFilePermissionsTest {
    private final String tag = "perm-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    private final Path pool = Path.of("/dev/shm", "strata-" + tag + ".pool");
    private final Path rpc = Path.of("/dev/shm", "strata-" + tag + ".rpc");
    private final Path lend = Path.of("/dev/shm", "strata-" + tag + ".lend");

    @AfterEach
    void removeFiles() throws IOException {
        for (Path p : new Path[] {pool, rpc, lend}) {
            Files.deleteIfExists(p);
            Files.deleteIfExists(ShmFiles.lockPathOf(p));
        }
    }

    @Test
    void poolFileIsOwnerOnly() throws IOException {
        PoolTier tier = PoolTier.open(PoolConfig.builder(tag).path(pool).capacity(2 * Sizes.MiB).chunkSize(64 * Sizes.KiB)
                .sweepInterval(Duration.ZERO).conclude());
        try {
            assertThat(mode(pool)).isEqualTo("rw-------");
        } finally {
            tier.destroy();
        }
        assertThat(pool).doesNotExist();
    }

    @Test
    void rpcRegionAndItsLockFileAreOwnerOnly() throws IOException {
        try (RpcServer server = RpcServer.create(RpcServerConfig.builder().path(rpc).channels(1).slotsPerChannel(4)
                .payloadBytes(64).conclude(), call -> { })) {
            server.start();
            assertThat(mode(rpc)).isEqualTo("rw-------");
            assertThat(mode(ShmFiles.lockPathOf(rpc))).isEqualTo("rw-------");
        }
        assertThat(rpc).doesNotExist();
    }

    @Test
    void lendingFileAndItsLockFileAreOwnerOnly() throws IOException {
        try (PeerAgent agent = PeerAgent.create(PeerAgentConfig.builder().file(lend).budget(4 * 4096).regionSize(4096)
                .demand(new FixedDemand(0)).conclude())) {
            assertThat(agent).isNotNull();
            assertThat(mode(lend)).isEqualTo("rw-------");
            assertThat(mode(ShmFiles.lockPathOf(lend))).isEqualTo("rw-------");
        }
        assertThat(lend).doesNotExist();
    }

    private static String mode(Path p) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
    }
}
