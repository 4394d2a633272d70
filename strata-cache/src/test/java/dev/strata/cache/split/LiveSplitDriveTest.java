package dev.strata.cache.split;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.expert.ExpertLayout;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvManagerConfig;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.StridedKvLayout;
import dev.strata.cache.kv.TierSlotKvLayout;
import dev.strata.cache.split.SplitController.Mode;
import dev.strata.cache.split.SplitController.ResizeStatus;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.metrics.PrometheusText;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link LiveSplit} driven as an engine drives it, over the real pools in one DEVICE tier: it fills
 * the KV pool with what the budget leaves, turns wide routing into expert slots and reused prompts
 * into KV blocks, counts a resize whose grow was refused (and undone) apart from applied ones, keeps
 * the tier within the budget at every barrier (every allocation and free is checked by the
 * wrapper tier too), and exports all of it as {@code strata_split_*}.
 */
class LiveSplitDriveTest {
    private static final long PAGE = dev.strata.memory.device.CpuDeviceBackend.ALIGNMENT;
    private static final KvGeometry GEOMETRY = new KvGeometry(3, 2, 5, KvDtype.FP16, 4); // 480-byte blocks, 4 tokens
    private static final ExpertLayout EXPERT = ExpertLayout.of("up", 2 * 4096 + 333, "down", 1501); // 3 pages a slot
    private static final int LAYERS = 2;
    private static final int EXPERTS = 16;
    private static final long BUDGET = 100 * PAGE;
    private static final int START_K = 4; // 24 pages
    private static final int FLOOR = 8;
    private static final int PROMPTS = 3;
    private static final int PROMPT_BLOCKS = 10;

    @Test
    void routingAndPromptsMoveTheSplitAndEveryResizeIsCountedWithinTheBudget() {
        SplittableRandom random = new SplittableRandom(0x11FE);
        try (HostTier host = HostTier.create("drive-host", (long) LAYERS * EXPERTS * (EXPERT.bytes() + 4096) + (1 << 20));
             DeviceTier raw = DeviceTier.cpu("drive-device", BUDGET);
             ExpertMasters masters = ExpertMasters.allocate(host, EXPERT, LAYERS, EXPERTS)) {
            LiveSplitTest.fill(masters, 0xD21E);
            LiveSplitTest.WatchedTier device = new LiveSplitTest.WatchedTier(raw, BUDGET);
            try (ExpertPager pager = ExpertPager.builder(masters, device).topK(2).slotsPerLayer(START_K).build()) {
                TierSlotKvLayout layout = TierSlotKvLayout.allocate(device, GEOMETRY, FLOOR);
                PrefixHasher hasher = new PrefixHasher(PrefixHashContext.of(ModelFingerprint.of("drive", GEOMETRY), GEOMETRY));
                KvBlockManager manager = KvBlockManager.builder(layout, hasher).config(KvManagerConfig.defaults()).build();
                try {
                    LiveSplit.Settings settings = LiveSplit.Settings.defaults(BUDGET).withBursts(2, 0.5)
                            .withControl(Mode.ESTIMATOR, 0.0, 4, 0);
                    LiveSplit split = LiveSplit.start(device, pager, manager, FLOOR, settings);
                    long kvStart = (BUDGET - START_K * pager.bytesPerUnit()) / PAGE;
                    assertThat(manager.slotCount()).as("the KV pool gets what the expert slots leave").isEqualTo(kvStart);
                    assertThat(raw.used()).isEqualTo(BUDGET);
                    LiveSplit.Snapshot start = split.snapshot();
                    assertThat(start.expertSlotsPerLayer()).isEqualTo(START_K);
                    assertThat(start.kvBytes()).isEqualTo(kvStart * PAGE);
                    List<LiveSplit.Barrier> barriers = new ArrayList<>();
                    split.observer(barriers::add);

                    // wide routing, no KV reuse; the first grow of the experts finds a page taken by someone else
                    device.squatOnNextAllocate(PAGE);
                    for (int step = 0; step < 40; step++) {
                        for (int l = 0; l < LAYERS; l++) {
                            int a = random.nextInt(EXPERTS);
                            int b = (a + 1 + random.nextInt(EXPERTS - 1)) % EXPERTS;
                            int[] routed = {a, b};
                            split.routed(l, 0, routed);
                            pager.page(l, routed);
                        }
                        split.atBarrier(0);
                    }
                    assertThat(device.squatted).as("the squatter took its page").isTrue();
                    LiveSplit.Snapshot wide = split.snapshot();
                    assertThat(wide.failedKept()).as("the refused grow was undone and counted: %s", wide).isEqualTo(1);
                    assertThat(barriers).filteredOn(b -> b.outcome().status() == ResizeStatus.FAILED_KEPT_PREVIOUS).hasSize(1);
                    assertThat(wide.expertSlotsPerLayer()).as("wide routing buys expert slots: %s", wide).isGreaterThan(START_K);
                    assertThat(wide.kvBlocks()).isLessThan((int) kvStart).isGreaterThanOrEqualTo(FLOOR);
                    assertThat(wide.applied()).isPositive();

                    // prompts reused round-robin, no routing: KV takes the bytes back
                    int[][] prompts = new int[PROMPTS][];
                    for (int p = 0; p < PROMPTS; p++) {
                        prompts[p] = LiveSplitTest.tokens(500 + p, PROMPT_BLOCKS * GEOMETRY.blockTokens());
                    }
                    for (int step = 0; step < 40; step++) {
                        split.requestStarted(prompts[step % PROMPTS]);
                        split.atBarrier(0);
                    }
                    LiveSplit.Snapshot reused = split.snapshot();
                    assertThat(reused.kvBlocks()).as("reused prompts buy KV blocks: %s", reused)
                            .isGreaterThanOrEqualTo(PROMPTS * PROMPT_BLOCKS);
                    assertThat(reused.expertSlotsPerLayer()).isLessThan(wide.expertSlotsPerLayer());
                    assertThat(reused.lastResizeEpochMillis()).isPositive();

                    assertThat(barriers).as("a barrier per step").hasSize(80);
                    assertThat(barriers).allSatisfy(b -> {
                        assertThat(b.tierUsedBytes()).isLessThanOrEqualTo(BUDGET).isEqualTo(b.expertBytes() + b.kvBytes());
                        assertThat(b.tierCapacityBytes()).isEqualTo(BUDGET);
                    });
                    assertThat(reused.tierPeakBytes()).isLessThanOrEqualTo(BUDGET);
                    assertThat(device.maxUsed).isLessThanOrEqualTo(BUDGET);

                    PrometheusText out = new PrometheusText();
                    split.writeTo(out);
                    String text = out.toString();
                    assertThat(sample(text, "strata_split_bytes{side=\"experts\"}")).isEqualTo(reused.expertBytes());
                    assertThat(sample(text, "strata_split_bytes{side=\"kv\"}")).isEqualTo(reused.kvBytes());
                    assertThat(sample(text, "strata_split_resizes_total{outcome=\"applied\"}")).isEqualTo(reused.applied());
                    assertThat(sample(text, "strata_split_resizes_total{outcome=\"failed_kept_previous\"}")).isEqualTo(1);
                    assertThat(sample(text, "strata_split_resizes_total{outcome=\"failed_rollback_refused\"}")).isZero();
                    assertThat(sample(text, "strata_split_bursts_total")).isEqualTo(40);
                    assertThat(sample(text, "strata_split_marginal_seconds_per_byte{side=\"experts\"}")).isNotNegative();
                    assertThat(sample(text, "strata_split_kv_blocks")).isEqualTo(reused.kvBlocks());
                    pager.checkInvariants();
                    manager.checkInvariants();
                } finally {
                    manager.close();
                    layout.close();
                }
            }
            assertThat(raw.used()).isZero();
        }
    }

    @Test
    void aKvManagerOutsideTheTierOrAFloorOverTheBudgetIsRefusedByName() {
        try (HostTier host = HostTier.create("refuse-host", (long) LAYERS * EXPERTS * (EXPERT.bytes() + 4096) + (1 << 20));
             DeviceTier device = DeviceTier.cpu("refuse-device", BUDGET);
             ExpertMasters masters = ExpertMasters.allocate(host, EXPERT, LAYERS, EXPERTS);
             ExpertPager pager = ExpertPager.builder(masters, device).topK(2).slotsPerLayer(START_K).build();
             Arena arena = Arena.ofConfined()) {
            PrefixHasher hasher = new PrefixHasher(PrefixHashContext.of(ModelFingerprint.of("refuse", GEOMETRY), GEOMETRY));
            StridedKvLayout arenaLayout = StridedKvLayout.blockMajor(GEOMETRY, 8,
                    arena.allocate(StridedKvLayout.blockMajorBytes(GEOMETRY, 8), 64));
            KvBlockManager inArena = KvBlockManager.builder(arenaLayout, hasher).build();
            try {
                assertThatThrownBy(() -> LiveSplit.start(device, pager, inArena, 4, LiveSplit.Settings.defaults(BUDGET)))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("refuse-device");
            } finally {
                inArena.close();
            }
            TierSlotKvLayout layout = TierSlotKvLayout.allocate(device, GEOMETRY, 4);
            KvBlockManager inTier = KvBlockManager.builder(layout, hasher).build();
            try {
                assertThatThrownBy(() -> LiveSplit.start(device, pager, inTier, 101, LiveSplit.Settings.defaults(BUDGET)))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("KV floor of 101 blocks");
            } finally {
                inTier.close();
                layout.close();
            }
        }
    }

    private static double sample(String text, String name) {
        return text.lines().filter(l -> l.startsWith(name + " ")).mapToDouble(l -> Double.parseDouble(l.substring(name.length() + 1)))
                .findFirst().orElseThrow(() -> new AssertionError("no sample " + name + " in\n" + text));
    }
}
