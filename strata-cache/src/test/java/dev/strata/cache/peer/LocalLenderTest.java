package dev.strata.cache.peer;

import static dev.strata.cache.peer.PeerTesting.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The in-process lender and agent on its own: offer, revocation order, acknowledgement, fencing, death. */
class LocalLenderTest {

    /** Records every event (the log first, so a wait on a list sees the log complete) and acknowledges nothing. */
    static final class Recorder implements LenderEvents {
        final List<String> events = new CopyOnWriteArrayList<>();
        final List<LentRegion> asked = new CopyOnWriteArrayList<>();
        final List<LentRegion> fenced = new CopyOnWriteArrayList<>();

        @Override
        public void revocationRequested(LentRegion region, long revokedAtNanos, long deadlineNanos) {
            events.add("revoke " + region.lease().region());
            asked.add(region);
        }

        @Override
        public void fenced(LentRegion region) {
            events.add("fenced " + region.lease().region());
            fenced.add(region);
        }

        @Override
        public void peerLost(int peer) {
            events.add("lost " + peer);
        }
    }

    @Test
    void borrowsCarveTheBudgetAndGivingBackFreesAtOnce() {
        try (LocalLender lender = new LocalLender(LocalLender.Config.of(3, "gpu3", 10_000).withAlignment(64))) {
            lender.listen(new Recorder());
            LentRegion a = lender.borrow(1_001);
            LentRegion b = lender.borrow(333);
            assertThat(a.lease().peer()).isEqualTo(3);
            assertThat(a.lease().size()).isEqualTo(1_001);
            assertThat(a.memory().byteSize()).isEqualTo(1_001);
            assertThat(b.lease().epoch()).isGreaterThan(a.lease().epoch());
            LocalLender.Stats s = lender.stats();
            assertThat(s.lentBytes()).isEqualTo(1_024 + 384);
            assertThat(s.freeBytes() + s.lentBytes()).isEqualTo(10_000);
            assertThat(lender.lendableBytes()).isEqualTo(10_000 - 1_408);
            lender.checkInvariants();

            byte[] data = PeerTesting.random(new SplittableRandom(7), 1_001);
            assertThat(a.enter()).isTrue();
            MemorySegment.copy(MemorySegment.ofArray(data), 0, a.memory(), 0, data.length);
            a.exit();

            lender.giveBack(a);
            assertThat(a.enter()).as("enter through a region given back").isFalse();
            assertThat(lender.phase(a.lease())).isEqualTo(LocalLender.Phase.RELEASED);
            lender.giveBack(a); // idempotent
            assertThat(lender.stats().lentBytes()).isEqualTo(384);
            assertThat(lender.stats().giveBacks()).isEqualTo(1);
            lender.checkInvariants();

            assertThat(lender.borrow(20_000)).as("more than the budget").isNull();
            assertThatThrownBy(() -> lender.borrow(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0");
        }
    }

    @Test
    void theOfferBoundsBorrowsAndAShrinkingOfferAsksBackTheSmallestRegionCoveringTheShortfall() {
        try (LocalLender lender = new LocalLender(LocalLender.Config.of(0, "p0", 8_192).withGrace(10_000_000_000L))) {
            Recorder events = new Recorder();
            lender.listen(events);
            LentRegion small = lender.borrow(500);
            LentRegion large = lender.borrow(3_000);
            LentRegion middle = lender.borrow(1_500);
            lender.lendable(4_000); // lent 512 + 3008 + 1536 = 5056, 1056 too many: the smallest covering it (1536) goes
            await("one revocation asked", 2_000, () -> events.asked.size() == 1);
            assertThat(events.asked.getFirst()).isSameAs(middle);
            assertThat(lender.phase(middle.lease())).isEqualTo(LocalLender.Phase.REVOKING);
            assertThat(middle.enter()).as("enter while revoking").isFalse();
            assertThat(small.enter()).isTrue();
            small.exit();
            assertThat(lender.borrow(2_000)).as("the offer counts regions being revoked").isNull();
            lender.checkInvariants();

            lender.acknowledge(middle);
            assertThat(lender.phase(middle.lease())).isEqualTo(LocalLender.Phase.RELEASED);
            assertThat(lender.epoch(middle.lease())).isEqualTo(-1);
            assertThat(lender.stats().acknowledgements()).isEqualTo(1);
            assertThat(lender.stats().lentBytes()).isEqualTo(512 + 3_008);
            assertThat(lender.lendableBytes()).isEqualTo(4_000 - 3_520);

            lender.demand(8_192); // all of it: no region covers 3520 alone, so the largest, then the smallest covering the rest
            await("all asked back", 2_000, () -> events.asked.size() == 3);
            assertThat(events.asked.subList(1, 3)).containsExactly(large, small);
            assertThat(lender.stats().offerBytes()).isZero();
            lender.acknowledge(large);
            lender.acknowledge(small);
            lender.checkInvariants();
            assertThat(lender.stats().freeBytes()).isEqualTo(8_192);
            assertThat(lender.borrow(1)).as("nothing offered").isNull();
        }
    }

    @Test
    void aRegionNotAcknowledgedByItsDeadlineIsFencedAndReusedOnlyAfterItsAccessEnds() {
        try (LocalLender lender = new LocalLender(LocalLender.Config.of(1, "p1", 4_096).withGrace(20_000_000L))) {
            Recorder events = new Recorder();
            lender.listen(events);
            LentRegion region = lender.borrow(4_000);
            PeerLease lease = region.lease();
            byte[] data = PeerTesting.random(new SplittableRandom(11), 4_000);
            assertThat(region.enter()).isTrue(); // an access under way, e.g. a transfer engine's copy
            MemorySegment.copy(MemorySegment.ofArray(data), 0, region.memory(), 0, data.length);

            lender.lendable(0);
            await("fenced", 2_000, () -> events.fenced.size() == 1);
            assertThat(events.events).containsExactly("revoke " + lease.region(), "fenced " + lease.region());
            assertThat(lender.epoch(lease)).as("epoch advanced").isGreaterThan(lease.epoch());
            assertThat(lender.phase(lease)).isEqualTo(LocalLender.Phase.RELEASING);
            assertThat(lender.stats().fences()).isEqualTo(1);
            assertThat(lender.stats().releasingBytes()).isEqualTo(4_032);
            lender.lendable(4_096);
            assertThat(lender.borrow(100)).as("the fenced memory is still in use").isNull();
            // the access begun under the old epoch still sees its bytes
            assertThat(region.memory().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(data);
            assertThat(region.enter()).as("a new access through the fenced lease").isFalse();
            lender.checkInvariants();

            region.exit();
            await("released after the access ended", 2_000, () -> lender.phase(lease) == LocalLender.Phase.RELEASED);
            LentRegion reused = lender.borrow(4_000);
            assertThat(reused).isNotNull();
            assertThat(reused.lease().region()).isEqualTo(lease.region());
            assertThat(reused.lease().epoch()).isGreaterThan(lease.epoch());
            lender.acknowledge(region); // late: a no-op
            assertThat(lender.stats().lateAcknowledgements()).isEqualTo(1);
            assertThat(lender.phase(reused.lease())).isEqualTo(LocalLender.Phase.LENT);
            assertThat(region.enter()).isFalse();
            assertThat(reused.enter()).isTrue();
            reused.exit();
            lender.checkInvariants();
        }
    }

    @Test
    void aKilledAgentLosesEveryRegionAndRefusesBorrows() {
        try (LocalLender lender = new LocalLender(LocalLender.Config.of(2, "p2", 4_096))) {
            Recorder events = new Recorder();
            lender.listen(events);
            LentRegion a = lender.borrow(100);
            LentRegion b = lender.borrow(200);
            assertThat(b.enter()).isTrue();
            lender.kill();
            await("peer lost", 2_000, () -> events.events.contains("lost 2"));
            assertThat(lender.alive()).isFalse();
            assertThat(a.enter()).isFalse();
            assertThat(lender.borrow(10)).isNull();
            assertThat(lender.lendableBytes()).isZero();
            assertThat(lender.phase(a.lease())).isEqualTo(LocalLender.Phase.RELEASED);
            assertThat(lender.phase(b.lease())).isEqualTo(LocalLender.Phase.RELEASING);
            b.exit();
            await("released", 2_000, () -> lender.stats().freeBytes() == 4_096);
            lender.checkInvariants();
        }
    }

    @Test
    void misuseIsRefusedWithTheValues() {
        try (LocalLender one = new LocalLender(LocalLender.Config.of(0, "one", 1_024));
             LocalLender two = new LocalLender(LocalLender.Config.of(1, "two", 1_024))) {
            LentRegion r = one.borrow(10);
            assertThatThrownBy(() -> two.acknowledge(r)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'two'");
            assertThatThrownBy(r::exit).isInstanceOf(IllegalStateException.class).hasMessageContaining("without a matching enter");
            assertThatThrownBy(() -> LocalLender.Config.of(0, "x", 100).withAlignment(48))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("alignment 48");
            assertThatThrownBy(() -> one.lendable(-5)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-5");
            assertThatThrownBy(() -> one.demand(-7)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-7");
        }
    }
}
