package dev.strata.node.peer;

import static dev.strata.node.peer.PeerTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.strata.cache.peer.LentRegion;
import dev.strata.memory.shm.Doorbell;
import dev.strata.memory.shm.ShmHeader;
import dev.strata.node.rpc.ChildJvm;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The lending file's doorbells: with the agent ticking and the lender polling only once a minute,
 * a revocation still reaches the borrower and its acknowledgement still reaches the agent, in one
 * process and across two; a file of the layout before the doorbells is still read, by polling.
 */
class PeerDoorbellTest {
    static final long REGION = 4096 + 64;
    /** Far beyond every wait of these tests: an event that arrives came through a doorbell, not a poll or tick. */
    static final Duration SLOW = Duration.ofMinutes(1);
    static final long EVENT_MILLIS = 20_000;

    private final Path path = newFile("bell");
    private final Path demandFile = Path.of(path + ".demand");

    @AfterEach
    void cleanUp() throws Exception {
        delete(path);
        Files.deleteIfExists(demandFile);
    }

    /** A lender that polls once a minute and never loses the agent to a stale heartbeat within the test. */
    private ShmPeerLender slowLender() {
        return ShmPeerLender.open(path, 1, ShmLenderOptions.defaults().withName("slow").withPollInterval(SLOW)
                .withHeartbeatTimeout(Duration.ofMinutes(10)).withLivenessInterval(SLOW));
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(EVENT_MILLIS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + EVENT_MILLIS + " ms: " + what);
            }
            Thread.sleep(2);
        }
    }

    @Test
    void revocationAndAcknowledgementTravelByDoorbellBetweenASlowAgentAndASlowLender() throws Exception {
        assumeThat(Doorbell.available()).as(Doorbell.unavailableReason()).isTrue();
        SettableDemand demand = new SettableDemand();
        PeerAgentConfig config = PeerAgentConfig.builder().file(path).budget(4 * REGION).regionSize(REGION).demand(demand)
                .grace(SLOW).tick(SLOW).conclude();
        try (PeerAgent agent = PeerAgent.start(config, null); ShmPeerLender lender = slowLender()) {
            assertThat(lender.doorbells()).isTrue();
            RecordedEvents events = new RecordedEvents();
            lender.listen(events);
            LentRegion r = lender.borrow(4 * REGION);
            assertThat(r).isNotNull();
            demand.bytes.set(REGION);
            lender.wakeAgent(); // the agent's next tick is a minute away otherwise
            assertThat(events.next(EVENT_MILLIS)).as("the revocation, rung to a lender polling once a minute")
                    .isEqualTo("revoke 0");
            lender.acknowledge(r);
            await("the agent holds the acknowledged run (rung, not at its next tick)", () -> agent.stats().held() == 1);
            assertThat(agent.stats().acknowledged()).isEqualTo(1);
            assertThat(agent.stats().fences()).isZero();
        }
    }

    @Test
    void aRevocationAcrossProcessesReachesTheBorrowerByDoorbell() throws Exception {
        assumeThat(Doorbell.available()).as(Doorbell.unavailableReason()).isTrue();
        demand(0);
        try (ChildJvm agent = ChildJvm.start(PeerAgentMain.class, path.toString(), "4", Long.toString(REGION),
                demandFile.toString(), Long.toString(SLOW.toMillis()), Long.toString(SLOW.toMillis()))) {
            agent.expect("strata peer ready", 30_000);
            try (ShmPeerLender lender = slowLender()) {
                RecordedEvents events = new RecordedEvents();
                lender.listen(events);
                LentRegion r = lender.borrow(2 * REGION);
                LentRegion s = lender.borrow(2 * REGION);
                assertThat(r.enter()).isTrue();
                stamp(r.memory(), r.lease().region(), r.lease().epoch(), 3);
                r.exit();
                long asked = System.nanoTime();
                demand(2 * REGION);
                lender.wakeAgent();
                String revoked = events.next(EVENT_MILLIS);
                assertThat(revoked).as("one run of two revoked, rung across processes").isIn("revoke 0", "revoke 2");
                long[] at = events.revokedAt.poll();
                assertThat(at[0]).as("the agent's revocation stamp, by the clock of the other process, after the demand"
                        + " and before the revocation reached this one").isBetween(asked, at[1]);
                LentRegion victim = revoked.equals("revoke 0") ? r : s;
                lender.acknowledge(victim);
                await("the agent in the other process holds the acknowledged run", () -> lender.stats().held() == 2);
                LendingStats stats = lender.stats();
                assertThat(stats.acknowledged()).isEqualTo(1);
                assertThat(stats.fences()).isZero();
                assertThat(stats.lent()).isEqualTo(1);
                assertThat(events.events).as("no fence, no loss").isEmpty();
            }
        }
    }

    @Test
    void aFileOfTheLayoutBeforeTheDoorbellsIsStillReadAndPolled() throws Exception {
        SettableDemand demand = new SettableDemand();
        try (PeerAgent agent = PeerAgent.create(PeerAgentConfig.builder().file(path).budget(2 * REGION).regionSize(REGION)
                .demand(demand).grace(SLOW).conclude())) {
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE)) {
                ByteBuffer version = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN)
                        .putLong(0, (long) LendingFileLayout.MAJOR << 32); // minor 0
                ch.write(version, ShmHeader.VERSION_OFFSET);
            }
            try (ShmPeerLender lender = ShmPeerLender.open(path, 2, ShmLenderOptions.defaults())) {
                assertThat(lender.doorbells()).as("a minor-0 file has no doorbells").isFalse();
                RecordedEvents events = new RecordedEvents();
                lender.listen(events);
                LentRegion r = lender.borrow(2 * REGION);
                demand.bytes.set(REGION);
                agent.step();
                assertThat(events.next(EVENT_MILLIS)).as("polled for").isEqualTo("revoke 0");
                lender.acknowledge(r);
                agent.step();
                assertThat(agent.stats().acknowledged()).isEqualTo(1);
                assertThat(agent.stats().held()).isEqualTo(1);
            }
        }
    }

    private void demand(long bytes) throws Exception {
        Path temp = Path.of(demandFile + ".tmp");
        Files.writeString(temp, Long.toString(bytes), StandardCharsets.UTF_8);
        Files.move(temp, demandFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
