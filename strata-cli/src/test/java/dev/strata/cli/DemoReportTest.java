package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The KV table's empty columns: each empty one gets the line that names why, and which flag fills
 * it, from the sizes the run had and where the other blocks were found.
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
    void blocksNeverLeavingDeviceAskForFewerDeviceBlocks() {
        assertThat(report(23, 0, 0, 4, 3, 0).emptyColumns()).containsExactly(
                "HOST 0.0%: every block asked for again was still in DEVICE or on the peer, or found in the pool first; "
                        + "lower --kv-blocks (now 58) or raise --turns to see it",
                "DISK 0.0%: every block asked for again was still in DEVICE, on the peer, in HOST or found in the pool first; "
                        + "lower --host-kv (now 512 KiB) or raise --turns to see it",
                "PEER 0.0%: no block asked for again was still on the peer: each was still in DEVICE, had moved down to HOST, "
                        + "or was lost when the peer took its memory back after turn 3; lower --kv-blocks (now 58) or raise --turns to see it");
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
}
