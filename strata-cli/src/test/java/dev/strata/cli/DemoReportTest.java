package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The KV table's empty columns: each empty one gets the line that names why, and which flag fills
 * it, from the sizes the run had and where the other blocks were found; with two machines, the
 * blocks loaded from the cluster are told apart from the machine's own pool.
 */
class DemoReportTest {
    private static DemoReport report(double device, double host, double disk, double pool, double computed, double peer) {
        DemoReport r = new DemoReport();
        r.sessions = 1;
        r.turnsPerSession = 2;
        r.deviceKvBlocks = 58;
        r.hostKvBytes = 512 * 1024;
        r.diskKvBytes = 64 << 20;
        r.peerKvBytes = 2 << 20;
        r.peer = true;
        r.reclaimedAfterTurn = 3;
        DemoReport.Turn t = new DemoReport.Turn("session 0 turn 1", 0, 1, new DemoClient.Reply("x", 100, 4, "length", 1, 1), device, host,
                disk, pool, computed);
        t.peer = peer;
        r.turns.add(t);
        return r;
    }

    @Test
    void everyColumnServedSoNoLine() {
        assertThat(report(23, 2, 1, 4, 3, 2).emptyColumns()).isEmpty();
    }

    @Test
    void aHostTierThatBlocksLeftForDiskAsksForMoreHost() {
        assertThat(report(23, 0, 5, 4, 3, 2).emptyColumns()).containsExactly(
                "HOST 0.0%: every block asked for again and not still on the peer had already moved on from HOST to DISK; "
                        + "raise --host-kv (now 512 KiB) to see it");
    }

    @Test
    void blocksNeverLeavingDeviceAskForFewerDeviceBlocksOrMoreSessionsBetweenASessionsTurns() {
        DemoReport r = report(23, 0, 0, 4, 3, 0);
        r.sessions = 4;
        r.turnsPerSession = 5;
        String more = "raise --sessions (now 4) to see it: the more sessions, the more turns come between two of a session's and push "
                + "its blocks down";
        assertThat(r.emptyColumns()).containsExactly(
                "HOST 0.0%: every block asked for again was still in DEVICE or on the peer, or found in the pool first; "
                        + "lower --kv-blocks (now 58) or " + more,
                "DISK 0.0%: every block asked for again was still in DEVICE, on the peer, in HOST or found in the pool first; "
                        + "lower --host-kv (now 512 KiB) or " + more,
                "PEER 0.0%: no block asked for again was still on the peer: each was still in DEVICE, had moved down to HOST, "
                        + "or was lost when the peer took its memory back after turn 3; lower --kv-blocks (now 58) or " + more);
    }

    @Test
    void withTwoTurnsNoSessionComesBackToAnInstanceSoTheLowerTiersAskForAThirdTurn() {
        DemoReport r = report(23, 0, 0, 4, 3, 2);
        r.sessions = 6;
        r.turnsPerSession = 2;
        String third = "raise --turns (now 2) to 3 or more to see it: turns alternate between the instances, so a session first comes "
                + "back to an instance at its third turn";
        assertThat(r.emptyColumns()).containsExactly(
                "HOST 0.0%: every block asked for again was still in DEVICE or on the peer, or found in the pool first; "
                        + "lower --kv-blocks (now 58) or " + third,
                "DISK 0.0%: every block asked for again was still in DEVICE, on the peer, in HOST or found in the pool first; "
                        + "lower --host-kv (now 512 KiB) or " + third);
    }

    @Test
    void tiersLeftOutAreNamedWithTheirFlagAndThePrintedTableCarriesTheLines() {
        DemoReport r = report(23, 0, 0, 4, 3, 0);
        r.peer = false;
        r.hostKvBytes = 0;
        r.diskKvBytes = 0;
        assertThat(r.emptyColumns()).containsExactly(
                "HOST: no HOST KV tier in this run (--host-kv 0), so evicted blocks are not kept by the instance",
                "DISK: no DISK KV tier in this run (--disk-kv 0)",
                "PEER: no strata peer agent in this run (--no-peer), so no instance borrows memory");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        r.print(new PrintStream(out, true, StandardCharsets.UTF_8));
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("    DISK: no DISK KV tier in this run (--disk-kv 0)\n");
    }

    private static DemoReport.Turn machineTurn(String label, int session, int instance, double device, double shared, double cluster,
                                               double computed) {
        DemoReport.Turn t = new DemoReport.Turn(label, session, instance, new DemoClient.Reply("x", 100, 4, "length", 1_000_000, 1), device,
                0, 0, shared, computed);
        t.cluster = cluster;
        t.poolOfItsOwn = true;
        t.reference = "x";
        t.referenceTokens = 4;
        return t;
    }

    @Test
    void withTwoMachinesClusterBlocksAreTheirOwnColumnAndWarmthAndTheOwnPoolIsLocal() throws Exception {
        DemoReport r = new DemoReport();
        r.machines = 2;
        r.sessions = 3;
        r.turnsPerSession = 1;
        r.deviceKvBlocks = 58;
        r.hostKvBytes = 512 * 1024;
        r.diskKvBytes = 0;
        r.clusterNodes = java.util.List.of("127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002");
        r.clusterNodesStopped = 3;
        r.turns.add(machineTurn("session 0 turn 0", 0, 0, 0, 0, 0, 12)); // cold on A
        r.turns.add(machineTurn("session 1 turn 0", 1, 1, 0, 9, 9, 3)); // B loads A's system prompt from the cluster
        r.turns.add(machineTurn("session 2 turn 0", 2, 0, 7, 2, 0, 3)); // A: its DEVICE, and its own pool
        r.clusterCounters[0] = new DemoReport.ClusterCounters(0, 0, 0, 12 * 8192);
        r.clusterCounters[1] = new DemoReport.ClusterCounters(9, 1, 9 * 8192, 3 * 8192);
        assertThat(r.turns).extracting(DemoReport.Turn::warmth)
                .containsExactly(DemoReport.Warmth.COLD, DemoReport.Warmth.CLUSTER, DemoReport.Warmth.LOCAL);
        assertThat(r.turns.get(1).pool()).as("the shared store's blocks less the cluster's").isZero();
        assertThat(r.turns.get(2).pool()).isEqualTo(2);
        assertThat(r.clusterTurns()).isEqualTo(1);
        assertThat(r.clusterBlocks()).isEqualTo(9);
        assertThat(r.crossInstanceTurns()).as("a machine's own pool is no other instance's").isZero();
        assertThat(r.kvBlocks(-1)).containsExactly(7, 0, 0, 2, 18, 0, 9);
        assertThat(r.emptyColumns()).noneMatch(line -> line.startsWith("CLUSTER") || line.startsWith("POOL"))
                .contains("PEER: no strata peer agent in this run (--machines 2 runs none), so no instance borrows memory");

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        r.print(new PrintStream(out, true, StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(text).contains("POOL (own machine)    CLUSTER (other machine)")
                .contains("    warm, from the cluster (other machine)       1")
                .contains("    warm, this machine's tiers and pool          1")
                .contains("  cluster hits: 1 turns loaded 9 blocks from the cluster that the other machine wrote")
                .contains("    machine B's /metrics: strata_cluster_hits_total 9, strata_cluster_misses_total 1, 72 KiB read, 24 KiB written")
                .contains("local Redis Cluster stopped (3 of 3 nodes)")
                .doesNotContain("cross-instance hits");

        java.nio.file.Path json = java.nio.file.Files.createTempFile("demo-report", ".json");
        try {
            r.writeJson(json);
            var j = new com.fasterxml.jackson.databind.ObjectMapper().readTree(java.nio.file.Files.readString(json));
            assertThat(j.get("machines").asInt()).isEqualTo(2);
            assertThat(j.get("kv_prefix_blocks").get("both").get("cluster").asDouble()).isEqualTo(9);
            assertThat(j.get("kv_prefix_blocks").get("both").get("pool").asDouble()).isEqualTo(2);
            assertThat(j.get("ttft_ms").has("cluster")).isTrue();
            assertThat(j.get("ttft_ms").has("cross_instance")).isFalse();
            assertThat(j.get("cluster").get("B").get("hits").asDouble()).isEqualTo(9);
            assertThat(j.get("cluster").get("nodes_stopped").asInt()).isEqualTo(3);
            assertThat(j.get("turns_detail").get(1).get("cluster").asDouble()).isEqualTo(9);
        } finally {
            java.nio.file.Files.deleteIfExists(json);
        }
    }

    @Test
    void withOneMachineTheJsonHasNoClusterFacts() throws Exception {
        DemoReport r = report(23, 2, 1, 4, 3, 2);
        java.nio.file.Path json = java.nio.file.Files.createTempFile("demo-report", ".json");
        try {
            r.writeJson(json);
            var j = new com.fasterxml.jackson.databind.ObjectMapper().readTree(java.nio.file.Files.readString(json));
            assertThat(j.has("machines")).isFalse();
            assertThat(j.has("cluster")).isFalse();
            assertThat(j.get("kv_prefix_blocks").get("both").has("cluster")).isFalse();
            assertThat(j.get("ttft_ms").has("cluster")).isFalse();
            assertThat(j.get("ttft_ms").get("cross_instance").get("turns").asInt()).isEqualTo(1);
        } finally {
            java.nio.file.Files.deleteIfExists(json);
        }
    }
}
