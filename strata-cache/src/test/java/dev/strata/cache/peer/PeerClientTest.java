package dev.strata.cache.peer;

import static dev.strata.cache.peer.PeerTesting.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.Durability;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** The client over real local lenders: accesses, revocation with drain, fencing, peer loss, metrics. */
class PeerClientTest {
    private static final LeaseHints ANY = LeaseHints.of(Durability.LOSSY);

    record Ended(PeerLease lease, RevocationReason reason) {
    }

    @Test
    void bytesWrittenThroughALeaseReadBackAndFreeGivesTheMemoryBack() {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 64 * 1024));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            PeerLease lease = client.alloc(10_007, ANY).orElseThrow();
            byte[] data = PeerTesting.random(new SplittableRandom(1), 10_007);
            assertThat(client.write(lease, 0, PeerTesting.segment(data))).isTrue();
            byte[] back = new byte[5_000];
            assertThat(client.read(lease, 3_001, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(java.util.Arrays.copyOfRange(data, 3_001, 8_001));
            assertThat(client.valid(lease)).isTrue();
            assertThatThrownBy(() -> client.read(lease, 10_000, MemorySegment.ofArray(new byte[8])))
                    .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("offset 10000");
            assertThat(client.stats().peer(0).borrowedBytes()).isEqualTo(10_007);
            assertThat(client.peers()).singleElement().satisfies(p -> {
                assertThat(p.borrowedBytes()).isEqualTo(10_007);
                assertThat(p.name()).isEqualTo("gpu0");
            });
            client.checkInvariants();

            client.free(lease);
            client.free(lease); // idempotent
            assertThat(client.valid(lease)).isFalse();
            assertThat(client.read(lease, 0, MemorySegment.ofArray(back))).isFalse();
            assertThat(lender.phase(lease)).isEqualTo(LocalLender.Phase.RELEASED);
            assertThat(lender.stats().freeBytes()).isEqualTo(64 * 1024);
            assertThat(client.stats().peer(0).borrowedBytes()).isZero();
            client.checkInvariants();
        }
    }

    @Test
    void aRevocationStopsAccessesRunsTheCallbackOnceThenAcknowledges() {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 64 * 1024).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease a = client.alloc(20_000, ANY, (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            PeerLease b = client.alloc(1_000, ANY).orElseThrow();
            client.onRevoke(b, (l, r) -> ended.add(new Ended(l, r)));
            lender.lendable(2_000); // only b stays
            await("a revoked", 2_000, () -> ended.size() == 1);
            assertThat(ended).containsExactly(new Ended(a, RevocationReason.RECLAIMED));
            await("acknowledged", 2_000, () -> lender.phase(a) == LocalLender.Phase.RELEASED);
            assertThat(lender.stats().acknowledgements()).isEqualTo(1);
            assertThat(lender.stats().fences()).isZero();
            assertThat(client.write(a, 0, MemorySegment.ofArray(new byte[] {1}))).isFalse();
            assertThat(client.valid(a)).isFalse();
            assertThat(client.valid(b)).isTrue();
            client.free(a); // a revoked lease: no-op
            PeerClientStats s = client.stats();
            assertThat(s.peer(0).revocations(RevocationReason.RECLAIMED)).isEqualTo(1);
            assertThat(s.peer(0).borrowedBytes()).isEqualTo(1_000);
            assertThat(s.peer(0).drainCount()).isEqualTo(1);
            client.checkInvariants();
            // a callback registered after the revocation ended still runs, once, with the reason
            List<RevocationReason> late = new CopyOnWriteArrayList<>();
            client.onRevoke(a, (l, r) -> late.add(r));
            assertThat(late).containsExactly(RevocationReason.RECLAIMED);
            assertThat(ended).hasSize(1);
        }
    }

    @Test
    void aRevocationWaitsForAnAccessUnderWay() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 16 * 1024).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(4_095, ANY, (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            byte[] data = PeerTesting.random(new SplittableRandom(5), 4_095);
            assertThat(client.write(lease, 0, PeerTesting.segment(data))).isTrue();
            AtomicBoolean sawBytes = new AtomicBoolean();
            PeerTesting.HeldAccess reader = PeerTesting.HeldAccess.start(client, lease, 4_095,
                    view -> sawBytes.set(java.util.Arrays.equals(view.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), data)));
            lender.lendable(0);
            // the lender closes its region first; the client's drain clock starts when the event reaches it
            await("revoking", 2_000, () -> client.revoking(lease));
            assertThat(client.valid(lease)).isFalse();
            assertThat(client.read(lease, 0, MemorySegment.ofArray(new byte[10]))).as("new access while revoking").isFalse();
            Thread.sleep(50);
            assertThat(ended).as("no callback while an access is under way").isEmpty();
            assertThat(client.drainNanos(lease)).as("revocation not finished: no drain time yet").isEqualTo(-1);
            assertThat(lender.phase(lease)).as("not acknowledged while draining").isEqualTo(LocalLender.Phase.REVOKING);
            reader.release(5_000);
            assertThat(sawBytes).as("the drained access saw its bytes").isTrue();
            await("callback after the drain", 2_000, () -> ended.size() == 1);
            assertThat(ended).containsExactly(new Ended(lease, RevocationReason.RECLAIMED));
            await("released", 2_000, () -> lender.phase(lease) == LocalLender.Phase.RELEASED);
            assertThat(client.stats().peer(0).drainMaxNanos()).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(50));
            assertThat(client.drainNanos(lease)).as("this lease's own drain: the access held it for the 50 ms sleep")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(50))
                    .isLessThanOrEqualTo(client.stats().peer(0).drainMaxNanos() + client.stats().peer(0).drainMaxNanos() / 100);
            lender.lendable(16 * 1024);
            PeerLease idle = client.alloc(1_000, ANY).orElseThrow();
            assertThat(client.drainNanos(idle)).as("open").isEqualTo(-1);
            client.free(idle);
            assertThat(client.drainNanos(idle)).as("freed, never revoked").isEqualTo(-1);
        }
    }

    /**
     * A read or write of four steps ({@link PeerClient#COPY_STEP_BYTES}) under way when its lease's
     * revocation begins: the lender revokes while the copy is between its first and second step
     * (from inside the region's {@code memory()}, which the copy calls once before it starts), so
     * the copy stops after that step and returns false, is counted, and the revocation ends without
     * waiting for the rest of it. Before copies looked at the guard between steps, the whole copy
     * ran and returned true.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void aCopyUnderWayWhenItsLeaseIsRevokedStopsAtItsNextStep(boolean write) throws Exception {
        int step = (int) PeerClient.COPY_STEP_BYTES;
        LocalLender inner = new LocalLender(LocalLender.Config.of(0, "gpu0", 4L * step).withGrace(10_000_000_000L));
        AtomicBoolean revokeOnAccess = new AtomicBoolean();
        java.util.concurrent.atomic.AtomicReference<PeerClient> clientRef = new java.util.concurrent.atomic.AtomicReference<>();
        record Hooked(LentRegion r, Runnable onMemory) implements LentRegion {
            @Override public PeerLease lease() { return r.lease(); }
            @Override public boolean enter() { return r.enter(); }
            @Override public void exit() { r.exit(); }
            @Override public boolean takenBack() { return r.takenBack(); }
            @Override public MemorySegment memory() {
                onMemory.run();
                return r.memory();
            }
        }
        PeerLender lender = new WrappingLender(inner) {
            @Override
            public LentRegion borrow(long size) {
                LentRegion r = inner.borrow(size);
                return r == null ? null : new Hooked(r, () -> {
                    if (revokeOnAccess.getAndSet(false)) { // the copy has entered both guards and not begun
                        inner.lendable(0);
                        await("revoking", 5_000, () -> clientRef.get().revoking(r.lease()));
                    }
                });
            }

            @Override
            public void giveBack(LentRegion region) {
                super.giveBack(region instanceof Hooked h ? h.r() : region);
            }

            @Override
            public void acknowledge(LentRegion region) {
                super.acknowledge(region instanceof Hooked h ? h.r() : region);
            }
        };
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            clientRef.set(client);
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(4L * step, ANY, (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            byte[] data = PeerTesting.random(new SplittableRandom(9), 4 * step);
            assertThat(client.write(lease, 0, PeerTesting.segment(data))).isTrue();
            byte[] local = write ? PeerTesting.random(new SplittableRandom(10), 4 * step) : new byte[4 * step];
            revokeOnAccess.set(true);
            boolean done = write ? client.write(lease, 0, MemorySegment.ofArray(local)) : client.read(lease, 0, MemorySegment.ofArray(local));
            assertThat(done).as("a copy its lease's revocation caught part-way").isFalse();
            assertThat(client.stats().abandonedCopies()).isEqualTo(1);
            assertThat(client.stats().toPrometheus()).contains("strata_peer_copies_abandoned_total 1");
            if (!write) {
                assertThat(java.util.Arrays.copyOf(local, step)).as("the first step was copied").isEqualTo(java.util.Arrays.copyOf(data, step));
                assertThat(java.util.Arrays.copyOfRange(local, step, 4 * step)).as("nothing after it").containsOnly((byte) 0);
            }
            await("callback", 5_000, () -> ended.size() == 1);
            assertThat(ended).containsExactly(new Ended(lease, RevocationReason.RECLAIMED));
            await("released", 5_000, () -> inner.phase(lease) == LocalLender.Phase.RELEASED);
            assertThat(inner.stats().fences()).isZero();
            client.checkInvariants();
        }
    }

    @Test
    void aClientWhoseAccessOutlivesTheDeadlineIsFencedAndTheMemoryWaitsForTheAccess() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 8_192).withGrace(20_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(8_000, ANY, (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            byte[] data = PeerTesting.random(new SplittableRandom(9), 8_000);
            assertThat(client.write(lease, 0, PeerTesting.segment(data))).isTrue();
            AtomicBoolean sawBytes = new AtomicBoolean();
            PeerTesting.HeldAccess slow = PeerTesting.HeldAccess.start(client, lease, 8_000,
                    view -> sawBytes.set(java.util.Arrays.equals(view.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), data)));
            lender.lendable(0);
            await("fenced", 2_000, () -> lender.stats().fences() == 1);
            // the fence reaches the client on the lender's event thread; the reason is fixed only once the client has it
            await("the fence delivered to the client", 2_000, lender::eventsDelivered);
            assertThat(lender.epoch(lease)).as("epoch advanced").isGreaterThan(lease.epoch());
            assertThat(lender.phase(lease)).as("memory held for the access").isEqualTo(LocalLender.Phase.RELEASING);
            lender.lendable(8_192);
            assertThat(lender.borrow(8_000)).as("fenced memory not reused while accessed").isNull();
            assertThat(client.read(lease, 0, MemorySegment.ofArray(new byte[10]))).isFalse();
            assertThat(ended).isEmpty();

            slow.release(5_000);
            assertThat(sawBytes).isTrue();
            await("callback", 2_000, () -> ended.size() == 1);
            assertThat(ended).containsExactly(new Ended(lease, RevocationReason.FENCED));
            await("released", 2_000, () -> lender.phase(lease) == LocalLender.Phase.RELEASED);
            PeerLease again = client.alloc(8_000, ANY).orElseThrow();
            assertThat(again.region()).isEqualTo(lease.region());
            assertThat(again.epoch()).isGreaterThan(lease.epoch());
            assertThat(client.read(lease, 0, MemorySegment.ofArray(new byte[10]))).isFalse();
            Thread.sleep(30);
            assertThat(ended).as("callbacks once").hasSize(1);
            assertThat(client.stats().peer(0).revocations(RevocationReason.FENCED)).isEqualTo(1);
            assertThat(client.stats().peer(0).revocations(RevocationReason.RECLAIMED)).isZero();
            client.checkInvariants();
            lender.checkInvariants();
        }
    }

    @Test
    void aCallbackThatBlocksPastTheDeadlineGetsTheLeaseFencedWithoutASecondCallback() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 8_192).withGrace(20_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            CountDownLatch unblock = new CountDownLatch(1);
            PeerLease lease = client.alloc(5_000, ANY, (l, r) -> {
                ended.add(new Ended(l, r));
                try {
                    unblock.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }).orElseThrow();
            lender.lendable(0);
            await("fenced while the callback blocks", 2_000, () -> lender.stats().fences() == 1);
            assertThat(ended).containsExactly(new Ended(lease, RevocationReason.RECLAIMED));
            assertThat(lender.epoch(lease) == -1 || lender.epoch(lease) > lease.epoch()).as("epoch advanced").isTrue();
            assertThat(client.write(lease, 0, MemorySegment.ofArray(new byte[] {7}))).isFalse();
            await("fenced memory released (nothing in flight)", 2_000, () -> lender.phase(lease) == LocalLender.Phase.RELEASED);
            lender.lendable(8_192);
            PeerLease next = client.alloc(5_000, ANY).orElseThrow();
            assertThat(next.region()).isEqualTo(lease.region());
            unblock.countDown();
            await("late acknowledgement seen", 2_000, () -> lender.stats().lateAcknowledgements() == 1);
            await("late fence counted", 2_000, () -> client.stats().peer(0).lateFences() == 1);
            assertThat(ended).as("never a second callback").hasSize(1);
            assertThat(client.valid(next)).isTrue();
            client.checkInvariants();
        }
    }

    @Test
    void aLostPeerEndsAllItsLeasesAndAllocationGoesElsewhere() {
        LocalLender a = new LocalLender(LocalLender.Config.of(0, "a", 16_384));
        LocalLender b = new LocalLender(LocalLender.Config.of(1, "b", 16_384));
        try (PeerClient client = PeerClient.of(List.of(a, b), "best_fit")) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease onA1 = client.alloc(1_000, ANY.preferring(0), (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            PeerLease onA2 = client.alloc(2_000, ANY.preferring(0), (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            PeerLease onB = client.alloc(3_000, ANY.preferring(1), (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            assertThat(List.of(onA1.peer(), onA2.peer(), onB.peer())).containsExactly(0, 0, 1);
            a.kill();
            await("both leases lost", 2_000, () -> ended.size() == 2);
            assertThat(ended).containsExactlyInAnyOrder(new Ended(onA1, RevocationReason.PEER_LOST),
                    new Ended(onA2, RevocationReason.PEER_LOST));
            assertThat(client.read(onA1, 0, MemorySegment.ofArray(new byte[4]))).isFalse();
            assertThat(client.valid(onB)).isTrue();
            assertThat(client.alloc(500, ANY.preferring(0)).orElseThrow().peer()).isEqualTo(1);
            PeerClientStats s = client.stats();
            assertThat(s.peer(0).alive()).isFalse();
            assertThat(s.peer(0).revocations(RevocationReason.PEER_LOST)).isEqualTo(2);
            assertThat(s.peer(0).borrowedBytes()).isZero();
            assertThat(client.peers().getFirst().alive()).isFalse();
            client.checkInvariants();
        }
    }

    /**
     * A lender whose agent the test restarts: the old local lender dies (its peerLost reaches the
     * client), a new one takes its place and the client hears {@code peerReattached}.
     */
    static final class RestartingLender implements PeerLender {
        volatile LocalLender current;
        volatile LenderEvents events;

        RestartingLender(LocalLender first) {
            this.current = first;
        }

        /** Puts {@code next} in place of the dead lender and reports the peer back. */
        void restart(LocalLender next) {
            next.listen(events);
            current = next;
            events.peerReattached(next.id());
        }

        @Override public int id() { return current.id(); }
        @Override public String name() { return current.name(); }
        @Override public int distance() { return current.distance(); }
        @Override public long lendableBytes() { return current.lendableBytes(); }
        @Override public boolean alive() { return current.alive(); }
        @Override public LentRegion borrow(long size) { return current.borrow(size); }
        @Override public void giveBack(LentRegion region) { current.giveBack(region); }
        @Override public void acknowledge(LentRegion region) { current.acknowledge(region); }
        @Override public void close() { current.close(); }
        @Override public void listen(LenderEvents e) {
            events = e;
            current.listen(e);
        }
    }

    @Test
    void aLostPeerThatReattachesIsPlacedOnAgainAndCounted() {
        LocalLender first = new LocalLender(LocalLender.Config.of(0, "gpu0", 16_384));
        RestartingLender lender = new RestartingLender(first);
        try (PeerClient client = PeerClient.builder().lender(lender).build()) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease old = client.alloc(1_000, ANY, (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            first.kill();
            await("the lease lost", 2_000, () -> ended.size() == 1);
            assertThat(client.stats().peer(0).alive()).isFalse();
            assertThat(client.alloc(1_000, ANY)).isEmpty();

            LocalLender second = new LocalLender(LocalLender.Config.of(0, "gpu0", 16_384));
            // A restarted lender never repeats a lease of the old one (ShmPeerLender puts its mapping's
            // generation in the epoch); this one uses up the epoch the old lease had.
            second.giveBack(second.borrow(1));
            lender.restart(second);
            PeerClientStats.Peer p = client.stats().peer(0);
            assertThat(p.alive()).isTrue();
            assertThat(p.reattachments()).isEqualTo(1);
            assertThat(client.peers().getFirst().alive()).isTrue();
            PeerLease fresh = client.alloc(1_000, ANY).orElseThrow();
            assertThat(fresh.peer()).isZero();
            assertThat(fresh).isNotEqualTo(old);
            assertThat(client.write(fresh, 0, MemorySegment.ofArray(new byte[] {9}))).isTrue();
            assertThat(client.read(old, 0, MemorySegment.ofArray(new byte[1]))).as("the old lease stays dead").isFalse();
            assertThat(ended).containsExactly(new Ended(old, RevocationReason.PEER_LOST));
            assertThat(client.stats().toPrometheus()).contains("strata_peer_reattach_total{peer=\"gpu0\"} 1",
                    "strata_peer_alive{peer=\"gpu0\"} 1");
            client.checkInvariants();
        }
    }

    @Test
    void aReclaimedLeaseKnowsWhenItsLenderRevokedItAndTheClientTimesRevocationToCallback() {
        LocalLender lender = new LocalLender(LocalLender.Config.of(4, "gpu4", 4_096).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "locality")) {
            PeerLease freed = client.alloc(1_000, ANY).orElseThrow();
            client.free(freed);
            PeerLease lease = client.alloc(2_000, ANY).orElseThrow();
            java.util.concurrent.atomic.AtomicLong called = new java.util.concurrent.atomic.AtomicLong();
            client.onRevoke(lease, (l, reason) -> called.set(System.nanoTime()));
            assertThat(client.revokedAtNanos(lease)).as("not revoked yet").isZero();
            long before = System.nanoTime();
            lender.lendable(0);
            await("the callback", 2_000, () -> called.get() != 0);
            long revoked = client.revokedAtNanos(lease);
            assertThat(revoked).as("the lender's revocation, after the demand and before the callback")
                    .isBetween(before, called.get());
            assertThat(client.revokedAtNanos(freed)).as("given back, never revoked").isZero();
            assertThat(client.stats().peer(4).revokeToCallbackCount()).isEqualTo(1);
            assertThat(client.stats().toPrometheus()).contains("strata_peer_revoke_to_callback_seconds_count{peer=\"gpu4\"} 1");
        }
    }

    @Test
    void statsRenderAsPrometheusText() {
        LocalLender lender = new LocalLender(LocalLender.Config.of(4, "gpu4", 4_096).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "locality")) {
            PeerClient.ConsumerView kv = client.forConsumer("kv", ConsumerLimits.bytes(3_000));
            PeerLease lease = kv.alloc(2_000, ANY).orElseThrow();
            assertThat(kv.alloc(1_500, ANY)).as("over the consumer's cap").isEmpty();
            assertThat(client.alloc(3_000, ANY)).as("over the peer's offer").isEmpty();
            lender.lendable(0);
            await("revoked", 2_000, () -> !client.liveLeases().contains(lease));
            String text = client.stats().toPrometheus();
            assertThat(text).contains("strata_peer_allocs_total{peer=\"gpu4\"} 1",
                    "strata_peer_revocations_total{peer=\"gpu4\",reason=\"reclaimed\"} 1",
                    "strata_peer_borrowed_bytes{peer=\"gpu4\"} 0",
                    "strata_peer_drain_seconds_count{peer=\"gpu4\"} 1",
                    "strata_peer_revocation_callback_seconds{peer=\"gpu4\",quantile=\"0.99\"}",
                    "strata_peer_consumer_refused_total{consumer=\"kv\",cause=\"bytes\"} 1",
                    "strata_peer_consumer_allocs_total{consumer=\"kv\"} 1",
                    "strata_peer_alloc_misses_total 1");
        }
    }
    @Test
    void aThrowingCallbackIsCountedAndTheOthersStillRunAndTheRevocationIsAcknowledged() {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 8_192).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(3_000, ANY, (l, r) -> {
                throw new IllegalStateException("callback failure on purpose");
            }).orElseThrow();
            client.onRevoke(lease, (l, r) -> ended.add(new Ended(l, r)));
            lender.lendable(0);
            await("second callback ran", 2_000, () -> ended.size() == 1);
            await("acknowledged", 2_000, () -> lender.phase(lease) == LocalLender.Phase.RELEASED);
            assertThat(lender.stats().acknowledgements()).isEqualTo(1);
            assertThat(client.stats().callbackFailures()).isEqualTo(1);
        }
    }

    @Test
    void freeingALeaseBeingRevokedIsANoOpAndItsCallbackStillRunsOnce() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 8_192).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(3_000, ANY, (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            PeerTesting.HeldAccess holder = PeerTesting.HeldAccess.start(client, lease, 3_000);
            lender.lendable(0);
            await("revoking", 2_000, () -> client.revoking(lease));
            assertThat(client.valid(lease)).isFalse();
            client.free(lease); // returns at once: the revocation owns the lease now
            assertThat(client.liveLeases()).contains(lease);
            holder.release(5_000);
            await("revoked", 2_000, () -> ended.size() == 1);
            assertThat(ended).containsExactly(new Ended(lease, RevocationReason.RECLAIMED));
            assertThat(lender.stats().giveBacks()).isZero();
            assertThat(lender.stats().acknowledgements()).isEqualTo(1);
            client.checkInvariants();
        }
    }

    /**
     * A reclaim that meets a lease the store is freeing (its free waiting for an access to leave)
     * is acknowledged by the free and counted apart from revocations: the lender's
     * acknowledgements are the client's reclaimed leases plus these.
     */
    @Test
    void aReclaimOfALeaseBeingFreedIsAcknowledgedByTheFreeAndCountedApart() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 8_192).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(3_000, ANY, (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            PeerTesting.HeldAccess holder = PeerTesting.HeldAccess.start(client, lease, 3_000);
            Thread freer = Thread.ofPlatform().start(() -> client.free(lease)); // waits for the access to leave
            await("freeing", 2_000, () -> !client.valid(lease));
            lender.lendable(0);
            await("the reclaim reached the client", 2_000, () -> lender.eventsDelivered()
                    && client.stats().peer(0).reclaimsOfFreed() == 1);
            holder.release(5_000);
            freer.join(5_000);
            await("acknowledged", 2_000, () -> lender.stats().acknowledgements() == 1);
            PeerClientStats.Peer stats = client.stats().peer(0);
            assertThat(stats.reclaimed()).as("no revocation: the lease was freed").isZero();
            assertThat(stats.reclaimsOfFreed()).isEqualTo(1);
            assertThat(lender.stats().giveBacks()).isZero();
            assertThat(ended).as("a freed lease never calls its callback").isEmpty();
            assertThat(client.stats().toPrometheus()).contains("strata_peer_reclaims_of_freed_total{peer=\"gpu0\"} 1");
            client.checkInvariants();
        }
    }

    @Test
    void closingTheClientGivesEveryLeaseBackAndClosesItsLenders() {
        LocalLender a = new LocalLender(LocalLender.Config.of(0, "a", 8_192));
        LocalLender b = new LocalLender(LocalLender.Config.of(1, "b", 8_192));
        PeerClient client = PeerClient.of(List.of(a, b), "best_fit");
        PeerLease x = client.alloc(1_000, ANY.preferring(0)).orElseThrow();
        PeerLease y = client.alloc(2_000, ANY.preferring(1)).orElseThrow();
        client.close();
        client.close(); // idempotent
        assertThat(a.stats().freeBytes()).isEqualTo(8_192);
        assertThat(b.stats().freeBytes()).isEqualTo(8_192);
        assertThat(a.stats().giveBacks() + b.stats().giveBacks()).isEqualTo(2);
        assertThat(a.alive() || b.alive()).isFalse();
        assertThat(client.valid(x) || client.valid(y)).isFalse();
        assertThatThrownBy(() -> client.alloc(10, ANY)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }
    /** A lender that hands the client a fresh wrapper of the region in every event, as a remote transport may. */
    static class WrappingLender implements PeerLender {
        final LocalLender inner;

        record Wrapped(LentRegion region) implements LentRegion {
            @Override public PeerLease lease() { return region.lease(); }
            @Override public boolean enter() { return region.enter(); }
            @Override public MemorySegment memory() { return region.memory(); }
            @Override public void exit() { region.exit(); }
            @Override public boolean takenBack() { return region.takenBack(); }
        }

        WrappingLender(LocalLender inner) {
            this.inner = inner;
        }

        private static LentRegion unwrap(LentRegion r) {
            return r instanceof Wrapped w ? w.region() : r;
        }

        @Override public int id() { return inner.id(); }
        @Override public String name() { return inner.name(); }
        @Override public int distance() { return inner.distance(); }
        @Override public long lendableBytes() { return inner.lendableBytes(); }
        @Override public boolean alive() { return inner.alive(); }
        @Override public LentRegion borrow(long size) {
            LentRegion r = inner.borrow(size);
            return r == null ? null : new Wrapped(r);
        }
        @Override public void giveBack(LentRegion region) { inner.giveBack(unwrap(region)); }
        @Override public void acknowledge(LentRegion region) { inner.acknowledge(unwrap(region)); }
        @Override public void close() { inner.close(); }
        @Override public void listen(LenderEvents events) {
            inner.listen(new LenderEvents() {
                @Override public void revocationRequested(LentRegion region, long revokedAtNanos, long deadlineNanos) {
                    events.revocationRequested(new Wrapped(region), revokedAtNanos, deadlineNanos);
                }
                @Override public void fenced(LentRegion region) { events.fenced(new Wrapped(region)); }
                @Override public void peerLost(int peer) { events.peerLost(peer); }
            });
        }
    }

    /**
     * The lender fences a lease whose access outlived its deadline, and the access ends before the
     * fence's event reaches the client (withheld here): the lease still ends FENCED, as the lender
     * keeps it, not RECLAIMED, and the client sends no acknowledgement.
     */
    @Test
    void aLeaseFencedBeforeItsEventArrivesEndsFencedWhenItsAccessEnds() throws Exception {
        LocalLender inner = new LocalLender(LocalLender.Config.of(0, "gpu0", 8_192).withGrace(50_000_000L));
        PeerLender withholding = new WrappingLender(inner) {
            @Override public void listen(LenderEvents events) {
                inner.listen(new LenderEvents() {
                    @Override public void revocationRequested(LentRegion region, long revokedAtNanos, long deadlineNanos) {
                        events.revocationRequested(region, revokedAtNanos, deadlineNanos);
                    }
                    @Override public void fenced(LentRegion region) {
                        // withheld: the access ends before the client hears of the fence
                    }
                    @Override public void peerLost(int peer) { events.peerLost(peer); }
                });
            }
            @Override public LentRegion borrow(long size) { return inner.borrow(size); }
            @Override public void acknowledge(LentRegion region) { inner.acknowledge(region); }
        };
        try (PeerClient client = PeerClient.builder().lender(withholding).build()) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(3_000, ANY, (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            PeerTesting.HeldAccess holder = PeerTesting.HeldAccess.start(client, lease, 3_000);
            inner.lendable(0);
            await("fenced by the lender at its deadline", 5_000, () -> inner.phase(lease) != LocalLender.Phase.REVOKING
                    && inner.phase(lease) != LocalLender.Phase.LENT);
            holder.release(10_000);
            await("called back", 5_000, () -> ended.size() == 1);
            assertThat(ended).containsExactly(new Ended(lease, RevocationReason.FENCED));
            assertThat(client.stats().peer(0).revocations(RevocationReason.FENCED)).isEqualTo(1);
            client.checkInvariants();
        }
    }

    @Test
    void eventsAboutAnotherInstanceOfTheRegionStillDrainTheLease() throws Exception {
        LocalLender inner = new LocalLender(LocalLender.Config.of(0, "gpu0", 8_192).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.builder().lender(new WrappingLender(inner)).build()) {
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(3_000, ANY, (l, r) -> ended.add(new Ended(l, r))).orElseThrow();
            PeerTesting.HeldAccess holder = PeerTesting.HeldAccess.start(client, lease, 3_000);
            inner.lendable(0);
            await("revoking", 2_000, () -> client.revoking(lease));
            Thread.sleep(30);
            assertThat(inner.phase(lease)).as("not acknowledged while the access is under way").isEqualTo(LocalLender.Phase.REVOKING);
            assertThat(ended).isEmpty();
            holder.release(5_000);
            await("revoked", 2_000, () -> ended.size() == 1);
            await("acknowledged", 2_000, () -> inner.phase(lease) == LocalLender.Phase.RELEASED);
            assertThat(inner.stats().acknowledgements()).isEqualTo(1);
        }
    }

    /** Borrows {@code size} bytes with {@code callback}, retrying while the lender has not yet made its memory lendable again. */
    private static PeerLease borrow(PeerClient client, long size, RevocationCallback callback) {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (true) {
            var lease = client.alloc(size, ANY, callback);
            if (lease.isPresent()) {
                return lease.get();
            }
            assertThat(System.nanoTime()).as("the lender lends " + size + " bytes again within 5 s").isLessThan(until);
            LockSupport.parkNanos(100_000);
        }
    }

    @Test
    void aLeaseWithNoAccessUnderWayEndsOnTheLendersEventThreadAndOneWithAnAccessOnTheRevocationThread() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 16 * 1024).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            List<String> threads = new CopyOnWriteArrayList<>();
            List<Ended> ended = new CopyOnWriteArrayList<>();
            RevocationCallback record = (l, r) -> {
                threads.add(Thread.currentThread().getName());
                ended.add(new Ended(l, r));
            };
            PeerLease idle = client.alloc(4_000, ANY, record).orElseThrow();
            lender.lendable(0);
            await("the idle lease revoked", 2_000, () -> ended.size() == 1);
            assertThat(ended).containsExactly(new Ended(idle, RevocationReason.RECLAIMED));
            assertThat(threads).as("drained at once: ended where the event arrived").containsExactly("strata-peer-gpu0-events");
            await("acknowledged", 2_000, () -> lender.phase(idle) == LocalLender.Phase.RELEASED);

            lender.lendable(16 * 1024);
            PeerLease busy = borrow(client, 4_000, record);
            PeerTesting.HeldAccess holder = PeerTesting.HeldAccess.start(client, busy, 4_000);
            lender.lendable(0);
            await("revoking", 2_000, () -> client.revoking(busy));
            Thread.sleep(30);
            assertThat(ended).as("no callback while the access is under way").hasSize(1);
            assertThat(lender.phase(busy)).as("not acknowledged while the access is under way").isEqualTo(LocalLender.Phase.REVOKING);
            assertThat(client.revocationsIdle()).isFalse();
            holder.release(5_000);
            await("the busy lease revoked", 2_000, () -> ended.size() == 2);
            assertThat(ended.get(1)).isEqualTo(new Ended(busy, RevocationReason.RECLAIMED));
            assertThat(threads.get(1)).as("drained later: ended by the revocation thread").isEqualTo("strata-peer-client-revocations");
            await("acknowledged", 2_000, () -> lender.phase(busy) == LocalLender.Phase.RELEASED);
            await("idle", 2_000, client::revocationsIdle);
            assertThat(client.stats().peer(0).revocations(RevocationReason.RECLAIMED)).isEqualTo(2);
            assertThat(client.stats().peer(0).drainCount()).isEqualTo(2);
            client.checkInvariants();
        }
    }

    /**
     * A lease revoked while an access is under way that ends once the revocation has begun (as a
     * copy does at its next step): with a drain wait the lender's event thread waits for it and
     * ends the lease itself, with no hand-off; with none (0) the access hands it to the
     * revocation thread. A negative wait is refused with the value.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(longs = {0, 5_000_000_000L})
    void aLeaseWhoseAccessEndsWithinTheDrainWaitEndsOnTheLendersEventThread(long drainWaitNanos) throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 16 * 1024).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.builder().lender(lender).policy("best_fit").drainWaitNanos(drainWaitNanos).build()) {
            List<String> threads = new CopyOnWriteArrayList<>();
            List<Ended> ended = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(4_000, ANY, (l, r) -> {
                threads.add(Thread.currentThread().getName());
                ended.add(new Ended(l, r));
            }).orElseThrow();
            CountDownLatch inside = new CountDownLatch(1);
            Thread holder = Thread.ofPlatform().start(() -> client.access(lease, 0, 4_000, view -> {
                inside.countDown();
                await("revoking", 5_000, () -> client.revoking(lease)); // ends once the revocation has begun
            }));
            assertThat(inside.await(5, TimeUnit.SECONDS)).isTrue();
            lender.lendable(0);
            holder.join(10_000);
            await("revoked", 5_000, () -> ended.size() == 1);
            assertThat(ended).containsExactly(new Ended(lease, RevocationReason.RECLAIMED));
            assertThat(threads).as("the thread that ended the lease")
                    .containsExactly(drainWaitNanos > 0 ? "strata-peer-gpu0-events" : "strata-peer-client-revocations");
            await("acknowledged", 5_000, () -> lender.phase(lease) == LocalLender.Phase.RELEASED);
            await("idle", 5_000, client::revocationsIdle);
            assertThat(client.stats().peer(0).drainCount()).isEqualTo(1);
            client.checkInvariants();
        }
        assertThatThrownBy(() -> PeerClient.builder().drainWaitNanos(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-1 ns");
    }

    /**
     * While the lender's event thread waits for an access under way to drain, it sleeps and the
     * access that leaves wakes it: it takes no core from the access it waits for (on two cores a
     * thread that polls, even with {@code Thread.yield()}, can hold the core the access needs for a
     * scheduler slice). An access held for 300 ms after the revocation began costs the event thread
     * well under a tenth of that in CPU time, and the lease still ends on the event thread.
     */
    @Test
    void theEventThreadSleepsWhileItWaitsForAnAccessToDrain() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 16 * 1024).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.builder().lender(lender).policy("best_fit").drainWaitNanos(5_000_000_000L).build()) {
            List<String> threads = new CopyOnWriteArrayList<>();
            PeerLease lease = client.alloc(4_000, ANY, (l, r) -> threads.add(Thread.currentThread().getName())).orElseThrow();
            Thread events = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("strata-peer-gpu0-events"))
                    .findFirst().orElseThrow();
            java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
            CountDownLatch inside = new CountDownLatch(1);
            long[] cpuAtRevocation = {0};
            Thread holder = Thread.ofPlatform().start(() -> client.access(lease, 0, 4_000, view -> {
                inside.countDown();
                await("revoking", 5_000, () -> client.revoking(lease));
                cpuAtRevocation[0] = cpu.getThreadCpuTime(events.threadId());
                LockSupport.parkNanos(300_000_000L); // the access goes on for 300 ms after the revocation began
            }));
            assertThat(inside.await(5, TimeUnit.SECONDS)).isTrue();
            lender.lendable(0);
            holder.join(10_000);
            await("revoked", 5_000, () -> threads.size() == 1);
            long spent = cpu.getThreadCpuTime(events.threadId()) - cpuAtRevocation[0];
            assertThat(spent).as("CPU time of the event thread while it waited 300 ms for the drain, ns").isLessThan(30_000_000L);
            assertThat(threads).as("drained within the wait: ended on the event thread").containsExactly("strata-peer-gpu0-events");
            await("acknowledged", 5_000, () -> lender.phase(lease) == LocalLender.Phase.RELEASED);
            client.checkInvariants();
        }
    }

    @Test
    void aRevocationRacingAnAccessThatEndsCallsBackOnceWithItsReasonAndNeverWhileTheAccessIsUnderWay() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 16 * 1024).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            SplittableRandom random = new SplittableRandom(77);
            AtomicInteger inside = new AtomicInteger();        // accesses between their entry and their exit
            AtomicInteger calledDuringAccess = new AtomicInteger();
            List<List<Ended>> rounds = new ArrayList<>();
            Set<String> threads = ConcurrentHashMap.newKeySet();
            int n = 150;
            for (int round = 0; round < n; round++) {
                List<Ended> ended = new CopyOnWriteArrayList<>();
                rounds.add(ended);
                PeerLease lease = borrow(client, 8_000, (l, r) -> {
                    if (inside.get() != 0) {
                        calledDuringAccess.incrementAndGet();
                    }
                    threads.add(Thread.currentThread().getName());
                    ended.add(new Ended(l, r));
                });
                int spins = random.nextInt(0, 20_000);
                AtomicBoolean stop = new AtomicBoolean();
                Thread reader = Thread.ofPlatform().start(() -> {
                    boolean admitted = true;
                    while (admitted && !stop.get()) {
                        admitted = client.access(lease, 0, 8_000, view -> {
                            inside.incrementAndGet();
                            try {
                                for (int i = 0; i < spins; i++) {
                                    Thread.onSpinWait();
                                }
                                view.get(java.lang.foreign.ValueLayout.JAVA_BYTE, spins % 8_000);
                            } finally {
                                inside.decrementAndGet();
                            }
                        });
                    }
                });
                LockSupport.parkNanos(random.nextLong(0, 300_000)); // the access may be under way, ending, or not begun
                lender.lendable(0);
                await("round " + round + " called back", 5_000, () -> ended.size() == 1);
                stop.set(true);
                reader.join(5_000);
                assertThat(ended).containsExactly(new Ended(lease, RevocationReason.RECLAIMED));
                await("round " + round + " acknowledged", 5_000, () -> lender.phase(lease) == LocalLender.Phase.RELEASED);
                lender.lendable(16 * 1024);
            }
            Thread.sleep(30);
            assertThat(calledDuringAccess).as("callbacks that ran while an access was inside the lease").hasValue(0);
            assertThat(rounds).allSatisfy(ended -> assertThat(ended).as("callbacks once").hasSize(1));
            assertThat(threads).isSubsetOf("strata-peer-gpu0-events", "strata-peer-client-revocations");
            PeerClientStats s = client.stats();
            assertThat(s.peer(0).revocations(RevocationReason.RECLAIMED)).isEqualTo(n);
            assertThat(s.peer(0).revocations(RevocationReason.FENCED)).isZero();
            assertThat(s.callbackFailures()).isZero();
            client.checkInvariants();
            lender.checkInvariants();
        }
    }

    @Test
    void aSlowCallbackOnTheEventThreadSendsThePeersNextRevocationToTheRevocationThread() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu0", 16 * 1024).withGrace(10_000_000_000L));
        try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
            List<String> threads = new CopyOnWriteArrayList<>();
            PeerLease slow = client.alloc(4_000, ANY, (l, r) -> {
                threads.add(Thread.currentThread().getName());
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // well over the 10 ms an event thread allows
            }).orElseThrow();
            lender.lendable(0);
            await("the slow callback ran", 2_000, () -> threads.size() == 1);
            await("acknowledged after it", 2_000, () -> lender.phase(slow) == LocalLender.Phase.RELEASED);
            lender.lendable(16 * 1024);
            PeerLease next = borrow(client, 4_000, (l, r) -> threads.add(Thread.currentThread().getName()));
            lender.lendable(0);
            await("the next callback ran", 2_000, () -> threads.size() == 2);
            assertThat(threads).containsExactly("strata-peer-gpu0-events", "strata-peer-client-revocations");
            await("acknowledged", 2_000, () -> lender.phase(next) == LocalLender.Phase.RELEASED);
            assertThat(client.stats().peer(0).revocations(RevocationReason.RECLAIMED)).isEqualTo(2);
        }
    }
}
