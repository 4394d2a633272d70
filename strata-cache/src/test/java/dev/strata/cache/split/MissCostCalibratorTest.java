package dev.strata.cache.split;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.transfer.LinkStats;
import dev.strata.memory.transfer.TransferEngine;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class MissCostCalibratorTest {
    private static final long EXPERT = 3 * 1024 * 1024 + 4096 * 7; // one expert of one layer
    private static final long BLOCK = 16 * 24 * 1024 + 320;
    private static final MissCostCalibrator.Priors PRIORS = new MissCostCalibrator.Priors(25e9, 80e-6, Double.NaN);

    private static LinkStats link(long bytes, long busyNanos) {
        return new LinkStats("host", "device", 1, 1, 1, 0, 0, bytes, 0, 0, 0, 0, 0, 0, busyNanos, busyNanos, 0, 0);
    }

    @Test
    void priorsAreUsedAndLabelledUntilMeasured() {
        MissCostCalibrator c = new MissCostCalibrator(EXPERT, BLOCK, 16, 0.3, PRIORS);
        MissCosts m = c.costs();
        assertThat(m.expertSource()).isEqualTo(MissCosts.Source.PRIOR);
        assertThat(m.recomputeSource()).isEqualTo(MissCosts.Source.PRIOR);
        assertThat(m.reloadSource()).isEqualTo(MissCosts.Source.NONE);
        assertThat(m.fullyMeasured()).isFalse();
        assertThat(m.expertMissSeconds()).isCloseTo(EXPERT / 25e9, within(1e-15));
        assertThat(m.kvMissSeconds()).isCloseTo(16 * 80e-6, within(1e-15));
        assertThat(m.toString()).contains("(prior)");
    }

    @Test
    void smoothedEstimatesConvergeToTheMeasuredValues() {
        MissCostCalibrator c = new MissCostCalibrator(EXPERT, BLOCK, 16, 0.25, PRIORS);
        SplittableRandom r = new SplittableRandom(7);
        long bytes = 0;
        long busy = 0;
        double trueBandwidth = 6.5e9; // the link is far slower than the prior says
        double truePerToken = 230e-6;
        for (int i = 0; i < 60; i++) {
            long moved = 50_000_000L + r.nextInt(9_000_000);
            bytes += moved;
            busy += (long) (moved / (trueBandwidth * (0.9 + 0.2 * r.nextDouble())) * 1e9);
            c.observeExpertLink(link(bytes, busy));
            long tokens = 300 + r.nextInt(900);
            c.recordPrefill(tokens, (long) (tokens * truePerToken * (0.9 + 0.2 * r.nextDouble()) * 1e9));
            if (i == 0) {
                // the first sample replaces the prior outright
                assertThat(c.linkBytesPerSecond()).isBetween(trueBandwidth * 0.8, trueBandwidth * 1.2);
            }
        }
        assertThat(c.linkBytesPerSecond()).isCloseTo(trueBandwidth, within(trueBandwidth * 0.06));
        assertThat(c.recomputeSecondsPerToken()).isCloseTo(truePerToken, within(truePerToken * 0.06));
        MissCosts m = c.costs();
        assertThat(m.expertSource()).isEqualTo(MissCosts.Source.MEASURED);
        assertThat(m.recomputeSource()).isEqualTo(MissCosts.Source.MEASURED);
        assertThat(m.expertMissSeconds()).isCloseTo(EXPERT / trueBandwidth, within(EXPERT / trueBandwidth * 0.07));
        // a snapshot with no new bytes adds no sample
        double before = c.linkBytesPerSecond();
        c.observeExpertLink(link(bytes, busy + 1_000_000_000L));
        assertThat(c.linkBytesPerSecond()).isEqualTo(before);
        // and it follows a change of the link
        for (int i = 0; i < 40; i++) {
            bytes += 40_000_000L;
            busy += (long) (40_000_000L / 20e9 * 1e9);
            c.observeExpertLink(link(bytes, busy));
        }
        assertThat(c.linkBytesPerSecond()).isCloseTo(20e9, within(20e9 * 0.01));
    }

    @Test
    void reloadFromALowerTierIsUsedWhenCheaperThanRecompute() {
        MissCostCalibrator c = new MissCostCalibrator(EXPERT, BLOCK, 16, 0.5,
                new MissCostCalibrator.Priors(25e9, 80e-6, 1e9));
        assertThat(c.costs().reloadSource()).isEqualTo(MissCosts.Source.PRIOR);
        c.observeReloadTier(new TierStats("disk", TierKind.DISK, 1, 0, 0, 5, 0, 5 * BLOCK, 0, 2e9, 0, 1e5, 0));
        MissCosts m = c.costs();
        assertThat(m.reloadSource()).isEqualTo(MissCosts.Source.MEASURED);
        assertThat(m.kvReloadSeconds()).isCloseTo(BLOCK / 2e9, within(1e-12));
        assertThat(m.kvMissSeconds()).isEqualTo(Math.min(m.kvRecomputeSeconds(), m.kvReloadSeconds()));
    }

    @Test
    void calibratesFromARealTransferEngineLink() throws Exception {
        try (HostTier host = HostTier.create("host", 64L << 20); DeviceTier device = DeviceTier.cpu("device", 64L << 20);
             TransferEngine engine = new TransferEngine()) {
            MissCostCalibrator c = new MissCostCalibrator(EXPERT, BLOCK, 16, 0.3, PRIORS);
            SplittableRandom r = new SplittableRandom(3);
            long src = host.allocate(EXPERT);
            byte[] bytes = new byte[(int) EXPERT];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) r.nextInt();
            }
            host.write(src, MemorySegment.ofArray(bytes));
            long dst = device.allocate(EXPERT);
            for (int i = 0; i < 8; i++) {
                engine.copy(host, src, device, dst, EXPERT).join();
            }
            LinkStats stats = engine.linkStats().stream().filter(s -> s.name().equals("host->device")).findFirst().orElseThrow();
            c.observeExpertLink(stats);
            MissCosts m = c.costs();
            assertThat(m.expertSource()).isEqualTo(MissCosts.Source.MEASURED);
            assertThat(c.linkBytesPerSecond()).isCloseTo(stats.bytes() * 1e9 / stats.busyNanos(), within(1.0));
        }
    }
}
