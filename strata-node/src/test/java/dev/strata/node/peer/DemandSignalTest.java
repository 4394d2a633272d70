package dev.strata.node.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.peer.trace.AvailabilitySample;
import dev.strata.cache.peer.trace.AvailabilityTraceWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The demand signals: fixed, file, trace replay; their specs and their errors; an agent driven by a trace. */
class DemandSignalTest {
    static final long SECOND = 1_000_000_000L;

    @Test
    void fixedDemandParsesSizes() {
        assertThat(DemandSignal.parse("fixed:3MiB", 1L << 30).demandBytes(0)).isEqualTo(3L << 20);
        assertThat(DemandSignal.parse("fixed:12345", 1L << 30).demandBytes(99 * SECOND)).isEqualTo(12345);
        assertThatThrownBy(() -> DemandSignal.parse("fixed:lots", 1)).hasMessageContaining("'fixed:lots'")
                .hasMessageContaining("not a size: 'lots'");
        assertThatThrownBy(() -> DemandSignal.parse("wish:1", 1)).hasMessageContaining("unknown kind 'wish'");
        assertThatThrownBy(() -> DemandSignal.parse("", 1)).hasMessageContaining("empty");
        assertThatThrownBy(() -> DemandSignal.parse("file:", 1)).hasMessageContaining("names no file");
    }

    @Test
    void fileDemandFollowsTheFileAndKeepsTheLastGoodValueOnBadContent(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("demand");
        FileDemand d = (FileDemand) DemandSignal.parse("file:" + file, 1L << 30);
        assertThat(d.demandBytes(0)).as("no file yet: no demand").isZero();
        Files.writeString(file, "70001\n");
        assertThat(d.demandBytes(0)).isEqualTo(70001);
        Files.writeString(file, "2KiB");
        assertThat(d.demandBytes(0)).isEqualTo(2048);
        Files.writeString(file, "two gigs");
        assertThat(d.demandBytes(0)).as("bad content keeps the last good demand").isEqualTo(2048);
        assertThat(d.lastProblem()).contains("'two gigs'").contains("keeping the demand of 2048 bytes");
        Files.writeString(file, "-5");
        assertThat(d.demandBytes(0)).isEqualTo(2048);
        Files.delete(file);
        assertThat(d.demandBytes(0)).isEqualTo(2048);
        Files.writeString(file, "1");
        assertThat(d.demandBytes(0)).isEqualTo(1);
        assertThat(d.lastProblem()).isNull();
    }

    @Test
    void traceDemandIsTheBudgetMinusThePeersFreeBytes(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("peers.jsonl");
        try (AvailabilityTraceWriter w = AvailabilityTraceWriter.create(trace)) {
            w.write(new AvailabilitySample(0, "gpu0", 1000));
            w.write(new AvailabilitySample(0, "gpu1", 50));
            w.write(new AvailabilitySample(1.5, "gpu1", 700));
            w.write(new AvailabilitySample(2, "gpu0", 300));
            w.write(new AvailabilitySample(4, "gpu1", 0));
        }
        TraceDemand first = (TraceDemand) DemandSignal.parse("trace:" + trace, 800);
        assertThat(first.peer()).isEqualTo("gpu0");
        assertThat(first.demandBytes(0)).as("1000 free of a budget of 800: lend it all").isZero();
        assertThat(first.demandBytes(3 * SECOND)).isEqualTo(500);
        TraceDemand fast = (TraceDemand) DemandSignal.parse("trace:" + trace + ",peer=gpu1,speed=2,loop", 800);
        assertThat(fast.demandBytes(0)).isEqualTo(750);
        assertThat(fast.demandBytes(SECOND)).as("trace time 2 s").isEqualTo(100);
        assertThat(fast.demandBytes(2 * SECOND)).as("trace time 4 s: the last sample").isEqualTo(800);
        assertThat(fast.traceTime(SECOND * 5 / 2)).as("looped: 5 s of a 4 s trace").isEqualTo(1.0);
        assertThat(fast.demandBytes(SECOND * 5 / 2)).isEqualTo(750);
        TraceDemand held = (TraceDemand) DemandSignal.parse("trace:" + trace + ",peer=gpu1", 800);
        assertThat(held.demandBytes(60 * SECOND)).as("without loop the last value holds").isEqualTo(800);

        assertThatThrownBy(() -> DemandSignal.parse("trace:" + trace + ",peer=gpu7", 800))
                .hasMessageContaining("no peer 'gpu7'").hasMessageContaining("[gpu0, gpu1]");
        assertThatThrownBy(() -> DemandSignal.parse("trace:" + trace + ",speed=fast", 800))
                .hasMessageContaining("speed 'fast' is not a number");
        assertThatThrownBy(() -> DemandSignal.parse("trace:" + trace + ",speed=0", 800)).hasMessageContaining("speed 0.0");
        assertThatThrownBy(() -> DemandSignal.parse("trace:" + trace + ",colour=red", 800))
                .hasMessageContaining("unknown option 'colour=red'");
        Path bad = dir.resolve("bad.jsonl");
        Files.writeString(bad, "{\"t\": 0, \"peer\": \"a\", \"free\": 5}\n{\"t\": 1, \"peer\": \"a\", \"free\": -3}\n");
        assertThatThrownBy(() -> DemandSignal.parse("trace:" + bad, 800)).hasMessageContaining("bad.jsonl")
                .hasMessageContaining("-3");
    }

    @Test
    void anAgentReplayingATraceRevokesWhenItsPeerFillsUp(@TempDir Path dir) throws Exception {
        long region = 8192;
        Path trace = dir.resolve("churn.jsonl");
        try (AvailabilityTraceWriter w = AvailabilityTraceWriter.create(trace)) {
            w.write(new AvailabilitySample(0, "gpu0", 4 * region));
            w.write(new AvailabilitySample(0.3, "gpu0", region));
        }
        Path path = PeerTestSupport.newFile("trace");
        try (PeerAgent agent = PeerAgent.create(PeerAgentConfig.builder().file(path).budget(4 * region).regionSize(region)
                .demand(DemandSignal.parse("trace:" + trace, 4 * region)).grace(Duration.ofMillis(100)).conclude());
             ShmPeerLender lender = ShmPeerLender.open(path, 0)) {
            var a = lender.borrow(2 * region);
            var b = lender.borrow(2 * region);
            assertThat(a).isNotNull();
            assertThat(b).isNotNull();
            long deadline = System.nanoTime() + 10 * SECOND;
            while ((agent.stats().acknowledged() < 2 || agent.stats().held() != 3) && System.nanoTime() < deadline) {
                agent.step();
                Thread.sleep(5);
            }
            LendingStats s = agent.stats();
            assertThat(s.held()).as("three of four regions back once the peer has one free; the excess freed").isEqualTo(3);
            assertThat(s.free()).isEqualTo(1);
            assertThat(s.revocations()).isEqualTo(2);
            assertThat(s.acknowledged()).as("the lender without a listener acknowledges itself").isEqualTo(2);
        } finally {
            PeerTestSupport.delete(path);
        }
    }
}
