package dev.strata.cache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.config.StrataConfig;
import dev.strata.memory.TierKind;
import dev.strata.memory.host.MemoryAudit;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TieredMemoryTest {

    @TempDir
    Path dir;

    @Test
    void objectsDemoteThroughEveryConfiguredTierAndComeBackExact() throws Exception {
        Path poolFile = Path.of("/dev/shm", "strata-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + ".pool");
        Path yaml = dir.resolve("strata.yaml");
        Files.writeString(yaml, """
                tiers:
                  device: { capacity: 1MiB }
                  host: { capacity: 2MiB }
                  pool: { capacity: 4MiB, paths: [%s], chunk: 64KiB }
                  disk: { capacity: 64MiB, directory: %s }
                store:
                  chain: [device, host, pool, disk]
                  high-watermark: 0.9
                  low-watermark: 0.6
                  promotion: never
                """.formatted(poolFile, dir.resolve("disk")));
        StrataConfig config = ConfigLoader.load(yaml, List.of(), null).conclude();
        var liveBefore = MemoryAudit.liveRegions().stream().map(MemoryAudit.LiveRegion::id).toList();
        List<ObjectKey> dropped = new ArrayList<>();
        int objects = 60; // 60 x ~200 KiB = ~12 MiB: more than device + host + pool hold
        byte[][] contents = new byte[objects][];
        try (Arena arena = Arena.ofConfined()) {
            TieredMemory memory = TieredMemory.open(config, (key, kind, durability, size, reason) -> dropped.add(key));
            try {
                SplittableRandom random = new SplittableRandom(42);
                for (int i = 0; i < objects; i++) {
                    contents[i] = new byte[200_000 + random.nextInt(10_000)];
                    random.nextBytes(contents[i]);
                    MemorySegment src = arena.allocate(contents[i].length);
                    MemorySegment.copy(contents[i], 0, src, ValueLayout.JAVA_BYTE, 0, contents[i].length);
                    assertThat(memory.store().put(ObjectKey.of(i), ObjectKind.KV_BLOCK, Durability.BACKED,
                            PriorityClass.RECENT, src)).isEqualTo(PutStatus.STORED);
                }
                for (TierKind k : List.of(TierKind.DEVICE, TierKind.HOST, TierKind.POOL, TierKind.DISK)) {
                    assertThat(memory.tier(k).used()).as("tier %s holds objects", k).isPositive();
                }
                for (int i = 0; i < objects; i++) {
                    try (ObjectView v = memory.store().get(ObjectKey.of(i))) {
                        assertThat(v).as("object %d", i).isNotNull();
                        assertThat(v.bytes().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(contents[i]);
                    }
                }
                assertThat(dropped).as("BACKED objects are never dropped").isEmpty();
                MetricsSnapshot m = memory.metrics();
                assertThat(m.tiers()).extracting(t -> t.kind()).containsExactly(TierKind.DEVICE, TierKind.HOST, TierKind.POOL, TierKind.DISK);
                assertThat(m.store().tier("disk").hits()).isPositive();
                assertThat(m.store().tier("device").demotions()).isPositive();
                String text = m.toPrometheus();
                assertThat(text).contains("strata_tier_used_bytes{tier=\"pool\",kind=\"pool\"}")
                        .contains("strata_store_demotions_total{tier=\"host\",kind=\"host\"}")
                        .contains("# TYPE strata_store_hits_total counter");
            } finally {
                var leftover = memory.closeAndAudit().stream().filter(r -> !liveBefore.contains(r.id())).toList();
                assertThat(leftover).as("leak audit after close").isEmpty();
            }
        } finally {
            Files.deleteIfExists(poolFile);
        }
    }

    @Test
    void aTierThatFailsToOpenClosesTheOthers() throws Exception {
        Path notADir = dir.resolve("file");
        Files.writeString(notADir, "x");
        StrataConfig config = ConfigLoader.load(null, List.of("tiers.host.capacity=4MiB", "tiers.disk.capacity=8MiB",
                "tiers.disk.directory=" + notADir.resolve("sub")), null).conclude();
        var liveBefore = MemoryAudit.liveRegions().stream().map(MemoryAudit.LiveRegion::id).toList();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> TieredMemory.open(config, (k, kind, d, s, r) -> { }))
                .hasMessageContaining("sub");
        assertThat(MemoryAudit.liveRegions().stream().filter(r -> !liveBefore.contains(r.id()))).isEmpty();
    }
}
