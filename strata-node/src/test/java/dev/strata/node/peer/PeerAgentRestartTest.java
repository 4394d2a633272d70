package dev.strata.node.peer;

import static dev.strata.node.peer.PeerTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.Durability;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerClientStats;
import dev.strata.cache.peer.PeerLease;
import dev.strata.cache.peer.RevocationReason;
import dev.strata.node.rpc.ChildJvm;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A {@code strata peer} agent JVM killed and started again on the same lending file, as a user
 * would restart it, under a {@link PeerClient} of this JVM: the client loses the peer gracefully,
 * then re-attaches to the new agent and borrows, writes and reads through it again.
 */
class PeerAgentRestartTest {
    static final long REGION = 64 * 1024;
    static final int REGIONS = 8;
    static final long WAIT_MILLIS = 15_000;

    private final Path path = newFile("restart");
    private final Path demandFile = Path.of(path + ".demand");

    @AfterEach
    void cleanUp() throws Exception {
        delete(path);
        Files.deleteIfExists(demandFile);
    }

    private ChildJvm agent() throws Exception {
        Path temp = Path.of(demandFile + ".tmp");
        Files.writeString(temp, "0", StandardCharsets.UTF_8);
        Files.move(temp, demandFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        ChildJvm agent = ChildJvm.start(PeerAgentMain.class, path.toString(), Integer.toString(REGIONS), Long.toString(REGION),
                demandFile.toString(), "1000");
        agent.expect("strata peer ready", 30_000);
        return agent;
    }

    private static ShmLenderOptions options() {
        return ShmLenderOptions.defaults().withName("agent").withReattachInterval(Duration.ofMillis(50));
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + WAIT_MILLIS + " ms: " + what);
            }
            Thread.sleep(5);
        }
    }

    private static PeerClientStats.Peer peer(PeerClient client) {
        return client.stats().peer(0);
    }

    /** Borrows {@code size} bytes, writes {@code fill} over them and reads them back; the lease. */
    private static PeerLease borrowAndWrite(PeerClient client, long size, byte fill) {
        Optional<PeerLease> lease = client.alloc(size, LeaseHints.of(Durability.LOSSY));
        assertThat(lease).as("a borrow from the live agent").isPresent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(size);
            data.fill(fill);
            assertThat(client.write(lease.get(), 0, data)).isTrue();
            MemorySegment back = arena.allocate(size);
            assertThat(client.read(lease.get(), 0, back)).isTrue();
            assertThat(back.mismatch(data)).as("the bytes written read back").isEqualTo(-1);
        }
        return lease.get();
    }

    /** The regions lent in the lending file now at the path, as a second lender mapping it sees them. */
    private long lentAtPath() {
        try (ShmPeerLender view = ShmPeerLender.open(path, 9)) {
            return view.stats().lent();
        }
    }

    @Test
    void aClientReattachesToAnAgentRestartedOnTheSameFile() throws Exception {
        ChildJvm first = agent();
        try (PeerClient client = PeerClient.of(List.of(ShmPeerLender.open(path, 0, options())), "best-fit")) {
            PeerLease old = borrowAndWrite(client, 2 * REGION, (byte) 0x5A);
            RevocationReason[] reason = new RevocationReason[1];
            client.onRevoke(old, (l, r) -> reason[0] = r);

            first.kill();
            await("the peer seen dead", () -> !peer(client).alive());
            assertThat(client.alloc(REGION, LeaseHints.of(Durability.LOSSY))).as("no borrow from a dead peer").isEmpty();
            try (Arena arena = Arena.ofConfined()) {
                assertThat(client.read(old, 0, arena.allocate(16))).as("the dead agent's lease reads nothing").isFalse();
            }
            await("the old lease revoked", () -> reason[0] != null);
            assertThat(reason[0]).isEqualTo(RevocationReason.PEER_LOST);

            try (ChildJvm second = agent()) {
                await("the peer alive again", () -> peer(client).alive());
                PeerLease fresh = borrowAndWrite(client, 3 * REGION, (byte) 0x33);
                assertThat(fresh).isNotEqualTo(old);
                assertThat(lentAtPath()).as("the new lease lies in the new agent's file").isEqualTo(1);
                try (Arena arena = Arena.ofConfined()) {
                    assertThat(client.read(old, 0, arena.allocate(16))).as("the old lease stays dead").isFalse();
                }
                PeerClientStats.Peer p = peer(client);
                assertThat(p.reattachments()).isEqualTo(1);
                assertThat(p.revocations(RevocationReason.PEER_LOST)).isEqualTo(1);
                assertThat(client.stats().toPrometheus()).contains("strata_peer_reattach_total{peer=\"agent\"} 1")
                        .contains("strata_peer_alive{peer=\"agent\"} 1");
                client.free(fresh);
                client.checkInvariants();
            }
        } finally {
            first.close();
        }
    }

    /**
     * The client's liveness checks are too slow to see the first agent die before the second one
     * has replaced its file: the new file at the path is what tells the client.
     */
    @Test
    void anAgentRestartedBeforeItsDeathWasNoticedIsPickedUp() throws Exception {
        ChildJvm first = agent();
        ShmLenderOptions blind = options().withLivenessInterval(Duration.ofMinutes(10)).withHeartbeatTimeout(Duration.ofMinutes(10));
        try (PeerClient client = PeerClient.of(List.of(ShmPeerLender.open(path, 0, blind)), "best-fit")) {
            PeerLease old = borrowAndWrite(client, REGION, (byte) 0x11);
            first.kill();
            try (ChildJvm second = agent()) {
                await("the old lease revoked", () -> !client.valid(old));
                await("the peer alive again", () -> peer(client).alive() && peer(client).reattachments() == 1);
                PeerLease fresh = borrowAndWrite(client, 2 * REGION, (byte) 0x22);
                assertThat(lentAtPath()).as("the new lease lies in the new agent's file").isEqualTo(1);
                assertThat(peer(client).revocations(RevocationReason.PEER_LOST)).isEqualTo(1);
                client.free(fresh);
            }
        } finally {
            first.close();
        }
    }

    /** The dead agent's file is deleted (with its lock file); the peer stays absent, harmlessly, until a new file appears. */
    @Test
    void aFileDeletedAndCreatedAgainIsPickedUp() throws Exception {
        ChildJvm first = agent();
        try (PeerClient client = PeerClient.of(List.of(ShmPeerLender.open(path, 0, options())), "best-fit")) {
            borrowAndWrite(client, REGION, (byte) 0x44);
            first.kill();
            await("the peer seen dead", () -> !peer(client).alive());
            delete(path);
            Thread.sleep(300); // several re-attach attempts find no file
            assertThat(peer(client).alive()).isFalse();
            assertThat(client.alloc(REGION, LeaseHints.of(Durability.LOSSY))).isEmpty();
            try (ChildJvm second = agent()) {
                await("the peer alive again", () -> peer(client).alive());
                borrowAndWrite(client, REGION, (byte) 0x45);
                assertThat(lentAtPath()).isEqualTo(1);
                assertThat(peer(client).reattachments()).isEqualTo(1);
            }
        } finally {
            first.close();
        }
    }
}
