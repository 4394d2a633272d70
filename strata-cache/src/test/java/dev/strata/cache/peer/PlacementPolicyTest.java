package dev.strata.cache.peer;

import static dev.strata.cache.peer.PeerTesting.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.Durability;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Each placement policy picks what its rule says, under every kind of hint, with real lenders. */
class PlacementPolicyTest {
    private static final LeaseHints ANY = LeaseHints.of(Durability.BACKED);
    private final List<PeerClient> clients = new ArrayList<>();
    private final AtomicLong clock = new AtomicLong(1_000_000_000L); // ns, advanced by hand

    @AfterEach
    void close() {
        clients.forEach(PeerClient::close);
    }

    /** Lenders with the given offers (bytes), distances and first-byte latencies (ns); ids 0.. in order. */
    private List<LocalLender> lenders(long[] offers, int[] distances, long[] latencies) {
        List<LocalLender> out = new ArrayList<>();
        for (int i = 0; i < offers.length; i++) {
            out.add(new LocalLender(LocalLender.Config.of(i, "peer" + i, offers[i]).withDistance(distances[i])
                    .withFirstByteLatency(latencies[i]).withGrace(10_000_000_000L)));
        }
        return out;
    }

    private PeerClient client(List<LocalLender> lenders, String policy) {
        PeerClient c = PeerClient.builder().lenders(lenders).policy(policy).clock(clock::get)
                .revocationHalfLifeNanos(1_000_000_000L).build();
        clients.add(c);
        return c;
    }

    private static int peerOf(java.util.Optional<PeerLease> lease) {
        return lease.orElseThrow(() -> new AssertionError("no lease")).peer();
    }

    @Test
    void bestFitPicksTheLeastLeftoverAmongPeersThatFit() {
        PeerClient c = client(lenders(new long[] {10_048, 6_016, 20_032}, new int[] {1, 1, 1}, new long[] {1, 1, 1}), "BEST_FIT");
        assertThat(peerOf(c.alloc(5_000, ANY))).isEqualTo(1);   // leftovers 5048, 1016, 15032
        assertThat(peerOf(c.alloc(7_000, ANY))).isEqualTo(0);   // peer 1 has 1008 left: too small
        assertThat(peerOf(c.alloc(9_000, ANY))).isEqualTo(2);
        assertThat(c.alloc(30_000, ANY)).isEmpty();
        assertThat(c.stats().allocMisses()).isEqualTo(1);
        c.checkInvariants();
    }

    @Test
    void localityPicksTheNearestPeerThenTheBestFit() {
        PeerClient c = client(lenders(new long[] {5_056, 30_016, 9_024, 4_032}, new int[] {2, 1, 1, 0}, new long[] {1, 1, 1, 1}),
                "locality");
        assertThat(peerOf(c.alloc(4_000, ANY))).isEqualTo(3);   // distance 0
        assertThat(peerOf(c.alloc(4_000, ANY))).isEqualTo(2);   // distance 1, better fit than peer 1
        assertThat(peerOf(c.alloc(4_000, ANY))).isEqualTo(2);
        assertThat(peerOf(c.alloc(4_000, ANY))).isEqualTo(1);   // peer 2 is full
        assertThat(peerOf(c.alloc(4_000, ANY.within(2)))).isEqualTo(1);
        assertThat(c.alloc(4_000, ANY.within(0))).as("nothing left at distance 0").isEmpty();
    }

    @Test
    void hintsFilterByDistanceAndLatencyAndPutThePreferredPeerFirst() {
        PeerClient c = client(lenders(new long[] {8_000, 8_000, 64_000}, new int[] {1, 2, 1}, new long[] {1_000, 5_000, 50_000}),
                "best_fit");
        assertThat(peerOf(c.alloc(1_000, ANY.latencyBound(10_000)))).isEqualTo(0);
        assertThat(peerOf(c.alloc(1_000, ANY.latencyBound(10_000).within(2).preferring(1)))).isEqualTo(1);
        assertThat(peerOf(c.alloc(1_000, ANY.preferring(2)))).as("preferred over the best fit").isEqualTo(2);
        assertThat(peerOf(c.alloc(1_000, ANY.preferring(2).latencyBound(10_000)))).as("preferred peer too slow").isEqualTo(0);
        assertThat(peerOf(c.alloc(1_000, ANY.preferring(1).within(1)))).as("preferred peer too far").isEqualTo(0);
        assertThat(peerOf(c.alloc(20_000, ANY.preferring(0)))).as("preferred peer too small").isEqualTo(2);
        assertThat(c.alloc(1_000, ANY.latencyBound(500))).as("no peer that fast").isEmpty();
        // a lender that does not know its latency satisfies only hints that accept any latency
        PeerLender unknown = new PeerLender() {
            final LocalLender inner = new LocalLender(LocalLender.Config.of(9, "unknown", 4_096));

            @Override public int id() { return inner.id(); }
            @Override public String name() { return inner.name(); }
            @Override public int distance() { return inner.distance(); }
            @Override public long lendableBytes() { return inner.lendableBytes(); }
            @Override public boolean alive() { return inner.alive(); }
            @Override public LentRegion borrow(long size) { return inner.borrow(size); }
            @Override public void giveBack(LentRegion region) { inner.giveBack(region); }
            @Override public void acknowledge(LentRegion region) { inner.acknowledge(region); }
            @Override public void listen(LenderEvents events) { inner.listen(events); }
            @Override public void close() { inner.close(); }
        };
        PeerClient d = PeerClient.builder().lender(unknown).clock(clock::get).build();
        clients.add(d);
        assertThat(d.alloc(100, ANY.latencyBound(1_000_000_000L))).isEmpty();
        assertThat(peerOf(d.alloc(100, ANY))).isEqualTo(9);
    }

    @Test
    void fairnessCapsEachConsumerAndSpreadsItOverThePeers() {
        PeerClient c = client(lenders(new long[] {64_000, 64_000, 64_000}, new int[] {1, 1, 1}, new long[] {1, 1, 1}), "FAIRNESS");
        PeerClient.ConsumerView kv = c.forConsumer("kv", new ConsumerLimits(10_000, 2.0, 2));
        PeerClient.ConsumerView experts = c.forConsumer("experts", ConsumerLimits.bytes(100_000));
        assertThat(c.forConsumer("kv", new ConsumerLimits(10_000, 2.0, 2)).name()).isEqualTo("kv");
        assertThatThrownBy(() -> c.forConsumer("kv", ConsumerLimits.bytes(5))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'kv'");

        // spread: each consumer goes where it holds least, ties by best fit (then the lowest id)
        assertThat(peerOf(kv.alloc(3_000, ANY))).isEqualTo(0);
        assertThat(peerOf(kv.alloc(3_000, ANY))).isEqualTo(1);
        assertThat(kv.alloc(1_000, ANY)).as("burst of 2 spent").isEmpty();
        clock.addAndGet(500_000_000L); // one token back at 2 per second
        assertThat(peerOf(kv.alloc(3_000, ANY))).isEqualTo(2);
        clock.addAndGet(10_000_000_000L);
        assertThat(kv.alloc(1_001, ANY)).as("10000-byte cap: 9000 held").isEmpty();
        assertThat(peerOf(kv.alloc(1_000, ANY))).isEqualTo(0);
        // lendable now 59968, 60992, 60992 (kv's leases rounded to 64 bytes)
        assertThat(peerOf(experts.alloc(50_000, ANY))).as("experts hold nothing anywhere: best fit").isEqualTo(0);
        assertThat(peerOf(experts.alloc(5_000, ANY))).as("experts hold least on 1 and 2; equal fit, lower id").isEqualTo(1);
        PeerClientStats s = c.stats();
        assertThat(s.consumer("kv").refusedRate()).isEqualTo(1);
        assertThat(s.consumer("kv").refusedBytes()).isEqualTo(1);
        assertThat(s.consumer("kv").borrowedBytes()).isEqualTo(10_000);
        assertThat(s.consumer("experts").borrowedBytes()).isEqualTo(55_000);
        c.checkInvariants();
        kv.close();
        assertThat(c.stats().consumer("kv").borrowedBytes()).isZero();
        assertThat(c.stats().consumer("experts").borrowedBytes()).isEqualTo(55_000);
        c.checkInvariants();
    }

    @Test
    void stabilityAvoidsAPeerThatRevokedRecentlyUntilItsCountDecays() {
        List<LocalLender> ls = lenders(new long[] {8_000, 16_000}, new int[] {1, 1}, new long[] {1, 1});
        PeerClient c = client(ls, "stability");
        assertThat(peerOf(c.alloc(1_000, ANY))).as("no revocations yet: best fit").isEqualTo(0);
        c.free(c.liveLeases().getFirst());
        for (int i = 0; i < 2; i++) {
            PeerLease l = c.alloc(1_000, ANY.preferring(0)).orElseThrow();
            ls.get(0).lendable(0);
            await("revoked", 2_000, () -> !c.liveLeases().contains(l));
            ls.get(0).lendable(8_000);
        }
        assertThat(c.stats().peer(0).recentRevocations()).isEqualTo(2.0);
        assertThat(peerOf(c.alloc(1_000, ANY))).as("peer 0 churns").isEqualTo(1);
        clock.addAndGet(10_000_000_000L); // ten half-lives: 2 -> 0.002
        assertThat(c.stats().peer(0).recentRevocations()).isLessThan(0.01);
        assertThat(peerOf(c.alloc(1_000, ANY))).as("forgiven: best fit again").isEqualTo(0);
    }

    @Test
    void byDefaultAClientTurnsAwayFromAPeerThatKeepsTakingItsMemoryBack() {
        List<LocalLender> ls = lenders(new long[] {8_000, 16_000}, new int[] {1, 1}, new long[] {1, 1});
        PeerClient c = PeerClient.builder().lenders(ls).clock(clock::get).build(); // no policy named
        clients.add(c);
        assertThat(c.policy().name()).isEqualTo("STABILITY");
        assertThat(peerOf(c.alloc(1_000, ANY))).as("no revocations yet: best fit").isEqualTo(0);
        c.free(c.liveLeases().getFirst());
        PeerLease l = c.alloc(1_000, ANY).orElseThrow();
        ls.get(0).lendable(0); // peer 0's own demand comes back: it takes the lease back
        await("revoked", 2_000, () -> !c.liveLeases().contains(l));
        ls.get(0).lendable(8_000);
        assertThat(peerOf(c.alloc(1_000, ANY))).as("the next lease comes from the peer that kept its word").isEqualTo(1);
    }

    @Test
    void policiesAreChosenByNameWithAClearErrorForOthers() {
        assertThat(PlacementPolicy.named("best-fit").name()).isEqualTo("BEST_FIT");
        assertThat(PlacementPolicy.named("Locality").name()).isEqualTo("LOCALITY");
        assertThat(PlacementPolicy.named("fairness").name()).isEqualTo("FAIRNESS");
        assertThat(PlacementPolicy.named("STABILITY").name()).isEqualTo("STABILITY");
        assertThat(PlacementPolicy.defaultPolicy().name()).isEqualTo("STABILITY");
        assertThat(PlacementPolicy.named(PlacementPolicy.DEFAULT_NAME)).isSameAs(PlacementPolicy.defaultPolicy());
        assertThatThrownBy(() -> PlacementPolicy.named("closest")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'closest'").hasMessageContaining("BEST_FIT");
        assertThatThrownBy(() -> new ConsumerLimits(0, 1, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max bytes 0");
    }
}
