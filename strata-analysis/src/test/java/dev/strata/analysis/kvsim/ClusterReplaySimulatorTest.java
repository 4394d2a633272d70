package dev.strata.analysis.kvsim;

import static dev.strata.analysis.kvsim.KvReplaySimulator.DEVICE;
import static dev.strata.analysis.kvsim.KvReplaySimulatorTest.randomTrace;
import static dev.strata.analysis.kvsim.KvReplaySimulatorTest.trace;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.analysis.kvsim.ClusterReplaySimulator.WritePolicy;
import dev.strata.analysis.kvsim.ReplayRouter.Kind;
import dev.strata.analysis.kvtrace.TraceRequest;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Multi-machine replays behind a shared cluster tier: hand-derived cases, conservation and the one-machine equivalence. */
class ClusterReplaySimulatorTest {
    private static final long BLOCK_BYTES = 512L * 128 * 1024; // 512 tokens at 128 KiB per token: 64 MiB

    private static ClusterReplaySimulator.Config config(int machines, long device, long cluster, WritePolicy write, Kind router) {
        return new ClusterReplaySimulator.Config(machines, KvReplaySimulator.Config.single(device, PolicyKind.LRU, BLOCK_BYTES)
                .withInvariantChecks(), cluster, write, router, 1);
    }

    private static long[] ids(long... ids) {
        return ids;
    }

    @Test
    void aPrefixComputedOnOneMachineIsReadFromTheClusterByTheOther() {
        // round-robin over 2 machines, 10 device blocks each, cluster of 10, write-through:
        // r0 [1,2,3] -> m0: nothing anywhere, 3 recomputed and written.
        // r1 [1,2,4] -> m1: 1,2 from the cluster, 4 recomputed and written.
        // r2 [1,2,3] -> m0: all 3 local.
        // r3 [1,2,3] -> m1: 1,2 local (loaded by r1), 3 from the cluster.
        PrefixTrace t = trace(ids(1, 2, 3), ids(1, 2, 4), ids(1, 2, 3), ids(1, 2, 3));
        ClusterReplayResult r = ClusterReplaySimulator.replay(t, config(2, 10, 10, WritePolicy.THROUGH, Kind.ROUND_ROBIN));
        ClusterReplayResult.Machine m0 = r.machines().get(0);
        ClusterReplayResult.Machine m1 = r.machines().get(1);
        assertThat(m0.requests()).isEqualTo(2);
        assertThat(m0.localHits(DEVICE)).isEqualTo(3);
        assertThat(m0.clusterHits()).isZero();
        assertThat(m0.recomputed()).isEqualTo(3);
        assertThat(m0.clusterWrites()).isEqualTo(3);
        assertThat(m1.requests()).isEqualTo(2);
        assertThat(m1.localHits(DEVICE)).isEqualTo(2);
        assertThat(m1.clusterHits()).isEqualTo(3);
        assertThat(m1.recomputed()).isEqualTo(1);
        assertThat(m1.clusterWrites()).isEqualTo(1);
        assertThat(m1.local().recomputed()).as("the machine's own view: cluster loads were written into its device tier")
                .isEqualTo(4);
        assertThat(r.references()).isEqualTo(12);
        assertThat(r.localHits() + r.clusterHits() + r.recomputed()).isEqualTo(12);
        assertThat(r.clusterStored()).as("blocks 1, 2, 3, 4 once each").isEqualTo(4);
        assertThat(r.networkBlocks()).isEqualTo(3 + 4);
        assertThat(r.networkBytes()).isEqualTo(7 * BLOCK_BYTES);
    }

    @Test
    void aBlockWrittenByTwoMachinesIsStoredOnce() {
        // round-robin over 2 machines of 2 device blocks, cluster of 100, write-behind (written when evicted):
        // r0 [1,2] -> m0 and r1 [1,2] -> m1: the cluster holds nothing yet, both recompute.
        // r2 [7,8] -> m0: 1 is evicted, 2 dropped with it: both written and stored.
        // r3 [7,8] -> m1: m1 evicts 1 and 2 too: written again, nothing stored (7 and 8 are still on m0 only).
        // r4 [1,2] -> m0: 1 and 2 read from the cluster.
        PrefixTrace t = trace(ids(1, 2), ids(1, 2), ids(7, 8), ids(7, 8), ids(1, 2));
        ClusterReplayResult r = ClusterReplaySimulator.replay(t, config(2, 2, 100, WritePolicy.BEHIND, Kind.ROUND_ROBIN));
        assertThat(r.clusterWrites()).as("1, 2 by each machine; 7, 8 by m0 when r4's load evicts them").isEqualTo(6);
        assertThat(r.duplicateWrites()).isEqualTo(2);
        assertThat(r.machines().get(0).clusterStores()).isEqualTo(4);
        assertThat(r.machines().get(1).clusterStores()).isZero();
        assertThat(r.clusterStored()).as("1, 2, 7, 8 once each, though 1 and 2 were written twice").isEqualTo(4);
        assertThat(r.machines().get(0).clusterHits()).isEqualTo(2);
        assertThat(r.recomputed()).isEqualTo(8);
        assertThat(r.clusterEvictions()).isZero();
    }

    @Test
    void theClusterEvictsTheLeastRecentlyUsedBlock() {
        // 1 machine of 1 device block, cluster of 2, write-through: r0 [1] and r1 [2] fill the cluster; r2 [1], evicted
        // from the device by r1, is read back from the cluster (1 is now more recent than 2); r3 [3] is written and
        // evicts 2, the least recent; r4 [2] is recomputed and its write evicts 1 (3 is more recent); r5 [3] is read.
        PrefixTrace t = trace(ids(1), ids(2), ids(1), ids(3), ids(2), ids(3));
        ClusterReplayResult r = ClusterReplaySimulator.replay(t, config(1, 1, 2, WritePolicy.THROUGH, Kind.ROUND_ROBIN));
        assertThat(r.clusterHits()).isEqualTo(2);
        assertThat(r.recomputed()).isEqualTo(4);
        assertThat(r.clusterEvictions()).isEqualTo(2);
        assertThat(r.clusterStored()).isEqualTo(2);
    }

    @Test
    void aClusterOfZeroBlocksServesAndStoresNothing() {
        Property.forAll("no cluster, no cluster hits", 20, rnd -> {
            PrefixTrace t = randomTrace(rnd, 20 + rnd.nextInt(100));
            Kind router = Kind.values()[rnd.nextInt(Kind.values().length)];
            WritePolicy write = WritePolicy.values()[rnd.nextInt(2)];
            ClusterReplayResult r = ClusterReplaySimulator.replay(t, config(1 + rnd.nextInt(4), rnd.nextInt(8), 0, write, router));
            assertThat(r.clusterHits()).isZero();
            assertThat(r.clusterWrites()).isZero();
            assertThat(r.clusterStored()).isZero();
            assertThat(r.networkBytes()).isZero();
            assertThat(r.localHits() + r.recomputed()).isEqualTo(t.accessCount());
        });
    }

    @Test
    void everyReferenceIsALocalHitAClusterHitOrRecomputed() {
        Property.forAll("multi-machine conservation", 40, rnd -> {
            PrefixTrace t = randomTrace(rnd, 20 + rnd.nextInt(150));
            long[] cap = {rnd.nextInt(10), rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(8), rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(8)};
            PolicyKind kind = PolicyKind.values()[rnd.nextInt(PolicyKind.values().length)];
            KvReplaySimulator.Config machine = new KvReplaySimulator.Config(cap, new PolicyKind[] {kind, kind, kind}, 4096,
                    rnd.nextBoolean(), true);
            ClusterReplaySimulator.Config c = new ClusterReplaySimulator.Config(1 + rnd.nextInt(4), machine, rnd.nextInt(30),
                    WritePolicy.values()[rnd.nextInt(2)], Kind.values()[rnd.nextInt(Kind.values().length)], rnd.nextLong());
            ClusterReplayResult r = ClusterReplaySimulator.replay(t, c);
            String what = c.toString() + " " + Arrays.toString(cap);
            for (ClusterReplayResult.Machine m : r.machines()) {
                assertThat(m.localHits(0) + m.localHits(1) + m.localHits(2) + m.clusterHits() + m.recomputed()).as(what)
                        .isEqualTo(m.references());
                assertThat(m.recomputed()).as(what).isNotNegative();
                assertThat(m.clusterStores()).as(what).isBetween(0L, m.clusterWrites());
            }
            assertThat(r.references()).as(what).isEqualTo(t.accessCount());
            assertThat(r.requests()).as(what).isEqualTo(t.requestCount());
            assertThat(r.localHits() + r.clusterHits() + r.recomputed()).as(what).isEqualTo(t.accessCount());
            assertThat(r.clusterStored()).as(what).isLessThanOrEqualTo(c.clusterBlocks());
            long stores = r.machines().stream().mapToLong(ClusterReplayResult.Machine::clusterStores).sum();
            assertThat(stores + r.duplicateWrites()).as(what).isEqualTo(r.clusterWrites());
            assertThat(stores - r.clusterEvictions()).as(what + ": stored = stores - evictions").isEqualTo(r.clusterStored());
            assertThat(r.networkBytes()).as(what).isEqualTo((r.clusterHits() + r.clusterWrites()) * 4096);
            if (c.write() == WritePolicy.THROUGH && c.clusterBlocks() > 0) {
                assertThat(r.clusterWrites()).as(what + ": every recomputed block is written").isEqualTo(r.recomputed());
            }
        });
    }

    @Test
    void oneMachineWithoutAClusterCountsExactlyWhatTheSingleCacheReplayCounts() {
        Property.forAll("one machine = the single-cache replay", 30, rnd -> {
            PrefixTrace t = randomTrace(rnd, 20 + rnd.nextInt(150));
            long[] cap = {rnd.nextInt(12), rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(10), rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(10)};
            for (PolicyKind kind : PolicyKind.values()) {
                KvReplaySimulator.Config machine = new KvReplaySimulator.Config(cap, new PolicyKind[] {kind, kind, kind}, 4096,
                        rnd.nextBoolean(), true);
                ReplayResult single = KvReplaySimulator.replay(t, machine);
                Kind router = Kind.values()[rnd.nextInt(Kind.values().length)];
                ClusterReplayResult r = ClusterReplaySimulator.replay(t, new ClusterReplaySimulator.Config(1, machine, 0,
                        WritePolicy.values()[rnd.nextInt(2)], router, rnd.nextLong()));
                ReplayResult one = r.machines().get(0).local();
                String what = kind + " at " + Arrays.toString(cap) + " routed " + router;
                assertThat(one.requests()).as(what).isEqualTo(single.requests());
                assertThat(one.accesses()).as(what).isEqualTo(single.accesses());
                assertThat(one.hitsByTier()).as(what).containsExactly(single.hitsByTier());
                assertThat(one.recomputed()).as(what).isEqualTo(single.recomputed());
                assertThat(one.moved()).as(what).isDeepEqualTo(single.moved());
                assertThat(one.strandingEvictions()).as(what).isEqualTo(single.strandingEvictions());
                assertThat(one.unreachableDrops()).as(what).isEqualTo(single.unreachableDrops());
                assertThat(one.policies()).as(what).containsExactly(single.policies());
                assertThat(r.recomputed()).as(what).isEqualTo(single.recomputed());
                assertThat(r.localHits()).as(what).isEqualTo(single.hits());
            }
        });
    }

    /** {@code sessions} conversations of {@code turns} turns, interleaved: each turn extends its session's prompt by 2 blocks. */
    private static PrefixTrace sessions(int sessions, int turns) {
        List<TraceRequest> out = new ArrayList<>();
        for (int turn = 0; turn < turns; turn++) {
            for (int s = 0; s < sessions; s++) {
                long[] ids = new long[2 * (turn + 1)];
                for (int i = 0; i < ids.length; i++) {
                    ids[i] = s * 1000L + i;
                }
                out.add(new TraceRequest(out.size(), ids.length * 512, 1, ids));
            }
        }
        return PrefixTrace.of(out);
    }

    @Test
    void prefixAffinityKeepsASessionOnOneMachineAndReadsLessFromTheCluster() {
        // 9 interleaved sessions of 6 turns on 4 machines with room for every block. Round-robin sends turn k of
        // session s to machine (9k + s) mod 4, another machine each turn, which reads the earlier turns' blocks from
        // the cluster; prefix affinity keeps every turn of a session where its earlier turns left their blocks.
        // Either way each of the 9 x 12 distinct blocks is computed once (the cluster keeps them all).
        PrefixTrace t = sessions(9, 6);
        ClusterReplayResult affinity = ClusterReplaySimulator.replay(t, config(4, 10_000, 10_000, WritePolicy.THROUGH,
                Kind.PREFIX_AFFINITY));
        ClusterReplayResult rr = ClusterReplaySimulator.replay(t, config(4, 10_000, 10_000, WritePolicy.THROUGH, Kind.ROUND_ROBIN));
        assertThat(affinity.clusterHits()).isZero();
        assertThat(rr.clusterHits()).isPositive();
        assertThat(affinity.recomputed()).isEqualTo(rr.recomputed()).isEqualTo(9 * 12);
        assertThat(affinity.networkBytes()).isLessThan(rr.networkBytes());
    }

    @Test
    void routersSendRequestsAsDocumented() {
        PrefixTrace t = trace(ids(1, 2), ids(5), ids(1, 3), ids(6, 7, 8), ids(1), ids());
        ReplayRouter rr = new ReplayRouter(Kind.ROUND_ROBIN, t, 3, 0);
        ReplayRouter affinity = new ReplayRouter(Kind.PREFIX_AFFINITY, t, 3, 0);
        ReplayRouter least = new ReplayRouter(Kind.LEAST_LOADED, t, 2, 0);
        int[] rrTo = new int[6];
        int[] affinityTo = new int[6];
        int[] leastTo = new int[6];
        for (int r = 0; r < 6; r++) {
            rrTo[r] = rr.route(r);
            affinityTo[r] = affinity.route(r);
            leastTo[r] = least.route(r);
        }
        assertThat(rrTo).containsExactly(0, 1, 2, 0, 1, 2);
        assertThat(affinityTo[2]).isEqualTo(affinityTo[0]);
        assertThat(affinityTo[4]).isEqualTo(affinityTo[0]);
        assertThat(affinityTo[5]).as("no blocks").isZero();
        // sent references: r0 (2) -> 0; r1 (1) -> 1; r2 (2) -> 1 (1 < 2); r3 (3) -> 0 (2 < 3); r4 (1) -> 1 (3 < 5); r5 (0) -> 1 (4 < 5)
        assertThat(leastTo).containsExactly(0, 1, 1, 0, 1, 1);
        ReplayRouter a = new ReplayRouter(Kind.RANDOM, t, 4, 42);
        ReplayRouter b = new ReplayRouter(Kind.RANDOM, t, 4, 42);
        for (int r = 0; r < 6; r++) {
            assertThat(a.route(r)).as("same seed, same machines").isEqualTo(b.route(r)).isBetween(0, 3);
        }
    }

    @Test
    void badSettingsAreRefusedNamingTheValue() {
        KvReplaySimulator.Config machine = KvReplaySimulator.Config.single(4, PolicyKind.LRU, 4096);
        assertThatThrownBy(() -> new ClusterReplaySimulator.Config(0, machine, 10, WritePolicy.THROUGH, Kind.RANDOM, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 1, got 0");
        assertThatThrownBy(() -> new ClusterReplaySimulator.Config(2, machine, -5, WritePolicy.THROUGH, Kind.RANDOM, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cluster capacity must not be negative, got -5 blocks");
        assertThatThrownBy(() -> Kind.parse("hash-ring")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown router 'hash-ring' (choose round-robin, random, prefix-affinity or least-loaded)");
        assertThatThrownBy(() -> WritePolicy.parse("around")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'around'");
        assertThat(Kind.parse("Prefix_Affinity")).isEqualTo(Kind.PREFIX_AFFINITY);
        assertThat(WritePolicy.parse("write-behind")).isEqualTo(WritePolicy.BEHIND);
    }
}
