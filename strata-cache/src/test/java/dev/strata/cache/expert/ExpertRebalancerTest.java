package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.PeerClient;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The expert rebalancer over a real {@link PeerClient} and {@link LocalLender}: frequent experts go
 * to peers, misses are served from peer copies, revocation falls back to the masters, and the
 * pager's maps and slot bytes are what a pager without peers produces.
 */
class ExpertRebalancerTest {

    static final ExpertLayout LAYOUT = ExpertPagerTest.LAYOUT; // 3038 bytes of odd tensors
    static final long IMAGE = 3072;                            // one expert rounded to the tier's alignment
    static final int LAYERS = 2;
    static final int EXPERTS = 16;
    static final int TOP_K = 2;

    /** A step's routing: experts 0..3 of each layer are hot, the rest are rare. */
    static int[] route(SplittableRandom r) {
        int[] ids = new int[3 * TOP_K];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = r.nextInt(10) < 8 ? r.nextInt(4) : 4 + r.nextInt(EXPERTS - 4);
        }
        return ids;
    }

    /** Masters and a reference pager without peers, paged with the same routing as the pager under test. */
    private static final class Pair implements AutoCloseable {
        final ExpertFixture fixture;
        final ExpertPager plain;

        Pair(long seed) {
            fixture = new ExpertFixture(LAYOUT, LAYERS, EXPERTS, 1 << 20, seed);
            plain = ExpertPager.builder(fixture.masters, fixture.device).name("plain").topK(TOP_K).slotsPerLayer(TOP_K * 3).build();
        }

        @Override
        public void close() {
            plain.close();
            fixture.close();
        }
    }

    private static void awaitRevocations(PeerClient client, LocalLender lender) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!(client.revocationsIdle() && lender.stats().revokingBytes() == 0
                && client.liveLeases().stream().allMatch(client::valid) && client.revocationsIdle())) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("revocations did not finish in 10 s");
            }
            Thread.sleep(1);
        }
    }

    @Test
    void frequentExpertsArePlacedAndMissesAreServedFromTheirPeerCopies() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu1", 6 * IMAGE));
        try (PeerClient client = PeerClient.of(List.of(lender), "best-fit")) {
            SplittableRandom r = new SplittableRandom(7);
            ExpertFixture f = new ExpertFixture(LAYOUT, LAYERS, EXPERTS, 1 << 20, 21);
            ExpertRebalancer rb = ExpertRebalancer.builder(f.masters, client).chunkBytes(2 * IMAGE).build();
            try (ExpertPager pager = ExpertPager.builder(f.masters, f.device).topK(TOP_K).slotsPerLayer(TOP_K).peerSource(rb).build();
                 ExpertPager plain = ExpertPager.builder(f.masters, f.device).name("plain").topK(TOP_K).slotsPerLayer(TOP_K).build()) {
                rb.follow(pager);
                for (int s = 0; s < 60; s++) {
                    int layer = s % LAYERS;
                    int[] routed = Arrays.copyOf(route(r), TOP_K);
                    assertThat(pager.page(layer, routed).clone()).isEqualTo(plain.page(layer, routed));
                }
                assertThat(rb.stats().placements()).as("a miss never places on a peer").isZero();
                assertThat(rb.stats().fetchesFromHost()).isEqualTo(pager.stats().misses());

                int placed = rb.rebalance();
                assertThat(placed).as("the peer holds six experts").isEqualTo(6);
                rb.checkInvariants();
                // the six placed are the six most routed
                long minPlaced = Long.MAX_VALUE;
                long maxOther = 0;
                for (int l = 0; l < LAYERS; l++) {
                    for (int e = 0; e < EXPERTS; e++) {
                        long c = pager.routeCount(l, e);
                        if (rb.onPeer(l, e)) {
                            minPlaced = Math.min(minPlaced, c);
                        } else {
                            maxOther = Math.max(maxOther, c);
                        }
                    }
                }
                assertThat(minPlaced).isGreaterThanOrEqualTo(maxOther);
                assertThat(rb.rebalance()).as("nothing colder displaces them").isZero();

                long hostBefore = rb.stats().fetchesFromHost();
                for (int s = 0; s < 80; s++) {
                    int layer = s % LAYERS;
                    int[] routed = Arrays.copyOf(route(r), TOP_K);
                    int[] a = pager.page(layer, routed).clone();
                    assertThat(a).isEqualTo(plain.page(layer, routed));
                    assertThat(pager.verifyResidentBytes()).isPositive();
                }
                ExpertRebalancer.Stats st = rb.stats();
                assertThat(st.fetchesFromPeer()).as("hot misses come from the peer").isPositive();
                assertThat(st.bytesKeptOffHostLink()).isEqualTo(st.fetchesFromPeer() * LAYOUT.bytes());
                assertThat(st.fetchesFromPeer() + st.fetchesFromHost()).isEqualTo(pager.stats().misses());
                assertThat(pager.stats().bytesFetched()).as("only host fetches count as bytes from the masters")
                        .isEqualTo(st.fetchesFromHost() * LAYOUT.bytes());
                assertThat(st.fetchesFromHost()).isGreaterThan(hostBefore);
                assertThat(st.placements()).as("misses placed nothing").isEqualTo(6);
                assertThat(st.expertsOnPeers()).isEqualTo(6);
                dev.strata.memory.metrics.PrometheusText text = new dev.strata.memory.metrics.PrometheusText();
                st.writeTo(text);
                assertThat(text.toString())
                        .contains("strata_expert_peer_fetches_total{rebalancer=\"expert-peer\",source=\"peer\"} " + st.fetchesFromPeer())
                        .contains("strata_expert_peer_bytes_kept_off_host_link_total{rebalancer=\"expert-peer\"} "
                                + st.bytesKeptOffHostLink());
                pager.checkInvariants();
            } finally {
                rb.close();
                f.close();
            }
            assertThat(lender.stats().lentBytes()).as("close gives the leases back").isZero();
        }
    }

    @Test
    void revocationFallsBackToTheMastersWithByteExactWeights() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu1", 64 * IMAGE));
        try (PeerClient client = PeerClient.of(List.of(lender), "best-fit")) {
            ExpertRebalancer rb;
            try (Pair pair = new Pair(33)) {
                rb = ExpertRebalancer.builder(pair.fixture.masters, client).chunkBytes(4 * IMAGE).maxMovesPerPass(32).build();
                try (ExpertPager pager = ExpertPager.builder(pair.fixture.masters, pair.fixture.device).name("peer-backed")
                        .topK(TOP_K).slotsPerLayer(TOP_K * 3).peerSource(rb).build()) {
                    rb.follow(pager);
                    SplittableRandom r = new SplittableRandom(3);
                    for (int s = 0; s < 40; s++) {
                        int layer = s % LAYERS;
                        int[] routed = route(r);
                        int[] a = pager.page(layer, routed).clone();
                        assertThat(a).isEqualTo(pair.plain.page(layer, routed));
                    }
                    assertThat(rb.rebalance()).isPositive();
                    int onPeers = rb.stats().expertsOnPeers();
                    assertThat(onPeers).isPositive();

                    lender.lendable(0);
                    awaitRevocations(client, lender);
                    assertThat(rb.stats().expertsOnPeers()).isZero();
                    assertThat(rb.stats().revokedExperts()).isEqualTo(onPeers);
                    long peerBefore = rb.stats().fetchesFromPeer();
                    for (int s = 0; s < 40; s++) {
                        int layer = s % LAYERS;
                        int[] routed = route(r);
                        int[] a = pager.page(layer, routed).clone();
                        assertThat(a).isEqualTo(pair.plain.page(layer, routed));
                        for (int e : routed) {
                            assertThat(pager.slot(layer, a[e]).asSlice(0, LAYOUT.bytes())
                                    .mismatch(pair.fixture.masters.view(layer, e))).isEqualTo(-1L);
                        }
                    }
                    assertThat(rb.stats().fetchesFromPeer()).as("no peer copy is left to serve").isEqualTo(peerBefore);
                    rb.rebalance(); // frees the revoked handles; the peer lends nothing
                    rb.checkInvariants();
                    assertThat(rb.tier().used()).isZero();

                    lender.lendable(64 * IMAGE);
                    assertThat(rb.rebalance()).as("capacity came back").isPositive();
                    rb.checkInvariants();
                } finally {
                    rb.close();
                }
            }
            assertThat(lender.stats().lentBytes()).isZero();
        }
    }

    @Test
    void periodicRebalancingUnderRandomRevocationsKeepsPagerOutputsUnchanged() throws Exception {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu1", 24 * IMAGE));
        try (PeerClient client = PeerClient.of(List.of(lender), "best-fit")) {
            ExpertRebalancer rb;
            try (Pair pair = new Pair(41)) {
                rb = ExpertRebalancer.builder(pair.fixture.masters, client).chunkBytes(3 * IMAGE).decay(0.8).build();
                try (ExpertPager pager = ExpertPager.builder(pair.fixture.masters, pair.fixture.device).name("peer-backed")
                        .topK(TOP_K).slotsPerLayer(TOP_K * 3).peerSource(rb).build()) {
                    rb.follow(pager).start(Duration.ofMillis(1));
                    SplittableRandom r = new SplittableRandom(5);
                    for (int s = 0; s < 600; s++) {
                        int layer = r.nextInt(LAYERS);
                        int[] routed = route(r);
                        int[] a = pager.page(layer, routed).clone();
                        assertThat(a).as("step %d", s).isEqualTo(pair.plain.page(layer, routed));
                        for (int e : routed) {
                            assertThat(pager.slot(layer, a[e]).asSlice(0, LAYOUT.bytes())
                                    .mismatch(pair.fixture.masters.view(layer, e))).as("step %d expert %d", s, e).isEqualTo(-1L);
                        }
                        if (r.nextInt(20) == 0) {
                            lender.lendable(r.nextInt(3) == 0 ? 0 : r.nextLong(24 * IMAGE + 1));
                        }
                        if (s % 50 == 0) {
                            Thread.sleep(2); // let passes run
                        }
                    }
                    ExpertRebalancer.Stats st = rb.stats();
                    assertThat(st.placements()).isPositive();
                    assertThat(st.fetchesFromPeer()).isPositive();
                    assertThat(st.fetchesFromPeer() + st.fetchesFromHost()).isEqualTo(pager.stats().misses());
                    pager.checkInvariants();
                } finally {
                    rb.close();
                }
                rb.checkInvariants();
            }
            lender.checkInvariants();
            assertThat(lender.stats().lentBytes()).isZero();
        }
    }

    @Test
    void settingsAreChecked() {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu1", 8 * IMAGE));
        try (PeerClient client = PeerClient.of(List.of(lender), "best-fit");
             ExpertFixture f = new ExpertFixture(LAYOUT, 1, 4, 1 << 20, 9)) {
            assertThatThrownBy(() -> ExpertRebalancer.builder(f.masters, client).decay(1.0).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("decay");
            assertThatThrownBy(() -> ExpertRebalancer.builder(f.masters, client).chunkBytes(100).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("chunk 100 bytes");
            assertThatThrownBy(() -> ExpertRebalancer.builder(f.masters, client).maxMovesPerPass(0).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("moves per pass");
        }
    }
}
