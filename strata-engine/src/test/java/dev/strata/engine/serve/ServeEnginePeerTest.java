package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.Durability;
import dev.strata.cache.kv.BlockLocation;
import dev.strata.cache.kv.KvManagerStats;
import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerClientStats;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ServeEngine} borrowing from peers computes exactly what it computes without them: KV
 * blocks offloaded onto a PEER tier above HOST (LOSSY and BACKED) and experts placed on peers by
 * the rebalancer, with the peers taking all their memory back, and one of them dying, in the middle
 * of generations; every greedy token equals the engine's without any tier.
 */
class ServeEnginePeerTest {
    private static final int BLOCK_TOKENS = 8;
    private static final int ANSWER = 6;
    // four conversations: the other three's turns between two turns of one push its own blocks off the
    // 16 DEVICE slots, so the third turn's first prefill finds some on the peer before the peers take it all back
    private static final int CONVERSATIONS = 4;
    private static final long PEER_BUDGET = 2L << 20;

    @TempDir
    static Path dir;
    static Path model;

    @BeforeAll
    static void synthesise() throws Exception {
        model = dir.resolve("peer-moe");
        SynthSpec spec = new SynthSpec(ModelFamily.QWEN3_MOE, 2, 6, 2, 48, 40, 24, 6, 2, 8, 400, DType.BF16, 78, 1, 3, false);
        ModelSynthesizer.write(spec, model, (d, t, b, tb) -> { });
    }

    /** Greedy decoding of {@code prompt} for {@code n} tokens; {@code beforeStep} runs before each decode step. */
    private static int[] greedy(ServeEngine engine, int[] prompt, int n, IntConsumer beforeStep) {
        engine.kv().awaitIdle(30, TimeUnit.SECONDS);
        int[] out = new int[n];
        try (ModelRunner.Sequence seq = engine.runner().newSequence()) {
            float[] logits = seq.prefill(prompt, false)[0];
            for (int i = 0; i < n; i++) {
                int best = 0;
                for (int v = 1; v < logits.length; v++) {
                    if (logits[v] > logits[best]) {
                        best = v;
                    }
                }
                out[i] = best;
                if (i + 1 < n) {
                    beforeStep.accept(i);
                    logits = seq.decode(best);
                }
            }
        }
        return out;
    }

    /** Turns of {@value #CONVERSATIONS} conversations over a shared system prefix, each prompt extending the last by its answer. */
    private static List<int[]> conversation(ServeEngine reference, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] system = r.ints(37, 1, 390).toArray();
        List<int[]> prompts = new ArrayList<>();
        List<int[]> histories = new ArrayList<>(Collections.nCopies(CONVERSATIONS, system));
        for (int t = 0; t < 3; t++) {
            for (int s = 0; s < CONVERSATIONS; s++) {
                int[] user = r.ints(5 + r.nextInt(13), 1, 390).toArray();
                int[] prompt = concat(histories.get(s), user);
                prompts.add(prompt);
                histories.set(s, concat(prompt, greedy(reference, prompt, ANSWER, i -> { })));
            }
        }
        return prompts;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    @Test
    void peersRevokedInTheMiddleOfGenerationsLeaveGreedyTokensUnchanged() {
        try (ServeEngine reference = new ServeEngine(model, ServeEngine.Options.builder().blockTokens(BLOCK_TOKENS).kvBlocks(128).conclude())) {
            List<int[]> prompts = conversation(reference, 9);
            int[][] expected = new int[prompts.size()][];
            for (int i = 0; i < prompts.size(); i++) {
                expected[i] = greedy(reference, prompts.get(i), ANSWER, s -> { });
            }
            for (Durability durability : Durability.values()) {
                run(prompts, expected, durability);
            }
        }
    }

    private static void run(List<int[]> prompts, int[][] expected, Durability durability) {
        LocalLender a = new LocalLender(LocalLender.Config.of(0, "peer-a", PEER_BUDGET));
        LocalLender b = new LocalLender(LocalLender.Config.of(1, "peer-b", PEER_BUDGET));
        try (PeerClient client = PeerClient.of(List.of(a, b), "best-fit");
             ServeEngine engine = new ServeEngine(model, ServeEngine.Options.builder().blockTokens(BLOCK_TOKENS).kvBlocks(16).expertCap(3)
                     .hostKv(4L << 20).peers(client, 1L << 20, 1L << 20).peerKvDurability(durability)
                     .rebalancePeriod(java.time.Duration.ofSeconds(3600)).conclude())) {
            assertThat(engine.kvTiers()).hasSize(2);
            assertThat(engine.kvPeerTier()).isNotNull();
            assertThat(engine.rebalancer()).isNotNull();
            // the third turn reloads evicted prefix blocks from the peers: they take everything back in the
            // middle of its first generation, lend again in the second, and one dies in the last
            int revokeAt = prompts.size() - CONVERSATIONS;
            int[] leasesAtRevoke = {-1}; // leases live when the peers take their memory back
            int killAt = prompts.size() - 1;
            for (int p = 0; p < prompts.size(); p++) {
                int prompt = p;
                engine.rebalancer().rebalance(); // places the most-routed experts so far (the periodic pass, made here)
                int[] got = greedy(engine, prompts.get(p), ANSWER, step -> {
                    if (step == ANSWER / 2 && prompt == revokeAt) {
                        leasesAtRevoke[0] = client.liveLeases().size();
                        a.lendable(0); // both peers take every byte back mid-generation
                        b.lendable(0);
                    } else if (step == ANSWER / 2 && prompt == revokeAt + 1) {
                        a.lendable(PEER_BUDGET);
                        b.lendable(PEER_BUDGET);
                    } else if (step == ANSWER / 2 && prompt == killAt) {
                        a.kill(); // one peer dies mid-generation
                    }
                });
                assertThat(got).as("prompt %d with %s peer KV", p, durability).containsExactly(expected[p]);
                engine.kv().checkInvariants();
            }
            engine.kv().awaitIdle(30, TimeUnit.SECONDS);
            // a peer's reclaims and its death reach the client on the lender's event thread, and revocations end
            // on the client's revocation thread once their accesses drained: let the last ones arrive and end
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!(a.eventsDelivered() && b.eventsDelivered() && client.revocationsIdle()) && System.nanoTime() < until) {
                LockSupport.parkNanos(5_000_000);
            }
            assertThat(a.eventsDelivered() && b.eventsDelivered()).as("the peers' events reached the client").isTrue();
            assertThat(client.revocationsIdle()).as("revocations under way ended").isTrue();
            assertThat(leasesAtRevoke[0]).as("leases live when the peers took their memory back (%s)", durability).isPositive();
            engine.rebalancer().checkInvariants();
            KvManagerStats kv = engine.kv().stats();
            PeerClientStats stats = client.stats();
            assertThat(kv.hits(BlockLocation.PEER)).as("KV blocks reloaded from the peers (%s)", durability).isPositive();
            assertThat(engine.rebalancer().stats().fetchesFromPeer()).as("expert fetches served from the peers").isPositive();
            assertThat(engine.rebalancer().stats().bytesKeptOffHostLink()).isPositive();
            assertThat(stats.peer(0).revocations() + stats.peer(1).revocations())
                    .as("leases revoked (%s; %d leases live at the reclaim): %s", durability, leasesAtRevoke[0], stats.peers())
                    .isPositive();
            assertThat(stats.peer(0).alive()).isFalse();
            assertThat(engine.kvPeerTier().counters().leasesRevoked()).isPositive();
            String metrics = engine.peerMetrics();
            assertThat(metrics).contains("strata_peer_borrowed_bytes{").contains("strata_peer_revocations_total{")
                    .contains("strata_peer_tier_leases_revoked_total{tier=\"peer\"}")
                    .contains("strata_peer_tier_borrowed_bytes{tier=\"expert-peer\"}")
                    .contains("strata_expert_peer_fetches_total{");
            System.out.printf("%s: %d KV hits on PEER, %d on HOST; experts %s; peers %s%n", durability, kv.hits(BlockLocation.PEER),
                    kv.hits(BlockLocation.HOST), engine.rebalancer().stats(), stats.peers().stream()
                            .map(s -> s.name() + " " + s.reclaimed() + "/" + s.fenced() + "/" + s.lost()).toList());
        }
    }

    @Test
    void peerOptionsNameEveryBadValue() {
        assertThatThrownBy(() -> ServeEngine.Options.builder().peers(null, 1 << 20, 0).conclude())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("need a peer client");
        try (PeerClient client = PeerClient.of(List.of(new LocalLender(LocalLender.Config.of(0, "p", 1 << 20))), "best-fit")) {
            assertThatThrownBy(() -> ServeEngine.Options.builder().peers(client, 1 << 20, -5).conclude())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs a HOST KV tier")
                    .hasMessageContaining("peer expert bytes -5");
            assertThatThrownBy(() -> ServeEngine.Options.builder().rebalancePeriod(java.time.Duration.ZERO).peerKvDurability(null).conclude())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rebalance period")
                    .hasMessageContaining("durability");
        }
    }
}
