package dev.strata.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.expert.ExpertLayout;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.kv.AllocationStatus;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvSequence;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.PrefixMatch;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.cache.split.LiveSplit;
import dev.strata.memory.TierKind;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.metrics.PrometheusText;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The one manager of a serving process's memory: what it opens from the configuration and the
 * model's description, that the parts work together, and that closing (or failing half-way)
 * frees every region it allocated.
 */
class ServingMemoryTest {
    private static final KvGeometry GEOMETRY = new KvGeometry(3, 2, 5, KvDtype.FP16, 4); // 480-byte blocks, 4 tokens
    private static final int LAYERS = 2; // MoE layers
    private static final int EXPERTS = 8; // experts per layer
    private static final long EXPERT_BYTES = 4096; // one expert image

    @TempDir
    Path dir;

    private static PrefixHasher hasher() {
        return new PrefixHasher(PrefixHashContext.of(ModelFingerprint.of("serving-memory", GEOMETRY), GEOMETRY));
    }

    /** Masters whose every byte names its layer and expert, so a fetched slot can be checked. */
    private static ExpertMasters masters(dev.strata.memory.Tier tier) {
        ExpertMasters m = ExpertMasters.allocate(tier, ExpertLayout.single(EXPERT_BYTES), LAYERS, EXPERTS);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment image = arena.allocate(EXPERT_BYTES);
            for (int l = 0; l < LAYERS; l++) {
                for (int e = 0; e < EXPERTS; e++) {
                    image.fill((byte) (l * EXPERTS + e + 1));
                    m.write(l, e, image);
                }
            }
        }
        return m;
    }

    private static ServingMemory.Experts experts(int slots) {
        return new ServingMemory.Experts(ExpertLayout.single(EXPERT_BYTES), LAYERS, EXPERTS, 2, slots, ServingMemoryTest::masters);
    }

    private StrataConfig offload() {
        return ConfigLoader.load(null, List.of("tiers.host.capacity=1MiB", "tiers.disk.capacity=4MiB",
                "tiers.disk.directory=" + dir.resolve("disk"), "tiers.disk.remove-on-close=true", "tiers.device.capacity=1MiB"), null).conclude();
    }

    private static List<Long> live() {
        return MemoryAudit.liveRegions().stream().map(MemoryAudit.LiveRegion::id).toList();
    }

    private static long sample(String text, String family, String tier) {
        Matcher m = Pattern.compile("(?m)^" + family + "\\{tier=\"" + tier + "\"[^}]*} (\\S+)$").matcher(text);
        assertThat(m.find()).as("%s of tier %s in%n%s", family, tier, text).isTrue();
        return (long) Double.parseDouble(m.group(1));
    }

    @Test
    void opensKvOffloadExpertsAndTheSplitFromOneDescriptionAndFreesAllAtClose() {
        List<Long> before = live();
        long budget = 2L * LAYERS * EXPERT_BYTES * 4 + 64 * 512; // room to move between experts and KV
        ServingMemory memory = ServingMemory.builder(GEOMETRY, 16, hasher()).offload(offload()).experts(experts(3))
                .split(LiveSplit.Settings.defaults(budget)).open();
        try {
            assertThat(memory.offloadTiers()).extracting(t -> t.kind()).containsExactly(TierKind.HOST, TierKind.DISK)
                    .as("DEVICE of the configuration is not an offload tier");
            assertThat(memory.split()).isNotNull();
            assertThat(memory.split().settings().budgetBytes()).isEqualTo(budget);
            // the pager serves the masters' bytes from its DEVICE slots
            int[] map = memory.pager().page(1, new int[] {5, 2}); // map[expert] = slot
            MemorySegment slot = memory.pager().slot(1, map[5]);
            assertThat(slot.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) (EXPERTS + 5 + 1));
            assertThat(slot.get(ValueLayout.JAVA_BYTE, EXPERT_BYTES - 1)).isEqualTo((byte) (EXPERTS + 5 + 1));
            assertThat(memory.pager().slot(1, map[2]).get(ValueLayout.JAVA_BYTE, 7)).isEqualTo((byte) (EXPERTS + 2 + 1));
            // one KV sequence of the floor fits, in the split's DEVICE tier
            var seq = memory.kv().newSequence();
            assertThat(memory.kv().allocate(seq, 16 * 4)).isEqualTo(dev.strata.cache.kv.AllocationStatus.ALLOCATED);
            memory.kv().release(seq);
            PrometheusText out = new PrometheusText();
            memory.writeMemoryMetrics(out);
            String text = out.toString();
            assertThat(sample(text, "strata_tier_capacity_bytes", "device")).isEqualTo(budget);
            assertThat(sample(text, "strata_tier_capacity_bytes", "expert-masters")).isGreaterThanOrEqualTo(LAYERS * EXPERTS * EXPERT_BYTES);
            assertThat(sample(text, "strata_tier_capacity_bytes", "host")).isEqualTo(1L << 20);
            assertThat(sample(text, "strata_tier_capacity_bytes", "disk")).isEqualTo(4L << 20);
            assertThat(text).contains("strata_store_").contains("strata_link_");
        } finally {
            memory.close();
        }
        assertThat(live().stream().filter(id -> !before.contains(id))).as("regions left after close").isEmpty();
        assertThat(Files.exists(dir.resolve("disk")) ? dir.resolve("disk").toFile().list() : new String[0])
                .as("DISK files removed at close").isEmpty();
    }

    @Test
    void aFailureHalfWayClosesWhatWasAlreadyOpened() {
        List<Long> before = live();
        ServingMemory.Experts failing = new ServingMemory.Experts(ExpertLayout.single(EXPERT_BYTES), LAYERS, EXPERTS, 2, 3, tier -> {
            masters(tier).close();
            throw new IllegalStateException("weights unreadable");
        });
        assertThatThrownBy(() -> ServingMemory.builder(GEOMETRY, 16, hasher()).offload(offload()).experts(failing).open())
                .hasMessage("weights unreadable");
        assertThat(live().stream().filter(id -> !before.contains(id))).as("regions left after a failed open").isEmpty();
    }

    @Test
    void refusesWhatCannotBeServedNamingEachValue() {
        assertThatThrownBy(() -> ServingMemory.builder(GEOMETRY, 16, hasher()).split(LiveSplit.Settings.defaults(1 << 20)).open())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("split of 1048576 bytes needs a MoE model");
        assertThatThrownBy(() -> ServingMemory.builder(GEOMETRY, 16, hasher()).experts(experts(3))
                .split(LiveSplit.Settings.defaults(10_000)).open())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("split budget 10000 bytes is below");
        assertThatThrownBy(() -> experts(1)).hasMessageContaining("expert cap 1 is below the model's experts per token 2");
        assertThatThrownBy(() -> ServingMemory.builder(GEOMETRY, 0, hasher())).hasMessageContaining("KV blocks 0");
    }

    /** One request of {@code tokens}: matches and loads what is resident, allocates the rest, commits, releases. */
    private static void request(KvBlockManager kv, int[] tokens) {
        KvSequence s = kv.newSequence();
        PrefixMatch match = kv.match(tokens, tokens.length);
        kv.load(match, s).join();
        assertThat(kv.allocateTo(s, tokens.length)).isEqualTo(AllocationStatus.ALLOCATED);
        kv.commit(s, tokens, tokens.length);
        kv.release(s);
    }

    /** A one-block prompt whose every token is {@code id}. */
    private static int[] block(int id) {
        int[] tokens = new int[GEOMETRY.blockTokens()];
        java.util.Arrays.fill(tokens, id);
        return tokens;
    }

    /**
     * Opens three KV slots under {@code kv.policy=policy} and runs one-block requests a, a, b, c, d:
     * a is reached by two requests but least recently used when d needs a slot, b is the oldest
     * block reached once. Returns whether a and b are still resident.
     */
    private List<Boolean> residentAfterPressure(String policy) {
        StrataConfig config = ConfigLoader.load(null, List.of("kv.policy=" + policy), null);
        try (ServingMemory memory = ServingMemory.builder(GEOMETRY, 3, hasher()).kvPolicy(config.process().kv().policy()).open()) {
            KvBlockManager kv = memory.kv();
            assertThat(kv.policyName()).as("the policy of the slots").isEqualTo(policy);
            int[] a = block(1);
            int[] b = block(2);
            request(kv, a);
            request(kv, a);
            request(kv, b);
            request(kv, block(3));
            assertThat(kv.freeSlots()).as("the three slots hold a, b and c").isZero();
            request(kv, block(4));
            int bt = GEOMETRY.blockTokens();
            return List.of(kv.isOnDevice(kv.hasher().chain(a, bt)[0]), kv.isOnDevice(kv.hasher().chain(b, bt)[0]));
        }
    }

    @Test
    void theKvSlotsEvictByTheConfiguredPolicy() {
        assertThat(residentAfterPressure("lru")).as("lru evicts a, the least recently used").containsExactly(false, true);
        assertThat(residentAfterPressure("adaptive-reach")).as("adaptive-reach evicts b, reached once, before a, reached twice")
                .containsExactly(true, false);
    }

    @Test
    void theKvPolicyIsAdaptiveReachUnlessSetAndKeptUnderWriteThroughOffload() {
        try (ServingMemory memory = ServingMemory.builder(GEOMETRY, 4, hasher()).open()) {
            assertThat(memory.kv().policyName()).isEqualTo(PolicyKind.KV_DEFAULT.configName()).isEqualTo("adaptive-reach");
        }
        try (ServingMemory memory = ServingMemory.builder(GEOMETRY, 4, hasher()).offload(offload()).kvPolicy(PolicyKind.TINY_LFU).open()) {
            assertThat(memory.kv().policyName()).isEqualTo("tiny-lfu");
            assertThat(memory.kv().stats().policy()).isEqualTo("tiny-lfu");
            assertThat(memory.kv().stats().toPrometheus()).contains("strata_kv_device_policy{policy=\"tiny-lfu\"} 1");
        }
    }
}
