package dev.strata.node.peer;

import static dev.strata.node.peer.PeerTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.peer.LentRegion;
import dev.strata.memory.shm.ShmFormatException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** One agent driven step by step and a lender in the same process: borrowing, revocation, fencing, loss. */
class PeerAgentTest {
    static final long REGION = 4096 + 64; // not a power of two
    /** Long enough that only the test's clock jump reaches a deadline, never a slow step on a loaded machine. */
    static final int GRACE_MILLIS = 10_000;

    private final Path path = newFile("agent");
    private final SettableDemand demand = new SettableDemand();
    private final JumpingClock clock = new JumpingClock();

    @AfterEach
    void cleanUp() throws Exception {
        delete(path);
    }

    private PeerAgent agent(long regions) {
        return PeerAgent.create(PeerAgentConfig.builder().file(path).budget(regions * REGION + 100).regionSize(REGION)
                .demand(demand).grace(Duration.ofMillis(GRACE_MILLIS)).clock(clock).conclude());
    }

    private ShmPeerLender lender() {
        return ShmPeerLender.open(path, 3, ShmLenderOptions.defaults().withName("agent-under-test"));
    }

    @Test
    void borrowsRunsOfRegionsWritesThemAndGivesThemBack() {
        try (PeerAgent agent = agent(8); ShmPeerLender lender = lender()) {
            assertThat(agent.geometry().regionCount()).isEqualTo(8);
            assertThat(lender.lendableBytes()).isEqualTo(8 * REGION);
            LentRegion one = lender.borrow(1);
            LentRegion run = lender.borrow(2 * REGION + 17); // three regions
            LentRegion two = lender.borrow(REGION + 1);
            assertThat(one.lease().size()).isEqualTo(1);
            assertThat(run.lease().size()).isEqualTo(2 * REGION + 17);
            assertThat(run.memory().byteSize()).isEqualTo(2 * REGION + 17);
            assertThat(run.lease().peer()).isEqualTo(3);
            assertThat(run.lease().epoch()).isEqualTo(1);
            assertThat(lender.lendableBytes()).isEqualTo(2 * REGION);
            assertThat(lender.borrow(3 * REGION)).as("no run of three FREE regions is left").isNull();
            assertThat(lender.borrow(9 * REGION)).as("more than the budget").isNull();
            assertThatThrownBy(() -> lender.borrow(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0 bytes");

            assertThat(run.enter()).isTrue();
            stamp(run.memory(), run.lease().region(), run.lease().epoch(), 1);
            run.exit();
            assertThat(two.enter()).isTrue();
            stamp(two.memory(), two.lease().region(), two.lease().epoch(), 1);
            two.exit();
            assertThat(run.enter()).isTrue();
            assertThat(verify(run.memory(), run.lease().region(), run.lease().epoch(), 1)).isNull();
            run.exit();

            LendingStats s = agent.stats();
            assertThat(s.lent()).isEqualTo(3);
            assertThat(s.members()).isEqualTo(3);
            assertThat(s.free()).isEqualTo(2);
            agent.step();
            assertThat(agent.stats().held()).as("no demand: nothing held").isZero();

            lender.giveBack(run);
            lender.giveBack(run); // idempotent
            assertThat(run.enter()).as("given back").isFalse();
            assertThat(lender.lendableBytes()).isEqualTo(5 * REGION);
            LentRegion again = lender.borrow(3 * REGION);
            assertThat(again.lease().region()).isEqualTo(run.lease().region());
            assertThat(again.lease().epoch()).as("a new lending of the same head has a new epoch").isEqualTo(2);
            assertThat(run.enter()).as("the old lease of a re-lent region").isFalse();
            assertThat(two.enter()).isTrue();
            assertThat(verify(two.memory(), two.lease().region(), two.lease().epoch(), 1)).isNull();
            two.exit();
        }
    }

    @Test
    void revocationStopsNewAccessesAndTheAcknowledgementWaitsForTheAccessUnderWay() throws Exception {
        try (PeerAgent agent = agent(8); ShmPeerLender lender = lender()) {
            RecordedEvents events = new RecordedEvents();
            lender.listen(events);
            LentRegion a = lender.borrow(2 * REGION);
            LentRegion b = lender.borrow(2 * REGION - 5);
            LentRegion c = lender.borrow(REGION + 3);
            for (LentRegion r : new LentRegion[] {a, b, c}) {
                assertThat(r.enter()).isTrue();
                stamp(r.memory(), r.lease().region(), r.lease().epoch(), 7);
                r.exit();
            }
            assertThat(c.enter()).as("an access under way when the revocation comes").isTrue();
            demand.bytes.set(4 * REGION - 1); // four regions: two free, then two more from a lent run
            agent.step();
            LendingStats s = agent.stats();
            assertThat(s.held()).isEqualTo(2);
            assertThat(s.revoking()).isEqualTo(1);
            assertThat(s.revocations()).isEqualTo(1);
            assertThat(events.next(5_000)).as("the newest run of two is revoked").isEqualTo("revoke " + c.lease().region());
            assertThat(c.enter()).as("no new access once revoking").isFalse();
            assertThat(a.enter()).isTrue();
            a.exit();

            CompletableFuture<Void> ack = CompletableFuture.runAsync(() -> lender.acknowledge(c));
            Thread.sleep(100);
            assertThat(ack).as("the acknowledgement waits for the access under way").isNotDone();
            agent.step();
            assertThat(verify(c.memory(), c.lease().region(), c.lease().epoch(), 7)).as("not reused yet").isNull();
            c.exit();
            ack.get(5, TimeUnit.SECONDS);
            agent.step();
            s = agent.stats();
            assertThat(s.held()).isEqualTo(4);
            assertThat(s.acknowledged()).isEqualTo(1);
            assertThat(s.fences()).isZero();
            assertThat(s.revoking()).isZero();
            assertThat(verify(c.memory(), c.lease().region(), c.lease().epoch(), 7)).as("reused by the agent").isNotNull();
            assertThat(lender.lendableBytes()).as("revoked regions go to the agent, not back to FREE").isZero();

            demand.bytes.set(0);
            agent.step();
            assertThat(agent.stats().held()).isZero();
            assertThat(lender.lendableBytes()).isEqualTo(4 * REGION);
            assertThat(events.events).as("no fence, no loss").isEmpty();
            assertThat(agent.stats().toPrometheus("gpu1")).contains("strata_peer_regions{peer=\"gpu1\",state=\"lent\"} 2")
                    .contains("strata_peer_acknowledged_total{peer=\"gpu1\"} 1").contains("strata_peer_fences_total{peer=\"gpu1\"} 0");
        }
    }

    @Test
    void aRevocationCarriesTheAgentsStampAndAFileWithoutOneGivesTheMomentTheRevocationArrived() throws Exception {
        try (PeerAgent agent = agent(4); ShmPeerLender lender = ShmPeerLender.open(path, 3, ShmLenderOptions.defaults(), false)) {
            RecordedEvents events = new RecordedEvents();
            lender.listen(events);
            LentRegion a = lender.borrow(2 * REGION);
            LentRegion b = lender.borrow(2 * REGION);
            long before = System.nanoTime();
            demand.bytes.set(2 * REGION);
            agent.step(); // revokes one run, stamped
            long stepped = System.nanoTime();
            Thread.sleep(20);
            lender.poll();
            long[] at = events.revokedAt.poll();
            assertThat(at).isNotNull();
            assertThat(at[0]).as("the agent's stamp, not the moment the lender polled").isBetween(before, stepped);
            LentRegion first = events.revoked.poll();
            lender.acknowledge(first);
            agent.step();

            LentRegion other = first == a ? b : a;
            demand.bytes.set(4 * REGION);
            agent.step(); // revokes the other run
            // an agent of minor 1 writes no stamps: the area stays zero
            try (var ch = java.nio.channels.FileChannel.open(path, java.nio.file.StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.allocate((int) (LendingFileLayout.HEADER_SIZE - LendingFileLayout.STAMPS_OFFSET)),
                        LendingFileLayout.STAMPS_OFFSET);
            }
            long polled = System.nanoTime();
            lender.poll();
            at = events.revokedAt.poll();
            assertThat(events.revoked.poll()).isSameAs(other);
            assertThat(at[0]).as("no stamp: the moment the lender saw the revocation").isBetween(polled, at[1]);
        }
    }

    @Test
    void aRevocationStampIsReadOnlyForItsOwnLendingAndOnlyIfPlausible() {
        LendingFileLayout.Geometry g = new LendingFileLayout.Geometry(4, REGION);
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            LendingTable table = new LendingTable(arena.allocate(g.totalSize(), 64), g);
            table.stampRevocation(1, 7, 123_456_789L);
            assertThat(table.revocationStamp(1, 7)).isEqualTo(123_456_789L);
            assertThat(table.revocationStamp(1, 8)).as("another epoch of the same head").isZero();
            assertThat(table.revocationStamp(2, 7)).isZero();
            long slot = LendingFileLayout.stampSlot(LendingFileLayout.stampKey(1, 7));
            long epoch = 8;
            while (LendingFileLayout.stampSlot(LendingFileLayout.stampKey(1, epoch)) != slot) {
                epoch++;
            }
            table.stampRevocation(1, epoch, 5L);
            assertThat(table.revocationStamp(1, 7)).as("its slot taken by a later lending").isZero();
            assertThat(table.revocationStamp(1, epoch)).isEqualTo(5L);
        }
        long now = System.nanoTime();
        assertThat(ShmPeerLender.plausibleStamp(now - 1_000, now)).isEqualTo(now - 1_000);
        assertThat(ShmPeerLender.plausibleStamp(0, now)).as("no stamp").isEqualTo(now);
        assertThat(ShmPeerLender.plausibleStamp(now + 1_000, now)).as("in this process's future: another clock").isEqualTo(now);
        assertThat(ShmPeerLender.plausibleStamp(now - 3_600_000_000_000L, now)).as("an hour old: another clock").isEqualTo(now);
    }

    @Test
    void aBorrowerThatMissesItsDeadlineIsFencedAndItsMemoryIsReusedOnlyAfterItsAccessEnds() throws Exception {
        try (PeerAgent agent = agent(4); ShmPeerLender lender = lender()) {
            RecordedEvents events = new RecordedEvents(); // records, never acknowledges
            lender.listen(events);
            LentRegion r = lender.borrow(4 * REGION - 99);
            assertThat(r.enter()).isTrue();
            stamp(r.memory(), r.lease().region(), r.lease().epoch(), 1);
            demand.bytes.set(1);
            agent.step();
            assertThat(events.next(5_000)).isEqualTo("revoke 0");
            clock.offsetMillis.addAndGet(GRACE_MILLIS + 1);
            agent.step();
            LendingStats s = agent.stats();
            assertThat(s.fences()).isEqualTo(1);
            assertThat(s.fenced()).as("fenced, waiting for the access under way").isEqualTo(1);
            assertThat(events.next(5_000)).isEqualTo("fenced 0");
            for (int i = 0; i < 5; i++) {
                agent.step();
                Thread.sleep(5);
            }
            assertThat(agent.stats().held()).as("not reused while the fenced access is under way").isZero();
            assertThat(verify(r.memory(), r.lease().region(), r.lease().epoch(), 1)).isNull();
            r.exit();
            assertThat(r.enter()).as("no access through a fenced lease").isFalse();
            agent.step();
            s = agent.stats();
            assertThat(s.held()).as("one region for the demand; the rest of the run freed").isEqualTo(1);
            assertThat(s.free()).isEqualTo(3);
            assertThat(s.fenced()).isZero();
            assertThat(verify(r.memory(), r.lease().region(), r.lease().epoch(), 1)).as("the agent reused it").isNotNull();
            lender.acknowledge(r); // too late: a no-op
            lender.giveBack(r);
            assertThat(agent.stats().acknowledged()).isZero();
            LentRegion next = lender.borrow(REGION);
            assertThat(next.lease().epoch()).as("lent again after a fence: epoch 1, fenced 2, now 3").isEqualTo(3);
        }
    }

    @Test
    void withoutAListenerTheLenderDrainsAndAcknowledgesItself() throws Exception {
        try (PeerAgent agent = agent(2); ShmPeerLender lender = lender()) {
            LentRegion r = lender.borrow(2 * REGION);
            demand.bytes.set(2 * REGION);
            agent.step();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (agent.stats().acknowledged() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(2);
            }
            assertThat(agent.stats().acknowledged()).isEqualTo(1);
            assertThat(r.enter()).isFalse();
            agent.step();
            assertThat(agent.stats().held()).isEqualTo(2);
        }
    }

    @Test
    void aStoppedAgentIsLostAndNoEnterSucceedsAfterwards() throws Exception {
        PeerAgent agent = agent(3);
        try (ShmPeerLender lender = lender()) {
            RecordedEvents events = new RecordedEvents();
            lender.listen(events);
            LentRegion r = lender.borrow(REGION);
            assertThat(r.enter()).isTrue();
            r.exit();
            agent.close();
            assertThat(events.next(5_000)).isEqualTo("lost 3");
            assertThat(lender.alive()).isFalse();
            assertThat(lender.lostBecause()).contains("stopped");
            assertThat(r.enter()).isFalse();
            assertThat(lender.borrow(1)).isNull();
            assertThat(lender.lendableBytes()).isZero();
        }
    }

    @Test
    void aSecondAgentOnTheSamePathIsRefusedAndBadFilesAreNamed() throws Exception {
        try (PeerAgent agent = agent(2)) {
            assertThatThrownBy(() -> agent(2)).isInstanceOf(IllegalStateException.class).hasMessageContaining(path.toString());
        }
        Path bogus = newFile("bogus");
        try {
            java.nio.file.Files.write(bogus, new byte[8192]);
            assertThatThrownBy(() -> ShmPeerLender.open(bogus, 0)).isInstanceOf(ShmFormatException.class)
                    .hasMessageContaining("field version = 0").hasMessageContaining("never published").hasMessageContaining(bogus.toString());
        } finally {
            delete(bogus);
        }
        assertThatThrownBy(() -> PeerAgentConfig.builder().file(path).budget(100).regionSize(100).conclude())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("region size 100");
        assertThatThrownBy(() -> PeerAgentConfig.builder().file(path).regionSize(4096).conclude())
                .hasMessageContaining("no budget");
    }
}
