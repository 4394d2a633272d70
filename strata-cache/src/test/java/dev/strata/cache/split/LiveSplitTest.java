package dev.strata.cache.split;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.expert.ExpertLayout;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.AllocationStatus;
import dev.strata.cache.kv.DeviceBlock;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvManagerConfig;
import dev.strata.cache.kv.KvSequence;
import dev.strata.cache.kv.KvSlotPool;
import dev.strata.cache.kv.LoadOutcome;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.PrefixMatch;
import dev.strata.cache.kv.TierSlotKvLayout;
import dev.strata.cache.kv.TokenSelection;
import dev.strata.cache.split.SplitController.Mode;
import dev.strata.cache.split.SplitController.ResizeOutcome;
import dev.strata.cache.split.SplitController.ResizeStatus;
import dev.strata.cache.split.SplitController.Settings;
import dev.strata.memory.Allocator;
import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The live expert/KV split over the real pools: ONE DEVICE tier of a fixed budget holds both the
 * {@link ExpertPager}'s slots and the {@link KvBlockManager}'s {@link TierSlotKvLayout} slots; a
 * {@link SplitController} fed by a {@link SplitEstimator} moves bytes between them at drained
 * barriers while an engine loop pages experts and runs KV sequences through alternating regimes
 * (tool calls: few KV blocks, wide routing; long contexts: many KV blocks held and reused, narrow
 * routing). Every allocation and free either pool makes is checked against the budget by a
 * wrapper tier, which can also squat on bytes between a shrink and a grow to make the grow (and,
 * if it stays, the undo of the shrink) fail.
 */
class LiveSplitTest {
    private static final long PAGE = dev.strata.memory.device.CpuDeviceBackend.ALIGNMENT;
    private static final KvGeometry GEOMETRY = new KvGeometry(3, 2, 5, KvDtype.FP16, 4); // 480-byte blocks, 4 tokens
    private static final int BT = GEOMETRY.blockTokens();
    private static final ExpertLayout EXPERT = ExpertLayout.of("up", 2 * 4096 + 333, "down", 1501); // 3 pages a slot
    private static final int LAYERS = 2;
    private static final int EXPERTS = 16;
    private static final int TOP_K = 2;
    private static final long BUDGET = 100 * PAGE; // the DEVICE tier's whole capacity
    private static final int START_K = 8;
    private static final int STEPS_PER_BURST = 3;
    private static final int BURSTS_PER_PHASE = 8;
    private static final int LONG_CONVERSATIONS = 4;
    private static final int LONG_TOKENS = 10 * BT + 1; // 10 full blocks and a partial one
    private static final int TOOL_CONVERSATIONS = 2;
    private static final int TOOL_TOKENS = 2 * BT + 3; // 2 full blocks and a partial one
    private static final long FLOOR = LONG_TOKENS / BT + 1; // admission floor: one long conversation fits
    private static final MissCosts COSTS = MissCosts.given(300e-6, 700e-6);

    /** The engine's phases. */
    private enum Phase { TOOL, LONG }

    @ParameterizedTest
    @EnumSource(Mode.class)
    void theSplitFollowsTheRegimeOverTheRealPoolsAndEveryResizeKeepsBudgetAndBytes(Mode mode) {
        SplittableRandom random = new SplittableRandom(0x5EED_0000L + mode.ordinal());
        try (HostTier host = HostTier.create("live-split-host", (long) LAYERS * EXPERTS * (EXPERT.bytes() + 4096) + (1 << 20));
             DeviceTier raw = DeviceTier.cpu("live-split-device", BUDGET);
             ExpertMasters masters = ExpertMasters.allocate(host, EXPERT, LAYERS, EXPERTS)) {
            fill(masters, 0xE0E0L + mode.ordinal());
            WatchedTier device = new WatchedTier(raw, BUDGET);
            try (ExpertPager pager = ExpertPager.builder(masters, device).topK(TOP_K).slotsPerLayer(START_K).build()) {
                long kvSlots = (BUDGET - START_K * pager.bytesPerUnit()) / PAGE;
                TierSlotKvLayout layout = TierSlotKvLayout.allocate(device, GEOMETRY, (int) kvSlots);
                try {
                    PrefixHasher hasher = new PrefixHasher(PrefixHashContext.of(ModelFingerprint.of("live-split", GEOMETRY),
                            GEOMETRY));
                    KvBlockManager manager = KvBlockManager.builder(layout, hasher).config(KvManagerConfig.defaults()).build();
                    try {
                        new Engine(mode, random, device, pager, manager, hasher).run();
                    } finally {
                        manager.close();
                    }
                } finally {
                    layout.close();
                }
            }
            assertThat(raw.used()).as("every slot of both pools is back in the tier").isZero();
        }
    }

    /** The engine's side: steps, bursts, barriers and the checks after every resize. */
    private static final class Engine {
        final Mode mode;
        final SplittableRandom random;
        final WatchedTier device;
        final ExpertPager pager;
        final KvBlockManager manager;
        final PrefixHasher hasher;
        final KvSlotPool kv;
        final SplitController controller;
        final SplitEstimator estimator;
        final Set<ObjectKey> written = new LinkedHashSet<>(); // every block key the engine committed
        int rotation; // admission order of the long conversations rotates step by step
        int refusedShrinks;
        int rolledBackGrows;
        int survivorsAcrossResizes; // blocks resident before and after an applied resize

        Engine(Mode mode, SplittableRandom random, WatchedTier device, ExpertPager pager, KvBlockManager manager,
               PrefixHasher hasher) {
            this.mode = mode;
            this.random = random;
            this.device = device;
            this.pager = pager;
            this.manager = manager;
            this.hasher = hasher;
            this.kv = manager.slotPool(4, (int) (BUDGET / PAGE));
            assertThat(kv.bytesPerUnit()).isEqualTo(PAGE);
            assertThat(pager.bytesPerUnit()).isEqualTo(LAYERS * 3 * PAGE);
            this.controller = new SplitController(pager, kv, new Settings(BUDGET, FLOOR, 12, 0.0, 3, 0, mode), new MvWsaSolver());
            this.estimator = new SplitEstimator(LAYERS, EXPERTS, (int) (BUDGET / PAGE), 0.5);
        }

        void run() {
            checkPools("start");
            int k0 = pager.units();
            int kToolA = phase(Phase.TOOL, true, false);
            assertThat(kToolA).as("%s: tool calls move budget to the experts", mode).isGreaterThan(k0);
            long kvToolA = kv.units();
            int kLong = phase(Phase.LONG, false, false);
            assertThat(kLong).as("%s: long contexts move budget to KV", mode).isLessThan(kToolA);
            assertThat((long) kv.units()).isGreaterThan(kvToolA);
            assertThat((long) kv.units()).as("%s: KV holds more than two long conversations", mode)
                    .isGreaterThan(2L * (LONG_TOKENS / BT + 1));
            int kToolB = phase(Phase.TOOL, false, true);
            assertThat(kToolB).as("%s: tool calls again move budget to the experts", mode).isGreaterThan(kLong);
            assertThat(refusedShrinks).as("a KV shrink over a held block was tried and refused").isEqualTo(1);
            assertThat(rolledBackGrows).as("a grow that failed after the shrink was tried and rolled back").isEqualTo(1);
            assertThat(controller.moves()).isGreaterThanOrEqualTo(4);
            assertThat(controller.failures()).isEqualTo(3);
            assertThat(survivorsAcrossResizes).as("some KV blocks stayed resident across resizes").isPositive();
            assertThat(device.checks).as("the wrapper saw every allocation and free").isPositive();
            assertThat(device.maxUsed).isLessThanOrEqualTo(BUDGET);
        }

        /** Runs one phase; returns the expert slots per layer at its end. */
        int phase(Phase phase, boolean refuseAShrink, boolean failAGrow) {
            boolean refused = !refuseAShrink;
            boolean failed = !failAGrow;
            boolean rollbackRefused = false;
            for (int burst = 0; burst < BURSTS_PER_PHASE; burst++) {
                for (int step = 0; step < STEPS_PER_BURST; step++) {
                    step(phase);
                }
                estimator.endBurst();
                SplitController.Decision d = controller.onBurst(estimator.view(COSTS));
                Split next = controller.pending();
                if (!refused && next != null && next.expertCap() > pager.units()) {
                    refused = true;
                    barrierWithAHeldBlock();
                } else if (!failed && next != null && next.expertCap() > pager.units()) {
                    failed = true;
                    barrierWithASquatter();
                } else if (failed && failAGrow && !rollbackRefused && next != null && next.expertCap() > pager.units()) {
                    rollbackRefused = true;
                    barrierWithAStayingSquatter();
                } else {
                    barrier(d);
                }
            }
            assertThat(refused).as("%s %s: no expert grow came to refuse", mode, phase).isTrue();
            assertThat(failed).as("%s %s: no expert grow came to fail", mode, phase).isTrue();
            assertThat(rollbackRefused || !failAGrow).as("%s %s: no second expert grow came to fail", mode, phase).isTrue();
            return pager.units();
        }

        /** One engine step: pages the experts of every layer and runs the phase's sequences, then drains. */
        void step(Phase phase) {
            for (int l = 0; l < LAYERS; l++) {
                int span = phase == Phase.TOOL ? EXPERTS : 4;
                int base = phase == Phase.TOOL ? 0 : 4 * l;
                int a = base + random.nextInt(span);
                int b = base + random.nextInt(span - 1);
                if (b >= a) {
                    b++;
                }
                int[] routed = {a, b, a}; // two tokens' worth, duplicates allowed
                int[] map = pager.page(l, routed);
                assertThat(map[a]).isNotNegative();
                assertThat(map[b]).isNotNegative();
                estimator.expertAccess(l, a);
                estimator.expertAccess(l, b);
            }
            List<KvSequence> running = new ArrayList<>();
            long held = 0;
            int conversations = phase == Phase.TOOL ? TOOL_CONVERSATIONS : LONG_CONVERSATIONS;
            int length = phase == Phase.TOOL ? TOOL_TOKENS : LONG_TOKENS;
            rotation++;
            for (int i = 0; i < conversations; i++) {
                int c = (i + rotation) % conversations;
                int[] tokens = tokens((phase == Phase.TOOL ? 2000 : 1000) + c, length);
                KvSequence s = manager.newSequence();
                PrefixMatch match = manager.match(tokens, tokens.length);
                LoadOutcome loaded = manager.load(match, s).join();
                if (!loaded.complete() || manager.allocateTo(s, tokens.length) != AllocationStatus.ALLOCATED) {
                    manager.release(s); // not admitted this step: the KV pool is too small for it now
                    continue;
                }
                ObjectKey[] keys = hasher.chain(tokens, tokens.length);
                for (int b = s.committedBlocks(); b < keys.length; b++) {
                    write(s.slot(b), keys[b]);
                }
                manager.commit(s, tokens, tokens.length);
                for (int b = 0; b < keys.length; b++) {
                    assertThat(mismatch(s.slot(b), keys[b])).as("block %d of conversation %d", b, c).isEqualTo(-1L);
                    estimator.kvAccess(keys[b].hash64());
                    written.add(keys[b]);
                }
                running.add(s);
                held += s.blockCount();
            }
            assertThat(running).as("%s %s: at least one sequence is admitted", mode, phase).isNotEmpty();
            estimator.kvOccupancy(held);
            for (KvSequence s : running) {
                manager.release(s);
            }
            assertThat(manager.awaitIdle(10, TimeUnit.SECONDS)).isTrue();
        }

        /** A drained barrier: applies the pending move and checks both pools. */
        void barrier(SplitController.Decision d) {
            Snapshot before = new Snapshot();
            ResizeOutcome o = controller.atDrainedBarrier();
            assertThat(o.status()).as("%s: %s -> %s", mode, d, o).isIn(ResizeStatus.APPLIED, ResizeStatus.NOTHING_PENDING);
            checkPools("barrier " + o);
            if (o.status() == ResizeStatus.APPLIED) {
                assertThat(o.expertCap()).isEqualTo(d.next().expertCap());
                assertThat(o.kvBlocks()).isEqualTo(d.next().kvBlocks());
                for (ObjectKey key : before.resident.keySet()) {
                    if (manager.deviceBlock(key) != null) {
                        survivorsAcrossResizes++;
                    }
                }
            }
        }

        /** A barrier while a sequence holds every KV slot: the KV shrink must be refused, nothing changes. */
        void barrierWithAHeldBlock() {
            KvSequence hog = manager.newSequence();
            int[] tokens = tokens(9000 + rotation, kv.units() * BT);
            assertThat(manager.allocate(hog, tokens.length)).isEqualTo(AllocationStatus.ALLOCATED);
            assertThat(manager.freeSlots()).isZero();
            Snapshot before = new Snapshot();
            ResizeOutcome o = controller.atDrainedBarrier();
            assertThat(o.status()).as("%s: %s", mode, o).isEqualTo(ResizeStatus.FAILED_KEPT_PREVIOUS);
            assertThat(o.detail()).contains("'kv' refused");
            before.assertUnchanged("refused KV shrink", true);
            refusedShrinks++;
            manager.release(hog);
            assertThat(manager.awaitIdle(10, TimeUnit.SECONDS)).isTrue();
            checkPools("after a refused shrink");
        }

        /**
         * A barrier where, between the KV shrink and the expert grow, another user takes one page of
         * the freed bytes: the grow fails, gives its slots back (the squatter leaves with them), the
         * controller undoes the shrink, and both pools are as before.
         */
        void barrierWithASquatter() {
            Snapshot before = new Snapshot();
            device.squatOnNextAllocate(PAGE);
            ResizeOutcome o = controller.atDrainedBarrier();
            assertThat(device.squatted).as("the squatter took its page").isTrue();
            assertThat(o.status()).as("%s: %s", mode, o).isEqualTo(ResizeStatus.FAILED_KEPT_PREVIOUS);
            assertThat(o.detail()).contains("'experts' refused");
            // the KV shrink succeeded and was undone by a grow: its size is back, and the cached blocks it
            // kept (possibly moved to lower slots) keep their bytes, which checkPools verifies
            before.assertUnchanged("rolled-back grow", false);
            rolledBackGrows++;
            checkPools("after a rolled-back grow");
            step(Phase.TOOL); // both pools still serve
            checkPools("a step after a rolled-back grow");
        }

        /**
         * A barrier where the squatter stays: the expert grow fails and so does the KV grow that
         * would undo the shrink. The controller reports it, the shrunk split is in force, both pools
         * are within the budget and serve; once the squatter leaves, a later barrier moves again.
         */
        void barrierWithAStayingSquatter() {
            int k = pager.units();
            int kvUnits = kv.units();
            int[][] maps = new int[LAYERS][];
            for (int l = 0; l < LAYERS; l++) {
                maps[l] = pager.expertMap(l).clone();
            }
            int kvTo = (int) controller.pending().kvBlocks();
            device.squatOnNextAllocate(PAGE);
            device.squatterStays = true;
            ResizeOutcome o = controller.atDrainedBarrier();
            assertThat(device.squatted).isTrue();
            assertThat(o.status()).as("%s: %s", mode, o).isEqualTo(ResizeStatus.FAILED_ROLLBACK_REFUSED);
            assertThat(o.detail()).contains("'experts' refused").contains("undoing 'kv'");
            assertThat(pager.units()).isEqualTo(k);
            for (int l = 0; l < LAYERS; l++) {
                assertThat(pager.expertMap(l)).as("layer %d map after a refused grow", l).containsExactly(maps[l]);
            }
            assertThat(kv.units()).as("the completed shrink is in force").isEqualTo(kvTo).isLessThan(kvUnits);
            assertThat(o.expertCap()).isEqualTo(k);
            assertThat(o.kvBlocks()).isEqualTo(kvTo);
            assertThat((long) pager.units() * pager.bytesPerUnit() + (long) kv.units() * kv.bytesPerUnit() + PAGE)
                    .isEqualTo(device.used()).isLessThanOrEqualTo(BUDGET);
            device.squatterStays = false;
            device.releaseSquatter();
            checkPools("after a refused rollback");
            step(Phase.TOOL);
            checkPools("a step after a refused rollback");
        }

        /** The budget, the tier and both pools' own invariants and bytes. */
        void checkPools(String when) {
            long expertBytes = (long) pager.units() * pager.bytesPerUnit();
            long kvBytes = (long) kv.units() * kv.bytesPerUnit();
            assertThat(pager.slots()).isEqualTo(pager.units() * LAYERS);
            assertThat(device.used()).as("%s %s: the tier holds the expert and KV slots, nothing else", mode, when)
                    .isEqualTo(expertBytes + kvBytes);
            assertThat(device.used()).isLessThanOrEqualTo(device.capacity()).isLessThanOrEqualTo(BUDGET);
            assertThat(expertBytes + kvBytes).isLessThanOrEqualTo(BUDGET);
            pager.checkInvariants();
            int resident = 0;
            for (int l = 0; l < LAYERS; l++) {
                resident += pager.resident(l);
            }
            assertThat(pager.verifyResidentBytes()).as("%s %s: expert slots equal their masters", mode, when).isEqualTo(resident);
            manager.checkInvariants();
            assertThat(manager.slotCount()).isEqualTo(kv.units());
            for (ObjectKey key : written) {
                DeviceBlock b = manager.deviceBlock(key);
                if (b != null && !b.loading()) {
                    assertThat(mismatch(b.slot(), key)).as("%s %s: block %s in slot %d", mode, when, key, b.slot())
                            .isEqualTo(-1L);
                }
            }
        }

        /** What both pools hold at one moment. */
        final class Snapshot {
            final int k = pager.units();
            final int kvUnits = kv.units();
            final long used = device.used();
            final long allocations = device.allocations();
            final int[][] maps = new int[LAYERS][];
            final Map<ObjectKey, Integer> resident = new HashMap<>();

            Snapshot() {
                for (int l = 0; l < LAYERS; l++) {
                    maps[l] = pager.expertMap(l).clone();
                }
                for (ObjectKey key : written) {
                    DeviceBlock b = manager.deviceBlock(key);
                    if (b != null) {
                        resident.put(key, b.slot());
                    }
                }
            }

            void assertUnchanged(String what, boolean kvContents) {
                assertThat(pager.units()).as(what).isEqualTo(k);
                assertThat(kv.units()).as(what).isEqualTo(kvUnits);
                assertThat(device.used()).as(what).isEqualTo(used);
                assertThat(device.allocations()).as(what).isEqualTo(allocations);
                for (int l = 0; l < LAYERS; l++) {
                    assertThat(pager.expertMap(l)).as("%s: layer %d map", what, l).containsExactly(maps[l]);
                }
                for (Map.Entry<ObjectKey, Integer> e : kvContents ? resident.entrySet() : Map.<ObjectKey, Integer>of().entrySet()) {
                    DeviceBlock b = manager.deviceBlock(e.getKey());
                    assertThat(b).as("%s: block %s still resident", what, e.getKey()).isNotNull();
                    assertThat(b.slot()).as(what).isEqualTo(e.getValue());
                    assertThat(mismatch(b.slot(), e.getKey())).as(what).isEqualTo(-1L);
                }
            }
        }

        /** The engine writes a block: bytes derived from its key (never zero). */
        void write(int slot, ObjectKey key) {
            List<MemorySegment> segs = new ArrayList<>();
            manager.layout().segments(slot, TokenSelection.all(BT), segs);
            long p = 0;
            for (MemorySegment s : segs) {
                for (long j = 0; j < s.byteSize(); j++, p++) {
                    s.set(ValueLayout.JAVA_BYTE, j, patternByte(key, p));
                }
            }
        }

        long mismatch(int slot, ObjectKey key) {
            List<MemorySegment> segs = new ArrayList<>();
            manager.layout().segments(slot, TokenSelection.all(BT), segs);
            long p = 0;
            for (MemorySegment s : segs) {
                for (long j = 0; j < s.byteSize(); j++, p++) {
                    if (s.get(ValueLayout.JAVA_BYTE, j) != patternByte(key, p)) {
                        return p;
                    }
                }
            }
            return p == GEOMETRY.bytesPerBlock() ? -1 : p;
        }
    }

    static byte patternByte(ObjectKey key, long position) {
        long h = key.hash64() + position * 0x9E3779B97F4A7C15L;
        h ^= h >>> 31;
        h *= 0x94D049BB133111EBL;
        return (byte) ((h >>> 56) | 1);
    }

    static int[] tokens(long seed, int length) {
        int[] t = new int[length];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < length; i++) {
            t[i] = r.nextInt(50_000);
        }
        return t;
    }

    /** Seeded random master images, distinct per expert, never all zero. */
    static void fill(ExpertMasters masters, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int size = (int) masters.layout().bytes();
        byte[] bytes = new byte[size];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment image = arena.allocate(size, 4096);
            for (int l = 0; l < masters.layers(); l++) {
                for (int e = 0; e < masters.experts(); e++) {
                    random.nextBytes(bytes);
                    bytes[0] = (byte) (l * 31 + e | 1);
                    MemorySegment.copy(bytes, 0, image, ValueLayout.JAVA_BYTE, 0, size);
                    masters.write(l, e, image);
                }
            }
        }
    }

    /**
     * The DEVICE tier as both pools see it: every allocation and free is checked against the budget
     * (used bytes never above it, nor above the tier's capacity, and exactly the pools' slots plus
     * the squatter's bytes, also in the middle of a resize). When armed, the next allocation
     * first lets another user take {@code squatBytes} (as if something else grabbed freed bytes
     * between a shrink and a grow); that user leaves at the next free.
     */
    static final class WatchedTier implements Tier {
        final DeviceTier tier;
        final long budget;
        final Set<Long> live = new java.util.HashSet<>(); // handles the pools hold
        long liveBytes; // bytes of those handles
        long squatBytes;
        long squat = Allocator.FULL;
        boolean squatted;
        boolean squatterStays; // the squatter keeps its bytes until released explicitly
        long maxUsed;
        long checks;

        WatchedTier(DeviceTier tier, long budget) {
            this.tier = tier;
            this.budget = budget;
        }

        void squatOnNextAllocate(long bytes) {
            squatBytes = bytes;
            squatted = false;
        }

        void releaseSquatter() {
            if (squat != Allocator.FULL) {
                tier.free(squat);
                squat = Allocator.FULL;
            }
        }

        long allocations() {
            return live.size();
        }

        private void check(String after) {
            long used = tier.used();
            checks++;
            maxUsed = Math.max(maxUsed, used);
            if (used > budget || used > tier.capacity()) {
                throw new AssertionError("tier '" + tier.name() + "' holds " + used + " bytes after " + after
                        + ", over the budget of " + budget);
            }
            long squatHeld = squat == Allocator.FULL ? 0 : tier.allocationSize(squat);
            if (used != liveBytes + squatHeld) {
                throw new AssertionError("tier '" + tier.name() + "' holds " + used + " bytes after " + after + ", but the pools'"
                        + " slots take " + liveBytes + " and the squatter " + squatHeld);
            }
        }

        @Override
        public long allocate(long size) {
            if (squatBytes > 0) {
                squat = tier.allocate(squatBytes);
                assertThat(squat).isNotEqualTo(Allocator.FULL);
                squatBytes = 0;
                squatted = true;
                check("the squatter's allocation");
            }
            long h = tier.allocate(size);
            if (h != Allocator.FULL) {
                live.add(h);
                liveBytes += tier.allocationSize(h);
            }
            check("allocate(" + size + ")");
            return h;
        }

        @Override
        public void free(long handle) {
            if (!live.remove(handle)) {
                throw new AssertionError("handle " + handle + " freed but not held by a pool");
            }
            liveBytes -= tier.allocationSize(handle);
            tier.free(handle);
            if (!squatterStays) {
                releaseSquatter();
            }
            check("free(" + handle + ")");
        }

        @Override public String name() { return tier.name(); }
        @Override public TierKind kind() { return tier.kind(); }
        @Override public long capacity() { return tier.capacity(); }
        @Override public long used() { return tier.used(); }
        @Override public boolean sharedAcrossProcesses() { return tier.sharedAcrossProcesses(); }
        @Override public boolean revocable() { return tier.revocable(); }
        @Override public boolean isAddressable() { return tier.isAddressable(); }
        @Override public boolean isPlainMemory() { return tier.isPlainMemory(); }
        @Override public long allocationSize(long handle) { return tier.allocationSize(handle); }
        @Override public void write(long handle, MemorySegment src) { tier.write(handle, src); }
        @Override public void gatherWrite(long handle, List<MemorySegment> parts) { tier.gatherWrite(handle, parts); }
        @Override public boolean read(long handle, MemorySegment dst) { return tier.read(handle, dst); }
        @Override public boolean scatterRead(long handle, List<MemorySegment> parts) { return tier.scatterRead(handle, parts); }
        @Override public MemorySegment segment(long handle, long offset, long length) { return tier.segment(handle, offset, length); }
        @Override public TierStats stats() { return tier.stats(); }
        @Override public void close() { }
    }
}
