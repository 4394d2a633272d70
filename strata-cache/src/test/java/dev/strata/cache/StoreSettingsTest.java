package dev.strata.cache;

import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Store settings read from YAML, validated, and bound to open tiers. */
class StoreSettingsTest {

    @Test
    void readsAChainAndBuildsAStore() {
        StoreSettings s = StoreSettings.fromYaml("""
                tiers:
                  - name: device
                    high-watermark: 0.9
                    low-watermark: 0.7
                    policy: priority-lru
                  - name: host
                    policy: tiny-lfu
                promotion: to-top-after
                promote-after: 3
                """);
        assertThat(s.tiers()).containsExactly(
                new StoreSettings.TierSettings("device", 0.9, 0.7, PolicyKind.PRIORITY_LRU),
                new StoreSettings.TierSettings("host", 0.95, 0.85, PolicyKind.TINY_LFU));
        assertThat(s.promoteAfter()).isEqualTo(3);
        assertThat(s.promotionRule().target(ObjectKind.EXPERT, PriorityClass.IDLE, 1, 2)).isEqualTo(1);
        assertThat(s.promotionRule().target(ObjectKind.EXPERT, PriorityClass.IDLE, 1, 3)).isZero();
        try (DeviceTier dev = DeviceTier.cpu("device", 8 * 4096); HostTier host = HostTier.create("host", 8 * 4096);
             TieredStore store = s.builder(Map.of("device", dev, "host", host)).build()) {
            StoreStats stats = store.stats();
            assertThat(stats.tiers()).extracting(TierMetrics::name).containsExactly("device", "host");
            assertThat(stats.tier("host").policy()).isEqualTo("tiny-lfu");
            assertThat(stats.tier("device").lowWatermark()).isEqualTo(0.7);
        }
    }

    @Test
    void mistakesAreNamed() {
        assertThatThrownBy(() -> StoreSettings.fromYaml("tiers: []")).hasMessageContaining("non-empty 'tiers'");
        assertThatThrownBy(() -> StoreSettings.fromYaml("tiers:\n  - name: d\n    hgh-watermark: 0.5\n"))
                .hasMessageContaining("unknown key 'hgh-watermark' in tier 'd'");
        assertThatThrownBy(() -> StoreSettings.fromYaml("tiers:\n  - name: d\n    low-watermark: 0.99\n"))
                .hasMessageContaining("low 0.99, high 0.95");
        assertThatThrownBy(() -> StoreSettings.fromYaml("tiers:\n  - name: d\n    policy: fifo\n")).hasMessageContaining("'fifo'");
        assertThatThrownBy(() -> StoreSettings.fromYaml("tiers:\n  - name: d\npromotion: sometimes\n"))
                .hasMessageContaining("'sometimes'");
        assertThatThrownBy(() -> StoreSettings.fromYaml("tiers:\n  - name: d\n  - name: d\n")).hasMessageContaining("twice");
        StoreSettings s = StoreSettings.fromYaml("tiers:\n  - name: disk\n");
        assertThatThrownBy(() -> s.builder(Map.of())).hasMessageContaining("tier 'disk', which is not open");
    }
}
