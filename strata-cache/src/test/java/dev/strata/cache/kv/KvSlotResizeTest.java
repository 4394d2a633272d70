package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Allocator;
import dev.strata.memory.device.DeviceTier;
import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Live resize of the DEVICE slots ({@link KvSlotPool} over a {@link TierSlotKvLayout}): the slots
 * are allocations in a DEVICE tier that the expert side allocates from too; a grow takes budget or
 * fails leaving everything as it was, a shrink is refused while a removed slot is in use, otherwise
 * moves or evicts cached blocks and gives the bytes back before it returns; surviving blocks keep
 * their bytes; the tier's used bytes never exceed its capacity.
 */
class KvSlotResizeTest {
    private static final int BT = KvRig.GEOMETRY.blockTokens();
    private static final long SLOT = CpuAlignment.SLOT; // one slot's allocation in the CPU device tier

    /** The CPU device backend aligns every allocation to a page. */
    private static final class CpuAlignment {
        static final long SLOT = dev.strata.memory.device.CpuDeviceBackend.ALIGNMENT;
    }

    @Test
    void growAndShrinkMoveTheBudgetAndKeepEveryBlocksBytes() throws Exception {
        try (DeviceTier device = DeviceTier.cpu("kv-resize-device", 12 * SLOT);
             KvRig rig = new KvRig(KvRig.Spec.of(8, 16, 0, 0).deviceTier(device)
                     .config(KvManagerConfig.defaults().offload(OffloadMode.WRITE_BACK)))) {
            KvBlockManager m = rig.manager;
            KvSlotPool pool = m.slotPool(2, 12);
            assertThat(pool.name()).isEqualTo("kv");
            assertThat(pool.bytesPerUnit()).isEqualTo(SLOT);
            assertThat(pool.units()).isEqualTo(8);
            assertThat(device.used()).isEqualTo(8 * SLOT);
            List<ObjectKey[]> chains = new ArrayList<>();
            for (int c = 0; c < 2; c++) {
                chains.add(turn(rig, 100 + c, 3));
            }
            assertThat(pool.resize(12)).isTrue();
            assertThat(device.used()).isEqualTo(12 * SLOT);
            rig.idle();
            chains.add(turn(rig, 102, 4));
            assertBytes(rig, chains);
            assertThat(m.freeSlots()).isEqualTo(2);

            // shrink below the cached blocks: two leave by the policy (to HOST), the rest move down
            assertThat(pool.resize(8)).isTrue();
            assertThat(device.used()).as("the removed slots' bytes are back in the tier").isEqualTo(8 * SLOT);
            rig.idle();
            assertThat(m.stats().slots()).isEqualTo(8);
            assertThat(m.freeSlots()).isZero();
            assertThat(m.stats().slotMoves()).isPositive();
            assertBytes(rig, chains);
            assertThat(m.offloadedKeys()).as("evicted by write-back, not lost").hasSize(2);

            // every block comes back byte-exact: from DEVICE or from HOST
            assertThat(pool.resize(12)).isTrue();
            for (int c = 0; c < chains.size(); c++) {
                ObjectKey[] keys = chains.get(c);
                int[] tokens = KvRig.tokens(100 + c, keys.length * BT + 1);
                KvSequence s = m.newSequence();
                PrefixMatch match = m.match(tokens, tokens.length);
                assertThat(match.blocks()).isEqualTo(keys.length);
                assertThat(m.load(match, s).join().complete()).isTrue();
                rig.assertCommittedBytes(s);
                m.release(s);
            }
            rig.idle();
        }
    }

    @Test
    void aShrinkOverABlockInUseIsRefusedAndChangesNothing() throws Exception {
        try (DeviceTier device = DeviceTier.cpu("kv-resize-refuse", 10 * SLOT);
             KvRig rig = new KvRig(KvRig.Spec.of(10, 0, 0, 0).deviceTier(device))) {
            KvBlockManager m = rig.manager;
            KvSlotPool pool = m.slotPool(1, 10);
            ObjectKey[] cached = turn(rig, 7, 3);
            int[] tokens = KvRig.tokens(8, 6 * BT + 2);
            KvSequence running = m.newSequence();
            assertThat(rig.extend(running, tokens, tokens.length)).isEqualTo(AllocationStatus.ALLOCATED);
            int highest = 0;
            for (int i = 0; i < running.blockCount(); i++) {
                highest = Math.max(highest, running.slot(i));
            }
            assertThat(pool.resize(highest)).as("slot %d is in use", highest).isFalse();
            assertThat(pool.units()).isEqualTo(10);
            assertThat(device.used()).isEqualTo(10 * SLOT);
            for (ObjectKey k : cached) {
                assertThat(m.isOnDevice(k)).as("a refused shrink evicts nothing").isTrue();
            }
            rig.assertCommittedBytes(running);
            assertBytes(rig, List.<ObjectKey[]>of(cached));
            rig.idle();
            m.release(running);
            assertThat(pool.resize(highest)).isTrue();
            assertThat(device.used()).isEqualTo(highest * SLOT);
            assertThatThrownBy(() -> pool.resize(11)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("11");
            rig.idle();
        }
    }

    @Test
    void aGrowTheTierCannotHoldFailsAndLeavesEverythingAsItWas() throws Exception {
        try (DeviceTier device = DeviceTier.cpu("kv-resize-small", 9 * SLOT);
             KvRig rig = new KvRig(KvRig.Spec.of(4, 0, 0, 0).deviceTier(device))) {
            KvBlockManager m = rig.manager;
            KvSlotPool pool = m.slotPool(1, 16);
            ObjectKey[] cached = turn(rig, 3, 3);
            long expert = device.allocate(3 * SLOT); // the expert side holds part of the budget
            assertThat(expert).isNotEqualTo(Allocator.FULL);
            assertThat(pool.resize(8)).as("only 2 more slots fit, 4 asked").isFalse();
            assertThat(pool.units()).isEqualTo(4);
            assertThat(device.used()).as("what the failed grow took is freed").isEqualTo(7 * SLOT);
            assertBytes(rig, List.<ObjectKey[]>of(cached));
            rig.idle();
            assertThat(pool.resize(6)).isTrue();
            assertThat(device.used()).isEqualTo(9 * SLOT);
            device.free(expert);
            assertThat(pool.resize(9)).isTrue();
            assertThat(device.used()).isEqualTo(9 * SLOT);
            assertBytes(rig, List.<ObjectKey[]>of(cached));
            rig.idle();
            assertThatThrownBy(() -> TierSlotKvLayout.allocate(device, KvRig.GEOMETRY, 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("kv-resize-small");
        }
    }

    @Test
    void randomResizesAgainstExpertAllocationsNeverOverrunTheTier() {
        Property.forAll("kv-slot-resize", 16, random -> {
            int capacitySlots = 10 + random.nextInt(6);
            PolicyKind kind = PolicyKind.values()[random.nextInt(PolicyKind.values().length)];
            OffloadMode mode = OffloadMode.values()[random.nextInt(OffloadMode.values().length)];
            try (DeviceTier device = DeviceTier.cpu("kv-resize-prop", capacitySlots * SLOT);
                 KvRig rig = new KvRig(KvRig.Spec.of(4 + random.nextInt(4), 6, 0, 0).deviceTier(device)
                         .config(KvManagerConfig.defaults().devicePolicy(kind).offload(mode)))) {
                run(rig, device, random, 80);
            }
        });
    }

    private static void run(KvRig rig, DeviceTier device, SplittableRandom random, int steps) {
        KvBlockManager m = rig.manager;
        KvSlotPool pool = m.slotPool(1, 64);
        List<ObjectKey[]> chains = new ArrayList<>();
        List<KvSequence> running = new ArrayList<>();
        List<Long> experts = new ArrayList<>();
        for (int step = 0; step < steps; step++) {
            int op = random.nextInt(10);
            if (op < 3) {
                long seed = random.nextInt(6);
                int[] tokens = KvRig.tokens(seed, (1 + random.nextInt(4)) * BT + random.nextInt(BT));
                KvSequence s = m.newSequence();
                PrefixMatch match = m.match(tokens, tokens.length);
                LoadOutcome o = m.load(match, s).join();
                if (o.complete() && rig.extend(s, tokens, tokens.length) == AllocationStatus.ALLOCATED) {
                    chains.add(rig.hasher.chain(tokens, tokens.length));
                    running.add(s);
                } else {
                    m.release(s);
                }
            } else if (op < 5 && !running.isEmpty()) {
                m.release(running.remove(random.nextInt(running.size())));
            } else if (op < 6) {
                long h = device.allocate(SLOT * (1 + random.nextInt(2))); // the expert pager
                if (h != Allocator.FULL) {
                    experts.add(h);
                }
            } else if (op < 7 && !experts.isEmpty()) {
                device.free(experts.remove(random.nextInt(experts.size())));
            } else {
                int before = pool.units();
                int target = 1 + random.nextInt(14);
                boolean inUse = false;
                for (KvSequence s : running) {
                    for (int i = 0; i < s.blockCount(); i++) {
                        inUse |= s.slot(i) >= target;
                    }
                }
                long usedBefore = device.used();
                boolean fits = (long) (target - before) * SLOT <= device.available();
                boolean ok = pool.resize(target);
                if (target > before) {
                    assertThat(ok).as("step %d: grow %d -> %d with %d bytes free", step, before, target,
                            device.available()).isEqualTo(fits);
                } else if (target < before) {
                    assertThat(ok).as("step %d: shrink %d -> %d, in use %s", step, before, target, inUse).isEqualTo(!inUse);
                }
                assertThat(pool.units()).isEqualTo(ok ? target : before);
                if (!ok) {
                    assertThat(device.used()).as("a failed resize leaves the tier as it was").isEqualTo(usedBefore);
                }
            }
            rig.idle();
            assertThat(device.used()).as("step %d: device used", step).isLessThanOrEqualTo(device.capacity());
            long expertBytes = 0;
            for (long h : experts) {
                expertBytes += device.allocationSize(h);
            }
            assertThat(device.used()).as("step %d: the tier holds the slots and the experts, nothing else", step)
                    .isEqualTo(pool.units() * SLOT + expertBytes);
            for (KvSequence s : running) {
                rig.assertCommittedBytes(s);
            }
            assertBytes(rig, chains);
        }
        for (KvSequence s : running) {
            m.release(s);
        }
        for (long h : experts) {
            device.free(h);
        }
    }

    /** Conversation {@code seed} to {@code blocks} full blocks (plus a partial one), committed and released. */
    private static ObjectKey[] turn(KvRig rig, long seed, int blocks) {
        KvBlockManager m = rig.manager;
        int[] tokens = KvRig.tokens(seed, blocks * BT + 1);
        KvSequence s = m.newSequence();
        assertThat(m.load(m.match(tokens, tokens.length), s).join().complete()).isTrue();
        assertThat(rig.extend(s, tokens, tokens.length)).isEqualTo(AllocationStatus.ALLOCATED);
        m.release(s);
        rig.idle();
        return rig.hasher.chain(tokens, tokens.length);
    }

    /** Every block of the chains that is in a DEVICE slot (and not loading) holds its key's bytes. */
    private static void assertBytes(KvRig rig, List<ObjectKey[]> chains) {
        for (ObjectKey[] keys : chains) {
            for (ObjectKey k : keys) {
                DeviceBlock b = rig.manager.deviceBlock(k);
                if (b != null && !b.loading()) {
                    assertThat(rig.mismatch(b.slot(), k)).as("block %s in slot %d: first wrong byte", k, b.slot())
                            .isEqualTo(-1L);
                }
            }
        }
    }
}
