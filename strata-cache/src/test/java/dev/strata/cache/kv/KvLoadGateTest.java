package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.ObjectKey;
import org.junit.jupiter.api.Test;

/**
 * {@link KvLoadGate}'s decision on given measurements: the prefix of a match that saves the most
 * against recomputing, loads taken until the prefill speed and the location are measured, and one
 * block of a location measured slow taken again once its estimate is older than the probe interval.
 */
class KvLoadGateTest {
    private static final int BT = 4; // tokens per block
    private static final long MS = 1_000_000L;
    private static final org.assertj.core.data.Offset<Double> TINY = org.assertj.core.data.Offset.offset(1e-12);

    private static PrefixMatch match(BlockLocation... where) {
        ObjectKey[] keys = new ObjectKey[where.length + 2];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = new ObjectKey(7, i + 1);
        }
        return new PrefixMatch(keys, where, keys.length * BT);
    }

    /** Measures {@code blocks} blocks of {@code where} landing together {@code nanos} after their start at {@code at}. */
    private static void measure(KvLoadGate gate, BlockLocation where, int blocks, long at, long nanos) {
        KvLoadGate.Batch batch = new KvLoadGate.Batch(where, at);
        for (int i = 0; i < blocks; i++) {
            gate.start(batch);
        }
        for (int i = 0; i < blocks; i++) {
            gate.landed(batch, at + nanos, true);
        }
    }

    @Test
    void everyBlockIsLoadedUntilThePrefillSpeedIsKnown() {
        KvLoadGate gate = new KvLoadGate(BT);
        measure(gate, BlockLocation.DISK, 2, 0, 100 * MS); // 50 ms a block
        assertThat(gate.blocksWorthLoading(match(BlockLocation.DISK, BlockLocation.DISK), 100 * MS)).isEqualTo(2);
        gate.recordPrefill(BT - 1, 1); // less than a block: no sample
        assertThat(gate.recomputeSecondsPerBlock()).isNaN();
        assertThat(gate.blocksWorthLoading(match(BlockLocation.DISK, BlockLocation.DISK), 100 * MS)).isEqualTo(2);
    }

    @Test
    void theMatchIsCutWhereLoadingStopsBeatingRecomputing() {
        KvLoadGate gate = new KvLoadGate(BT);
        gate.recordPrefill(100 * BT, 100 * MS); // 1 ms a block
        measure(gate, BlockLocation.HOST, 4, 0, 2 * MS); // 0.5 ms a block: worth it
        measure(gate, BlockLocation.DISK, 2, 0, 10 * MS); // 5 ms a block: not worth it
        long now = 20 * MS;
        assertThat(gate.secondsPerBlock(BlockLocation.HOST)).isCloseTo(0.0005, TINY);
        assertThat(gate.secondsPerBlock(BlockLocation.DISK)).isCloseTo(0.005, TINY);
        assertThat(gate.recomputeSecondsPerBlock()).isCloseTo(0.001, TINY);
        assertThat(gate.blocksWorthLoading(match(BlockLocation.DEVICE, BlockLocation.HOST, BlockLocation.HOST), now)).isEqualTo(3);
        assertThat(gate.blocksWorthLoading(match(BlockLocation.DISK, BlockLocation.DISK), now)).isZero();
        assertThat(gate.blocksWorthLoading(match(BlockLocation.DEVICE, BlockLocation.HOST, BlockLocation.DISK, BlockLocation.DISK), now))
                .as("the DEVICE and HOST blocks, not the DISK ones after them").isEqualTo(2);
        // a slow block followed by enough cheap ones is still worth loading: 1 - 5 + 5 x (1 - 0) > 0 ms
        assertThat(gate.blocksWorthLoading(match(BlockLocation.DISK, BlockLocation.DEVICE, BlockLocation.DEVICE,
                BlockLocation.DEVICE, BlockLocation.DEVICE, BlockLocation.DEVICE), now)).isEqualTo(6);
        // but not by fewer: 1 - 5 + 3 x 1 < 0 ms
        assertThat(gate.blocksWorthLoading(match(BlockLocation.DISK, BlockLocation.DEVICE, BlockLocation.DEVICE,
                BlockLocation.DEVICE), now)).isZero();
    }

    @Test
    void oneBlockOfASlowLocationIsTakenAgainOnceItsEstimateIsOlderThanTheProbeInterval() {
        KvLoadGate gate = new KvLoadGate(BT);
        gate.recordPrefill(BT, MS); // 1 ms a block
        assertThat(gate.blocksWorthLoading(match(BlockLocation.SHARED), 0)).as("not measured: loaded").isEqualTo(1);
        measure(gate, BlockLocation.SHARED, 1, 0, 30 * MS);
        long sampled = 30 * MS;
        assertThat(gate.blocksWorthLoading(match(BlockLocation.SHARED), sampled + KvLoadGate.PROBE_INTERVAL_NANOS)).isZero();
        assertThat(gate.blocksWorthLoading(match(BlockLocation.SHARED), sampled + KvLoadGate.PROBE_INTERVAL_NANOS + 1))
                .as("a probe").isEqualTo(1);
        assertThat(gate.blocksWorthLoading(match(BlockLocation.SHARED, BlockLocation.SHARED, BlockLocation.SHARED),
                sampled + KvLoadGate.PROBE_INTERVAL_NANOS + 1)).as("a probe is one block; the others cost the old estimate").isEqualTo(1);
        // the probe finds the store fast again: the estimate moves by a fifth of the difference per sample
        long at = sampled + KvLoadGate.PROBE_INTERVAL_NANOS + 1;
        for (int i = 0; i < 30; i++) {
            measure(gate, BlockLocation.SHARED, 1, at, MS / 10);
            at += MS / 10;
        }
        assertThat(gate.secondsPerBlock(BlockLocation.SHARED)).isLessThan(0.001);
        assertThat(gate.blocksWorthLoading(match(BlockLocation.SHARED), at)).isEqualTo(1);
    }

    @Test
    void aBatchIsSampledOnceWhenItsLastBlockEndsAndFailedBlocksAreNotCounted() {
        KvLoadGate gate = new KvLoadGate(BT);
        KvLoadGate.Batch batch = new KvLoadGate.Batch(BlockLocation.POOL, 0);
        gate.start(batch);
        gate.start(batch);
        gate.start(batch);
        gate.landed(batch, 2 * MS, true);
        assertThat(gate.secondsPerBlock(BlockLocation.POOL)).as("two blocks still in flight").isNaN();
        gate.landed(batch, 3 * MS, false);
        gate.landed(batch, 4 * MS, true);
        assertThat(gate.secondsPerBlock(BlockLocation.POOL)).as("4 ms for the 2 blocks that landed").isCloseTo(0.002, TINY);
        KvLoadGate.Batch failed = new KvLoadGate.Batch(BlockLocation.POOL, 10 * MS);
        gate.start(failed);
        gate.landed(failed, 90 * MS, false);
        assertThat(gate.secondsPerBlock(BlockLocation.POOL)).as("a batch that landed nothing is no sample").isCloseTo(0.002, TINY);
    }

    @Test
    void aBlockOfNoTokensIsRefused() {
        assertThatThrownBy(() -> new KvLoadGate(0)).hasMessageContaining("got 0");
    }
}
