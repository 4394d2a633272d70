package dev.strata.memory;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TierMeterTest {

    @Test
    void sampledOperationsKeepExactCountsAndMeasureAverages() {
        TierMeter meter = new TierMeter();
        long bytes = 0;
        int timed = 0;
        for (int i = 1; i <= 2000; i++) {
            long start = meter.startWrite();
            if (start != TierMeter.NOT_TIMED) {
                timed++;
            }
            meter.writeDone(i, start);
            meter.readDone(2L * i, meter.startRead());
            bytes += i;
        }
        TierStats s = meter.snapshot("t", TierKind.HOST, 1 << 20, 0, 0);
        assertThat(s.writeOps()).isEqualTo(2000);
        assertThat(s.readOps()).isEqualTo(2000);
        assertThat(s.bytesWritten()).isEqualTo(bytes);
        assertThat(s.bytesRead()).isEqualTo(2 * bytes);
        assertThat(timed).as("about one in %d timed", TierMeter.SAMPLE_EVERY).isBetween(2000 / TierMeter.SAMPLE_EVERY / 3,
                2000 / TierMeter.SAMPLE_EVERY * 3);
        assertThat(s.writeLatencyNanos()).isPositive();
        assertThat(s.readLatencyNanos()).isPositive();
    }

    @Test
    void theFirstOperationOfEachDirectionIsTimedThenSamplingStarts() {
        TierMeter meter = new TierMeter();
        long first = meter.startWrite();
        assertThat(first).as("nothing timed yet: the first write is timed").isNotEqualTo(TierMeter.NOT_TIMED);
        meter.writeDone(100, first);
        assertThat(meter.snapshot("t", TierKind.HOST, 1 << 20, 0, 0).writeLatencyNanos()).isPositive();
        int timed = 0;
        for (int i = 0; i < 1600; i++) { // a tier that is only ever written is sampled too
            long start = meter.startWrite();
            if (start != TierMeter.NOT_TIMED) {
                timed++;
            }
            meter.writeDone(100, start);
        }
        assertThat(timed).isBetween(1600 / TierMeter.SAMPLE_EVERY / 3, 1600 / TierMeter.SAMPLE_EVERY * 3);
        assertThat(meter.startRead()).as("reads have their own first timing").isNotEqualTo(TierMeter.NOT_TIMED);
    }

    @Test
    void batchesRecordTheirMeanLatencyAndWholeBandwidth() {
        TierMeter meter = new TierMeter();
        meter.recordWrites(4, 4_000_000, 2_000_000); // 4 MB in 2 ms: 2 GB/s, 0.5 ms each
        TierStats s = meter.snapshot("t", TierKind.HOST, 1 << 20, 0, 0);
        assertThat(s.writeOps()).isEqualTo(4);
        assertThat(s.writeBytesPerSec()).isEqualTo(2e9);
        assertThat(s.writeLatencyNanos()).isEqualTo(500_000);
    }
}
