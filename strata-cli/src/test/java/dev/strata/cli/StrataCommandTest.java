package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.memory.transfer.NonTemporalCopy;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class StrataCommandTest {

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    @Test
    void inspectConfigPrintsTheCheckedConfiguration() {
        CliRun r = run("inspect", "config", "--set", "tiers.host.capacity=64MiB", "--set", "tiers.device.capacity=16MiB");
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("host:   { capacity: 64MiB, allocator: best-fit }")
                .contains("chain: [device, host]").contains("memory: { huge-pages: advise, non-temporal-copies: auto }").contains("configuration is valid");
    }

    @Test
    void inspectConfigShowsHowPeersArePlaced() {
        CliRun r = run("inspect", "config", "--peer", "/dev/shm/strata-test-a.lend", "--set", "tiers.host.capacity=64MiB",
                "--set", "peers.revocation-half-life-s=600");
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains("policy: stability").contains("a peer's revocations count half after 600 s");
        CliRun bad = run("inspect", "config", "--set", "peers.revocation-half-life-s=0");
        assertThat(bad.status()).isEqualTo(2);
        assertThat(bad.err()).contains("peers.revocation-half-life-s").contains("0 is outside");
    }

    @Test
    void theHugePagesSettingIsShownAndAppliedToTheProcess() {
        try {
            CliRun r = run("inspect", "config", "--set", "memory.huge-pages=off");
            assertThat(r.status()).as(r.err()).isZero();
            assertThat(r.out()).contains("memory: { huge-pages: off, non-temporal-copies: auto }");
            assertThat(dev.strata.memory.host.OffHeapRegion.hugePages()).isEqualTo(dev.strata.memory.host.OffHeapRegion.HugePages.OFF);
            CliRun bad = run("inspect", "config", "--set", "memory.huge-pages=sometimes");
            assertThat(bad.status()).isEqualTo(2);
            assertThat(bad.err().strip()).isEqualTo("strata: memory.huge-pages: unknown value 'sometimes' (expected advise or off)");
            assertThat(run("inspect", "config").status()).isZero();
            assertThat(dev.strata.memory.host.OffHeapRegion.hugePages()).isEqualTo(dev.strata.memory.host.OffHeapRegion.HugePages.ADVISE);
        } finally {
            dev.strata.memory.host.OffHeapRegion.hugePages(dev.strata.memory.host.OffHeapRegion.HugePages.ADVISE);
        }
    }

    @Test
    void theNonTemporalCopiesSettingIsShownAndAppliedToTheProcess() {
        try {
            CliRun r = run("inspect", "config", "--set", "memory.non-temporal-copies=off");
            assertThat(r.status()).as(r.err()).isZero();
            assertThat(r.out()).contains("memory: { huge-pages: advise, non-temporal-copies: off }");
            assertThat(NonTemporalCopy.mode()).isEqualTo(NonTemporalCopy.Mode.OFF);
            CliRun bad = run("inspect", "config", "--set", "memory.non-temporal-copies=always");
            assertThat(bad.status()).isEqualTo(2);
            assertThat(bad.err().strip())
                    .isEqualTo("strata: memory.non-temporal-copies: unknown value 'always' (expected auto or off)");
            assertThat(run("inspect", "config").status()).isZero();
            assertThat(NonTemporalCopy.mode()).isEqualTo(NonTemporalCopy.Mode.AUTO);
        } finally {
            NonTemporalCopy.mode(NonTemporalCopy.Mode.AUTO);
        }
    }

    @Test
    void badSettingsEndWithOneLineNamingTheKeyAndStatus2() {
        CliRun r = run("inspect", "config", "--set", "tiers.host.capacity=lots");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err().strip()).isEqualTo("strata: tiers.host.capacity: not a size: 'lots' (expected e.g. 4096, 64KiB, 8GiB, 2GB)");
        CliRun unknown = run("inspect", "config", "--set", "tiers.host.capacty=1GiB");
        assertThat(unknown.err()).contains("unknown configuration key 'tiers.host.capacty'").contains("capacity");
    }

    @Test
    void unknownScenarioAndMissingPoolAreNamed() {
        CliRun r = run("bench", "nosuch");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("unknown benchmark scenario 'nosuch'").contains("tiers");
        CliRun pool = run("inspect", "pool", "/dev/shm/strata-no-such-pool-" + ProcessHandle.current().pid() + ".pool");
        assertThat(pool.status()).isEqualTo(2);
        assertThat(pool.err()).contains("strata-no-such-pool");
    }

    @Test
    void nodeFlagsAreCheckedWithClearErrors() {
        CliRun size = run("node", "--pool-capacity", "lots");
        assertThat(size.status()).isEqualTo(2);
        assertThat(size.err().strip())
                .isEqualTo("strata: --pool-capacity (tiers.pool.capacity): not a size: 'lots' (expected e.g. 4096, 64KiB, 8GiB, 2GB)");
        CliRun geometry = run("node", "--channels", "0", "--slots", "12", "--payload", "100");
        assertThat(geometry.status()).isEqualTo(2);
        assertThat(geometry.err()).contains("channel count 0").contains("slots per channel 12").contains("payload bytes 100");
        CliRun model = run("node", "--model-fingerprint", "xyz");
        assertThat(model.status()).isEqualTo(2);
        assertThat(model.err()).contains("object key must be 32 hex digits, got 'xyz'");
        assertThat(StrataCommand.commandLine().getSubcommands().get("node").getUsageMessage())
                .contains("--rpc").contains("--pool").contains("--channels");
    }

    @Test
    void inspectPoolShowsTheBlockIndex() throws Exception {
        String name = "cli-index-" + ProcessHandle.current().pid();
        java.nio.file.Path path = java.nio.file.Path.of("/dev/shm", "strata-" + name + ".pool");
        long capacity = 2L << 20;
        var config = dev.strata.memory.pool.PoolConfig.builder(name).path(path).capacity(capacity)
                .rootRegionSize(dev.strata.node.index.PoolBlockIndex.suggestedRegionSize(capacity, 64 << 10, 64))
                .conclude();
        var model = new dev.strata.cache.ObjectKey(0xABCDL, 0x1234L);
        try (var tier = dev.strata.memory.pool.PoolTier.open(config);
             var index = dev.strata.node.index.PoolBlockIndex.open(tier,
                     dev.strata.node.index.BlockIndexConfig.builder(7, model).conclude())) {
            byte[] block = new byte[70_001];
            new java.util.SplittableRandom(5).nextBytes(block);
            new dev.strata.node.index.PoolSharedBlockStore(index).publish(new dev.strata.cache.ObjectKey(1, 2),
                    java.util.List.of(java.lang.foreign.MemorySegment.ofArray(block)));
            long pin = index.acquire(1, 2, new long[4]);
            CliRun r = run("inspect", "pool", path.toString());
            assertThat(r.status()).as(r.err()).isZero();
            assertThat(r.out()).contains("block index", "model fingerprint " + model + ", block-hash version 7",
                    "1 published (70001 bytes), 0 writing", "1 blocks pinned by 1 live pins");
            index.release(pin);
        } finally {
            java.nio.file.Files.deleteIfExists(path);
        }
    }
}
