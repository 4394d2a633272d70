package dev.strata.cache.kv;

import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.ResidencyInfo;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerTier;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * KV offload onto memory lent by peers: a store chain PEER → HOST under a {@link KvBlockManager},
 * with a real {@link PeerClient} over a {@link LocalLender} that takes its memory back.
 */
class KvPeerOffloadTest {
    private static final int BT = KvRig.GEOMETRY.blockTokens();
    private static final long PEER_BUDGET = 64 * 1024;

    private LocalLender lender;
    private PeerClient client;
    private PeerTier peer;

    @BeforeEach
    void peers() {
        lender = new LocalLender(LocalLender.Config.of(0, "gpu1", PEER_BUDGET));
        client = PeerClient.of(List.of(lender), "best-fit");
        peer = new PeerTier("kv-peer", client, PEER_BUDGET, 4096, LeaseHints.of(Durability.LOSSY));
    }

    @AfterEach
    void closePeers() {
        assertThat(peer.used()).as("peer bytes left after the manager closed").isZero();
        peer.close();
        client.close();
    }

    private void awaitRevocations() throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!(client.revocationsIdle() && lender.stats().revokingBytes() == 0
                && client.liveLeases().stream().allMatch(client::valid) && client.revocationsIdle())) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("revocations did not finish in 10 s");
            }
            Thread.sleep(1);
        }
    }

    /** Computes {@code tokens} into a sequence, releases it and pushes its blocks out of the 4 slots by write-back. */
    private ObjectKey[] computeAndOffload(KvRig rig, int[] tokens, long otherSeed) {
        KvBlockManager m = rig.manager;
        KvSequence s = m.newSequence();
        assertThat(rig.extend(s, tokens, tokens.length)).isEqualTo(AllocationStatus.ALLOCATED);
        rig.idle(); // write-through copies land before the blocks can be evicted
        m.release(s);
        KvSequence other = m.newSequence();
        int[] o = KvRig.tokens(otherSeed, 4 * BT);
        assertThat(rig.extend(other, o, o.length)).isEqualTo(AllocationStatus.ALLOCATED);
        m.release(other, dev.strata.cache.PriorityClass.EVICTABLE);
        rig.idle();
        return rig.hasher.chain(tokens, tokens.length);
    }

    /** Loads {@code match} into {@code seq}, continuing while slots are held by blocks being written back. */
    private static LoadOutcome loadFully(KvRig rig, PrefixMatch match, KvSequence seq) throws Exception {
        LoadOutcome out = rig.manager.load(match, seq).get(10, TimeUnit.SECONDS);
        for (int tries = 0; out.slotsShort() > 0 && out.failures().isEmpty() && tries < 100; tries++) {
            rig.manager.awaitIdle(10, TimeUnit.SECONDS);
            out = rig.manager.load(match, seq).get(10, TimeUnit.SECONDS);
        }
        return out;
    }

    private static List<String> tiersOf(KvRig rig, ObjectKey key) {
        return rig.store.residencies(key).stream().map(ResidencyInfo::tierName).toList();
    }

    @Test
    void evictedBlocksGoToPeersFirstAndComeBackByteExact() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 16, 0, 0).peer(peer))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(31, 4 * BT);
            ObjectKey[] keys = computeAndOffload(rig, a, 32);
            for (ObjectKey k : keys) {
                assertThat(tiersOf(rig, k)).as("block %s", k).containsExactly("kv-peer");
            }
            PrefixMatch match = m.match(a, a.length);
            assertThat(match.count(BlockLocation.PEER)).isEqualTo(4);
            KvSequence s = m.newSequence();
            LoadOutcome out = loadFully(rig, match, s);
            assertThat(out.complete()).isTrue();
            rig.idle();
            rig.assertCommittedBytes(s);
            assertThat(m.stats().hits(BlockLocation.PEER)).isEqualTo(4);
            assertThat(m.stats().blocks(KvLink.RELOAD)).isEqualTo(4);
            m.release(s);
        }
    }

    @Test
    void revokedLossyBlocksAreMissesAndAreRecomputed() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 16, 0, 0).peer(peer))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(41, 4 * BT);
            ObjectKey[] keys = computeAndOffload(rig, a, 42);
            assertThat(m.match(a, a.length).count(BlockLocation.PEER)).isEqualTo(4);

            lender.lendable(0);
            awaitRevocations();
            rig.store.absorbRevocations();
            m.poll();
            for (ObjectKey k : keys) {
                assertThat(rig.store.contains(k)).isFalse();
            }
            assertThat(m.stats().drops()).as("each dropped block forgotten once").isEqualTo(4);
            assertThat(m.match(a, a.length).blocks()).as("a miss").isZero();

            KvSequence again = m.newSequence(); // the engine recomputes
            assertThat(rig.extend(again, a, a.length)).isEqualTo(AllocationStatus.ALLOCATED);
            rig.assertCommittedBytes(again);
            m.release(again);
            rig.idle();
        }
    }

    @Test
    void backedBlocksAreWrittenThroughAndServedFromHostAfterRevocation() throws Exception {
        KvManagerConfig backed = KvManagerConfig.defaults().offloadDurability(Durability.BACKED);
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 16, 0, 0).peer(peer).config(backed))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(51, 4 * BT);
            ObjectKey[] keys = computeAndOffload(rig, a, 52);
            for (ObjectKey k : keys) {
                assertThat(tiersOf(rig, k)).as("block %s", k).containsExactly("kv-peer", rig.host.name());
            }
            PrefixMatch match = m.match(a, a.length);
            assertThat(match.count(BlockLocation.PEER)).isEqualTo(4);

            lender.lendable(0); // after the match: the load meets the revoked copies
            awaitRevocations();
            KvSequence s = m.newSequence();
            LoadOutcome out = loadFully(rig, match, s);
            assertThat(out.complete()).as("served from HOST: %s", out.failures()).isTrue();
            rig.idle();
            rig.assertCommittedBytes(s);
            assertThat(m.stats().drops()).isZero();
            for (ObjectKey k : keys) {
                assertThat(tiersOf(rig, k)).containsExactly(rig.host.name());
            }
            m.release(s);
        }
    }

    @Test
    void revocationsDuringLoadsFailOnlyTheirBlocksAndNeverServeStaleBytes() throws Exception {
        for (Durability durability : Durability.values()) {
            // write-through: blocks are in the store from commit on, so an eviction frees its slot at once and the
            // load's reads start right away, racing the revocation below
            KvManagerConfig config = KvManagerConfig.defaults().offload(OffloadMode.WRITE_THROUGH).offloadDurability(durability);
            try (KvRig rig = new KvRig(KvRig.Spec.of(4, 128, 0, 0).peer(peer).config(config))) {
                KvBlockManager m = rig.manager;
                SplittableRandom random = new SplittableRandom(61 + durability.ordinal());
                int completeLoads = 0;
                for (int round = 0; round < 12; round++) {
                    lender.lendable(PEER_BUDGET);
                    peer.refresh();
                    int[] a = KvRig.tokens(random.nextLong(), 4 * BT);
                    computeAndOffload(rig, a, random.nextLong());
                    PrefixMatch match = m.match(a, a.length);
                    KvSequence s = m.newSequence();
                    CompletableFuture<LoadOutcome> f = m.load(match, s);
                    if (random.nextBoolean()) {
                        Thread.sleep(0, random.nextInt(200_000));
                    }
                    lender.lendable(random.nextInt(3) == 0 ? PEER_BUDGET / 2 : 0); // while the reads may be under way
                    LoadOutcome out = f.get(10, TimeUnit.SECONDS);
                    for (int tries = 0; out.slotsShort() > 0 && out.failures().isEmpty() && tries < 100; tries++) {
                        m.awaitIdle(10, TimeUnit.SECONDS);
                        out = m.load(match, s).get(10, TimeUnit.SECONDS);
                    }
                    awaitRevocations();
                    rig.idle();
                    if (durability == Durability.BACKED) {
                        assertThat(out.complete()).as("round %d: BACKED blocks always load: %s", round, out.failures()).isTrue();
                    }
                    if (out.complete()) {
                        completeLoads++;
                    }
                    for (BlockLoadFailure failure : out.failures()) {
                        assertThat(match.location(failure.blockIndex())).as("only blocks read from a peer fail: %s", failure)
                                .isEqualTo(BlockLocation.PEER);
                    }
                    for (int i = 0; i < out.loadedBlocks(); i++) {
                        assertThat(rig.mismatch(s.slot(i), s.key(i))).as("round %d block %d", round, i).isEqualTo(-1L);
                    }
                    m.release(s);
                    rig.idle();
                }
                assertThat(completeLoads).isPositive();
                assertThat(m.stats().unexpectedDrops()).isZero();
            }
        }
    }
}
