package dev.strata.memory.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.Checksum64;
import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Sizes;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Pool format 3: the root region, and the calls a structure built on the pool makes. */
class PoolRootRegionTest {

    @Test
    void theRootRegionLiesBetweenTheTablesAndTheDataAndOutlivesEveryProcess() throws Exception {
        try (PoolFiles files = new PoolFiles("root", 2)) {
            PoolConfig config = files.config().capacity(4 * Sizes.MiB).chunkSize(16 * Sizes.KiB)
                    .rootRegionSize(100_000).conclude();
            assertThat(config.rootRegionSize()).as("rounded up to 4 KiB").isEqualTo(102_400);
            try (PoolTier pool = PoolTier.open(config)) {
                PoolHeader.Layout l = pool.layout();
                assertThat(l.rootRegionSize()).isEqualTo(102_400);
                assertThat(l.rootRegionOffset() % PoolHeader.ROOT_REGION_ALIGNMENT).isZero();
                assertThat(l.rootRegionOffset()).isGreaterThanOrEqualTo(
                        l.descriptorTableOffset() + l.chunkCount() * ObjectDescriptorTable.DESCRIPTOR_SIZE);
                assertThat(l.dataOffset()).isGreaterThanOrEqualTo(l.rootRegionOffset() + l.rootRegionSize());
                MemorySegment root = pool.rootRegion();
                assertThat(root.byteSize()).isEqualTo(102_400);
                for (long at = 0; at < root.byteSize(); at += 8) {
                    assertThat(root.get(ValueLayout.JAVA_LONG, at)).as("zeroed at creation").isZero();
                }
                root.set(ValueLayout.JAVA_LONG, 4096, 0x1234_5678_9ABC_DEF1L);
                root.set(ValueLayout.JAVA_LONG, root.byteSize() - 8, 0x0FED_CBA9_8765_4321L);
            }
            // attachers take the region from the header, not from their config
            try (PoolTier again = PoolTier.open(files.config().rootRegionSize(0).conclude())) {
                assertThat(again.layout().rootRegionSize()).isEqualTo(102_400);
                MemorySegment root = again.rootRegion();
                assertThat(root.get(ValueLayout.JAVA_LONG, 4096)).isEqualTo(0x1234_5678_9ABC_DEF1L);
                assertThat(root.get(ValueLayout.JAVA_LONG, root.byteSize() - 8)).isEqualTo(0x0FED_CBA9_8765_4321L);
                assertThat(PoolInspector.inspect(files.paths).layout()).isEqualTo(again.layout());
                long seen = PoolInspector.readRootRegion(files.paths, r -> r.get(ValueLayout.JAVA_LONG, 4096));
                assertThat(seen).isEqualTo(0x1234_5678_9ABC_DEF1L);
                assertThat(PoolInspector.inspect(files.paths).major()).isEqualTo(PoolHeader.MAJOR);
            }
        }
    }

    @Test
    void aPoolWithoutARootRegionHasAnEmptyOne() throws Exception {
        try (PoolFiles files = new PoolFiles("noroot", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(Sizes.MiB).conclude())) {
            assertThat(pool.rootRegion().byteSize()).isZero();
            assertThat(pool.layout()).isEqualTo(PoolHeader.Layout.of(pool.layout().chunkSize(), pool.layout().chunkCount(),
                    pool.layout().processSlots(), 1));
        }
        assertThatThrownBy(() -> PoolConfig.builder("x").rootRegionSize(-1).conclude())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("root region size -1");
    }

    @Test
    void freeIfGenerationFreesOnlyTheAllocationItRecorded() throws Exception {
        try (PoolFiles files = new PoolFiles("gen", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(64 * Sizes.KiB).chunkSize(16 * Sizes.KiB).conclude())) {
            long h = pool.allocate(64 * Sizes.KiB); // the whole pool: the next allocation reuses the handle
            long g = pool.allocationGeneration(h);
            assertThat(g).isNotNegative();
            assertThat(pool.freeIfGeneration(h, g + 1)).isFalse();
            assertThat(pool.used()).isEqualTo(64 * Sizes.KiB);
            assertThat(pool.freeIfGeneration(h, g)).isTrue();
            assertThat(pool.allocationGeneration(h)).isEqualTo(-1);
            assertThat(pool.freeIfGeneration(h, g)).as("already freed").isFalse();
            long again = pool.allocate(64 * Sizes.KiB);
            assertThat(again).isEqualTo(h);
            assertThat(pool.allocationGeneration(again)).isNotEqualTo(g);
            assertThat(pool.freeIfGeneration(again, g)).as("a later allocation at the same handle").isFalse();
            assertThat(pool.used()).isEqualTo(64 * Sizes.KiB);
            pool.free(again);
            assertThat(pool.used()).isZero().isEqualTo(pool.usedByScan());
        }
    }

    @Test
    void publishWithTheCallersChecksumMakesTheObjectReadableAndAWrongOneIsCaught() throws Exception {
        try (PoolFiles files = new PoolFiles("csum", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(Sizes.MiB).chunkSize(16 * Sizes.KiB).conclude())) {
            byte[] payload = new byte[40_001];
            new SplittableRandom(9).nextBytes(payload);
            payload[0] |= 1;
            long h = pool.allocate(payload.length);
            long sum = Checksum64.copy(MemorySegment.ofArray(payload), 0, pool.dataArea(), h, payload.length);
            pool.publish(h, payload.length, sum);
            byte[] back = new byte[payload.length];
            assertThat(pool.read(h, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(payload);

            long bad = pool.allocate(payload.length);
            MemorySegment.copy(MemorySegment.ofArray(payload), 0, pool.dataArea(), bad, payload.length);
            pool.publish(bad, payload.length, sum ^ 1);
            assertThatThrownBy(() -> pool.read(bad, MemorySegment.ofArray(back))).isInstanceOf(CorruptObjectException.class);
        }
    }

    @Test
    void processIdentityIsVisibleToOtherProcesses() throws Exception {
        try (PoolFiles files = new PoolFiles("ident", 1);
             PoolTier a = PoolTier.open(files.config().capacity(Sizes.MiB).conclude());
             PoolTier b = PoolTier.open(files.config().capacity(Sizes.MiB).conclude())) {
            assertThat(a.processIncarnation(b.processSlot())).isEqualTo(b.processIncarnation()).isPositive();
            assertThat(a.isProcessAlive(b.processSlot(), b.processIncarnation())).isTrue();
            assertThat(a.isProcessAlive(b.processSlot(), b.processIncarnation() + 1)).isFalse();
            int slot = b.processSlot();
            long incarnation = b.processIncarnation();
            b.close();
            assertThat(a.processIncarnation(slot)).isEqualTo(-1);
            assertThat(a.isProcessAlive(slot, incarnation)).isFalse();
        }
    }
}
