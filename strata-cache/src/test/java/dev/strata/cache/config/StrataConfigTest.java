package dev.strata.cache.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Sizes;
import dev.strata.memory.TierKind;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.transfer.NonTemporalCopy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StrataConfigTest {

    @TempDir
    Path dir;

    private Path yaml(String text) throws Exception {
        Path f = dir.resolve("strata.yaml");
        Files.writeString(f, text);
        return f;
    }

    @Test
    void readsAFullFileWithSizesAndDefaults() throws Exception {
        Path f = yaml("""
                tiers:
                  device: { capacity: 2GiB }
                  host: { capacity: 8GiB, allocator: slab, block: 256KiB }
                  pool: { capacity: 4GiB, paths: [/dev/shm/a.pool, /dev/shm/b.pool] }
                  disk: { capacity: 64GiB, directory: /var/tmp/x }
                store:
                  chain: [device, host, pool, disk]
                  policy: tinylfu
                """);
        StrataConfig c = ConfigLoader.load(f, List.of(), null).conclude(64 * Sizes.GiB);
        assertThat(c.device().capacity()).isEqualTo(2 * Sizes.GiB);
        assertThat(c.host().block()).isEqualTo(256 * Sizes.KiB);
        assertThat(c.pool().paths()).hasSize(2);
        assertThat(c.pool().chunk()).isEqualTo(64 * Sizes.KiB);
        assertThat(c.disk().directIo()).isTrue();
        assertThat(c.store().chain()).containsExactly(TierKind.DEVICE, TierKind.HOST, TierKind.POOL, TierKind.DISK);
        assertThat(c.store().policyOf(TierKind.HOST).policy()).isEqualTo(PolicyKind.TINY_LFU);
        assertThat(c.transfer().diskLinkWorkers()).isEqualTo(4);
    }

    @Test
    void flagsOverrideEnvironmentWhichOverridesTheFile() throws Exception {
        Path f = yaml("tiers: { host: { capacity: 1GiB } }\n");
        StrataConfig c = ConfigLoader.load(f, List.of("tiers.host.capacity=3GiB"),
                "tiers.host.capacity=2GiB,store.policy=lru").conclude(64 * Sizes.GiB);
        assertThat(c.host().capacity()).isEqualTo(3 * Sizes.GiB);
        assertThat(c.store().policyOf(TierKind.HOST).policy()).isEqualTo(PolicyKind.LRU);
    }

    @Test
    void unknownKeysAreRejectedByName() throws Exception {
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { host: { capacity: 1GiB, colour: red } }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("'tiers.host.colour'");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("store.polcy=lru"), null))
                .hasMessageContaining("'store.polcy'");
    }

    /** A key written twice used to let the second silently win; now the file is refused, naming the key and the line. */
    @Test
    void aDuplicateKeyIsRejectedByName() throws Exception {
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers:\n  host:\n    capacity: 1GiB\n    capacity: 2GiB\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("Duplicate field 'capacity'").hasMessageContaining("line 4");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers:\n  host: { capacity: 1GiB }\ntiers:\n  disk: { capacity: 1GiB }\n"),
                List.of(), null)).isInstanceOf(ConfigException.class).hasMessageContaining("'tiers'");
    }

    @Test
    void badValuesNameKeyAndValue() throws Exception {
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=lots"), null))
                .hasMessageContaining("tiers.host.capacity").hasMessageContaining("'lots'");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "store.policy=random"), null))
                .hasMessageContaining("store.policy").hasMessageContaining("'random'").hasMessageContaining("priority-lru");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "store.high-watermark=1.5"), null))
                .hasMessageContaining("store.high-watermark").hasMessageContaining("1.5");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("capacity"), null)).hasMessageContaining("key=value");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: [host]\n"), List.of(), null))
                .hasMessageContaining("tiers").hasMessageContaining("mapping");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: {host: {capacity: 1GiB}\n"), List.of(), null))
                .hasMessageContaining("not valid YAML");
        assertThatThrownBy(() -> ConfigLoader.load(dir.resolve("missing.yaml"), List.of(), null))
                .hasMessageContaining("not found").hasMessageContaining("missing.yaml");
    }

    @Test
    void impossibleCombinationsAreExplained() {
        assertThatThrownBy(() -> ConfigLoader.load(null,
                List.of("tiers.host.capacity=1GiB", "store.chain=[host,disk]"), null).conclude(64 * Sizes.GiB))
                .hasMessageContaining("'disk'").hasMessageContaining("not configured");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "tiers.device.capacity=1GiB",
                "store.chain=[host,device]"), null).conclude(64 * Sizes.GiB))
                .hasMessageContaining("faster 'device'");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB",
                "store.low-watermark=0.9", "store.high-watermark=0.8"), null).conclude(64 * Sizes.GiB))
                .hasMessageContaining("low watermark (0.9)").hasMessageContaining("high watermark (0.8)");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "tiers.host.allocator=slab"),
                null).conclude(64 * Sizes.GiB)).hasMessageContaining("tiers.host.block is required");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=48GiB"), null).conclude(24 * Sizes.GiB))
                .hasMessageContaining("48 GiB").hasMessageContaining("24 GiB");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.pool.capacity=64MiB", "tiers.pool.chunk=3000"), null)
                .conclude(64 * Sizes.GiB)).hasMessageContaining("tiers.pool.chunk").hasMessageContaining("3000");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.disk.directory=/tmp"), null))
                .hasMessageContaining("tiers.disk.capacity is required");
    }

    @Test
    void perTierOverridesAndPromotion() {
        StrataConfig c = ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "tiers.device.capacity=1GiB",
                "store.tiers.host.policy=tiny-lfu", "store.tiers.host.high-watermark=0.99", "store.promotion=to-top-after",
                "store.promote-after=3"), null).conclude(64 * Sizes.GiB);
        assertThat(c.store().policyOf(TierKind.DEVICE)).isEqualTo(new StrataConfig.TierPolicy(0.95, 0.85, PolicyKind.PRIORITY_LRU));
        assertThat(c.store().policyOf(TierKind.HOST)).isEqualTo(new StrataConfig.TierPolicy(0.99, 0.85, PolicyKind.TINY_LFU));
        assertThat(c.store().promotion()).isEqualTo(StrataConfig.Promotion.TO_TOP_AFTER);
        assertThat(c.store().promoteAfter()).isEqualTo(3);
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "store.tiers.disk.policy=lru"), null))
                .hasMessageContaining("store.tiers.disk").hasMessageContaining("not in store.chain");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "store.tiers.host.low-watermark=0.99"),
                null).conclude(64 * Sizes.GiB)).hasMessageContaining("tier 'host'").hasMessageContaining("0.99");
    }

    @Test
    void defaultsGiveOneHostTier() {
        StrataConfig c = StrataConfig.defaults().conclude(64 * Sizes.GiB);
        assertThat(c.host().capacity()).isEqualTo(Sizes.GiB);
        assertThat(c.store().chain()).containsExactly(TierKind.HOST);
    }

    @Test
    void expertMastersMayLiveOnDiskForThePager() throws Exception {
        assertThat(StrataConfig.defaults().conclude(64 * Sizes.GiB).process().experts().mastersDir()).isNull();
        assertThat(ConfigLoader.load(yaml("experts: { device-slots: 4, masters-dir: /mnt/ssd/experts }\n"), List.of(), null)
                .conclude(64 * Sizes.GiB).process().experts().mastersDir()).isEqualTo(Path.of("/mnt/ssd/experts"));
        assertThatThrownBy(() -> ConfigLoader.load(yaml("experts: { masters-dir: /mnt/ssd/experts }\n"), List.of(), null)
                .conclude(64 * Sizes.GiB)).isInstanceOf(ConfigException.class).hasMessageContaining("experts.masters-dir")
                .hasMessageContaining("experts.device-slots");
    }

    @Test
    void peersLookForARestartedAgentEverySecondUnlessToldOtherwise() throws Exception {
        ProcessConfig.Peers defaults = ConfigLoader.load(yaml("peers: { files: [/dev/shm/a.lend] }\n"), List.of(), null)
                .conclude(64 * Sizes.GiB).process().peers();
        assertThat(defaults.files()).containsExactly(Path.of("/dev/shm/a.lend"));
        assertThat(defaults.reattachMillis()).isEqualTo(1000);
        assertThat(defaults.drainWaitMicros()).isEqualTo(100);
        assertThat(defaults.revocationHalfLifeSeconds()).isEqualTo(60);
        assertThat(ConfigLoader.load(yaml("peers: { revocation-half-life-s: 600 }\n"), List.of(), null).conclude(64 * Sizes.GiB)
                .process().peers().revocationHalfLifeSeconds()).isEqualTo(600);
        assertThatThrownBy(() -> ConfigLoader.load(yaml("peers: { revocation-half-life-s: 0 }\n"), List.of(), null).conclude(64 * Sizes.GiB))
                .isInstanceOf(ConfigException.class).hasMessageContaining("peers.revocation-half-life-s").hasMessageContaining("0 is outside");
        assertThat(ConfigLoader.load(yaml("peers: { drain-wait-us: 0 }\n"), List.of(), null).conclude(64 * Sizes.GiB)
                .process().peers().drainWaitMicros()).isZero();
        assertThatThrownBy(() -> ConfigLoader.load(yaml("peers: { drain-wait-us: -5 }\n"), List.of(), null).conclude(64 * Sizes.GiB))
                .isInstanceOf(ConfigException.class).hasMessageContaining("peers.drain-wait-us").hasMessageContaining("-5 is outside");
        assertThat(ConfigLoader.load(yaml("peers: { reattach-ms: 250 }\n"), List.of(), null).conclude(64 * Sizes.GiB)
                .process().peers().reattachMillis()).isEqualTo(250);
        assertThatThrownBy(() -> ConfigLoader.load(yaml("peers: { reattach-ms: 0 }\n"), List.of(), null).conclude(64 * Sizes.GiB))
                .isInstanceOf(ConfigException.class).hasMessageContaining("peers.reattach-ms").hasMessageContaining("0 is outside");
    }

    @Test
    void aClusterTierIsReadWithItsDefaultsAndLeavesTheStoreChainAlone() throws Exception {
        StrataConfig c = ConfigLoader.load(yaml("""
                tiers:
                  host: { capacity: 1GiB }
                  cluster: { nodes: [10.0.0.5:7000, "10.0.0.6:7001"], password-env: STRATA_CLUSTER_PASSWORD }
                """), List.of("tiers.cluster.ttl=10m", "tiers.cluster.tenant=team-a"), null).conclude(64 * Sizes.GiB);
        assertThat(c.cluster().nodes()).containsExactly("10.0.0.5:7000", "10.0.0.6:7001");
        assertThat(c.cluster().passwordEnv()).isEqualTo("STRATA_CLUSTER_PASSWORD");
        assertThat(c.cluster().passwordFile()).isNull();
        assertThat(c.cluster().ttlMillis()).isEqualTo(600_000);
        assertThat(c.cluster().timeoutMillis()).isEqualTo(StrataConfig.DEFAULT_CLUSTER_TIMEOUT_MILLIS);
        assertThat(c.cluster().tenant()).isEqualTo("team-a");
        assertThat(c.cluster().tls()).isFalse();
        assertThat(c.cluster().write()).isEqualTo(StrataConfig.ClusterWrite.COMMIT);
        assertThat(c.cluster().admission()).isEqualTo(StrataConfig.ClusterAdmission.ALL);
        assertThat(c.cluster().queueBytes()).isEqualTo(StrataConfig.DEFAULT_CLUSTER_QUEUE_BYTES);
        StrataConfig behind = ConfigLoader.load(yaml("tiers: { cluster: { nodes: [a:1], write: eviction, admission: seen-twice, "
                + "write-queue: 8MiB, capacity: 96GiB } }\n"), List.of(), null);
        assertThat(behind.cluster().capacityHint()).isEqualTo(96L << 30);
        assertThat(c.cluster().capacityHint()).isZero();
        assertThat(behind.cluster().write()).isEqualTo(StrataConfig.ClusterWrite.EVICTION);
        assertThat(behind.cluster().admission()).isEqualTo(StrataConfig.ClusterAdmission.SEEN_TWICE);
        assertThat(behind.cluster().queueBytes()).isEqualTo(8L << 20);
        assertThat(c.cluster().connectionsPerPrimary()).isEqualTo(StrataConfig.DEFAULT_CLUSTER_CONNECTIONS);
        assertThat(ConfigLoader.load(yaml("tiers: { cluster: { nodes: [a:1], connections-per-primary: 2 } }\n"), List.of(), null)
                .cluster().connectionsPerPrimary()).isEqualTo(2);
        assertThat(c.store().chain()).containsExactly(TierKind.HOST);
        assertThat(c.onlyTiers(java.util.Set.of(TierKind.HOST)).cluster()).isEqualTo(c.cluster());
        assertThat(StrataConfig.defaults().cluster()).isNull();
    }

    @Test
    void badClusterSettingsNameKeyAndValue() throws Exception {
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { cluster: { ttl: 1h } }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.nodes is required");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { cluster: { nodes: [db:http] } }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.nodes").hasMessageContaining("'db:http'");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { cluster: { nodes: [a:1], timeout: 5 } }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.timeout").hasMessageContaining("'5'");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { cluster: { nodes: [a:1], write: later } }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.write").hasMessageContaining("'later'");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { cluster: { nodes: [a:1], write-queue: 4KiB } }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.write-queue").hasMessageContaining("4096");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { cluster: { nodes: [a:1], connections-per-primary: 0 } }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.connections-per-primary").hasMessageContaining("0");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { cluster: { nodes: [a:1], connections-per-primary: 65 } }\n"), List.of(),
                null)).isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.connections-per-primary").hasMessageContaining("65");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { cluster: { nodes: [a:1], tenant: 'a b' } }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.tenant").hasMessageContaining("'a b'");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("tiers: { cluster: { nodes: [a:1], password: x } }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.password");
    }

    @Test
    void kvPolicyDefaultsToAdaptiveReachAndIsReadFromTheFileTheEnvironmentAndFlags() throws Exception {
        assertThat(StrataConfig.defaults().conclude(64 * Sizes.GiB).process().kv().policy()).isEqualTo(PolicyKind.ADAPTIVE_REACH);
        assertThat(ConfigLoader.load(yaml("kv: { device-blocks: 64 }\n"), List.of(), null).process().kv().policy())
                .isEqualTo(PolicyKind.KV_DEFAULT);
        for (PolicyKind kind : PolicyKind.values()) {
            assertThat(ConfigLoader.load(yaml("kv: { policy: " + kind.configName() + " }\n"), List.of(), null).process().kv().policy())
                    .as("kv.policy: %s in the file", kind.configName()).isEqualTo(kind);
            assertThat(ConfigLoader.load(null, List.of(), "kv.policy=" + kind.configName()).process().kv().policy())
                    .as("STRATA_SET kv.policy=%s", kind.configName()).isEqualTo(kind);
            assertThat(ConfigLoader.load(null, List.of("kv.policy=" + kind.configName()), null).process().kv().policy())
                    .as("--set kv.policy=%s", kind.configName()).isEqualTo(kind);
        }
        Path f = yaml("kv: { policy: tiny-lfu, device-blocks: 64 }\n");
        ProcessConfig.Kv kv = ConfigLoader.load(f, List.of("kv.policy=lru"), "kv.policy=prefix-aware").process().kv();
        assertThat(kv.policy()).as("--set over STRATA_SET over the file").isEqualTo(PolicyKind.LRU);
        assertThat(kv.deviceBlocks()).isEqualTo(64);
        assertThat(ConfigLoader.load(f, List.of(), "kv.policy=prefix-aware").process().kv().policy()).isEqualTo(PolicyKind.PREFIX_AWARE);
    }

    @Test
    void recomputeWhenFasterIsOnUnlessTurnedOffAndABadValueIsNamed() throws Exception {
        assertThat(StrataConfig.defaults().conclude(64 * Sizes.GiB).process().kv().recomputeWhenFaster()).isTrue();
        assertThat(ConfigLoader.load(yaml("kv: { recompute-when-faster: false }\n"), List.of(), null).process().kv()
                .recomputeWhenFaster()).isFalse();
        assertThat(ConfigLoader.load(null, List.of("kv.recompute-when-faster=off"), null).process().kv().recomputeWhenFaster())
                .isFalse();
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("kv.recompute-when-faster=sometimes"), null))
                .isInstanceOf(ConfigException.class)
                .hasMessage("kv.recompute-when-faster: not a boolean: 'sometimes' (use true or false)");
    }

    @Test
    void aBadKvPolicyNamesTheKeyTheValueAndTheChoices() throws Exception {
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("kv.policy=fifo"), null))
                .isInstanceOf(ConfigException.class)
                .hasMessage("kv.policy: unknown eviction policy 'fifo' (choose priority-lru, lru, tiny-lfu, prefix-aware or adaptive-reach)");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("kv: { policy: random }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("kv.policy").hasMessageContaining("'random'")
                .hasMessageContaining("adaptive-reach");
        assertThatThrownBy(() -> ConfigLoader.load(yaml("kv: { polcy: lru }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("'kv.polcy'");
    }

    @Test
    void hugePagesAreAdvisedUnlessTheConfigurationTurnsThemOff() throws Exception {
        assertThat(StrataConfig.defaults().memory().hugePages()).isEqualTo(OffHeapRegion.HugePages.ADVISE);
        assertThat(ConfigLoader.load(yaml("memory: { huge-pages: off }\n"), List.of(), null).memory().hugePages())
                .isEqualTo(OffHeapRegion.HugePages.OFF);
        assertThat(ConfigLoader.load(yaml("memory: { huge-pages: off }\n"), List.of("memory.huge-pages=advise"), null)
                .memory().hugePages()).isEqualTo(OffHeapRegion.HugePages.ADVISE);
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("memory.huge-pages=always"), null))
                .isInstanceOf(ConfigException.class)
                .hasMessage("memory.huge-pages: unknown value 'always' (expected advise or off)");
        assertThat(ConfigLoader.load(yaml("memory: { huge-pages: false }\n"), List.of(), null).memory().hugePages())
                .isEqualTo(OffHeapRegion.HugePages.OFF);
        assertThat(ConfigLoader.load(null, List.of("memory.huge-pages=off"), null).memory().hugePages())
                .isEqualTo(OffHeapRegion.HugePages.OFF);
        assertThatThrownBy(() -> ConfigLoader.load(yaml("memory: { hugepages: off }\n"), List.of(), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("'memory.hugepages'");
    }

    @Test
    void nonTemporalCopiesAreAutomaticUnlessTheConfigurationTurnsThemOff() throws Exception {
        assertThat(StrataConfig.defaults().memory().nonTemporalCopies()).isEqualTo(NonTemporalCopy.Mode.AUTO);
        assertThat(ConfigLoader.load(yaml("memory: { non-temporal-copies: off }\n"), List.of(), null).memory()
                .nonTemporalCopies()).isEqualTo(NonTemporalCopy.Mode.OFF);
        assertThat(ConfigLoader.load(yaml("memory: { non-temporal-copies: off }\n"), List.of("memory.non-temporal-copies=auto"),
                null).memory().nonTemporalCopies()).isEqualTo(NonTemporalCopy.Mode.AUTO);
        assertThat(ConfigLoader.load(yaml("memory: { non-temporal-copies: false }\n"), List.of(), null).memory()
                .nonTemporalCopies()).isEqualTo(NonTemporalCopy.Mode.OFF);
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("memory.non-temporal-copies=always"), null))
                .isInstanceOf(ConfigException.class)
                .hasMessage("memory.non-temporal-copies: unknown value 'always' (expected auto or off)");
    }
}
