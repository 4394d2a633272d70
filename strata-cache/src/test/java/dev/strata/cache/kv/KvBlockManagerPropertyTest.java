package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random operation sequences against a manager with small capacities in every tier (DEVICE slots,
 * HOST, POOL, DISK, and a shared pool in half the runs): after every step the manager's invariants
 * hold and every committed block that is not loading holds exactly its key's bytes; at quiescent
 * points the store holds exactly the blocks the manager believes it offloaded; at the end nothing
 * leaked.
 */
class KvBlockManagerPropertyTest {
    private static final int BT = KvRig.GEOMETRY.blockTokens();

    /** A sequence as the test's engine sees it. */
    private static final class Run {
        final KvSequence seq;
        final int[] tokens; // the whole conversation it will reach

        Run(KvSequence seq, int[] tokens) {
            this.seq = seq;
            this.tokens = tokens;
        }
    }

    @Test
    void randomOperationsKeepEveryInvariantAndEveryByte() {
        Property.forAll("kv-manager-ops", 24, random -> runWith(random,
                PolicyKind.values()[random.nextInt(PolicyKind.values().length)]));
    }

    @Test
    void randomOperationsUnderThePrefixAwareSlotPolicy() {
        Property.forAll("kv-manager-ops-prefix", 12, random -> runWith(random, PolicyKind.PREFIX_AWARE));
    }

    private static void runWith(SplittableRandom random, PolicyKind kind) throws Exception {
        {
            boolean withShared = random.nextBoolean();
            OffloadMode mode = OffloadMode.values()[random.nextInt(2)];
            KvManagerConfig config = KvManagerConfig.defaults().offload(mode)
                    .devicePolicy(kind)
                    .sharedPublish(random.nextBoolean() ? SharedPublishMode.AT_COMMIT : SharedPublishMode.ON_EVICTION)
                    .lookahead(random.nextInt(3), 1 + random.nextInt(3)).maxPendingEvictions(1 + random.nextInt(4));
            KvRig.Spec spec = KvRig.Spec.of(5 + random.nextInt(4), 1 + random.nextInt(3), 3, 3 + random.nextInt(5)).config(config);
            if (random.nextBoolean()) {
                spec = spec.admission(new SeenTwiceAdmission(256));
            }
            if (withShared) {
                spec = spec.shared(new InMemorySharedBlockStore(4 + random.nextInt(8)));
            }
            try (KvRig rig = new KvRig(spec)) {
                run(rig, random, 150);
            }
        }
    }

    private static void run(KvRig rig, SplittableRandom random, int steps) {
        KvBlockManager m = rig.manager;
        int[][] prompts = new int[3][];
        for (int p = 0; p < prompts.length; p++) {
            prompts[p] = KvRig.tokens(random.nextLong(), 12 * BT + 3);
        }
        List<Run> running = new ArrayList<>();
        List<Run> preempted = new ArrayList<>();
        for (int step = 0; step < steps; step++) {
            int op = random.nextInt(100);
            if (running.size() >= 3 && op < 15) {
                op = 62; // keep the running set small: release instead
            }
            if (op < 15 || running.isEmpty() && preempted.isEmpty()) {
                int[] base = prompts[random.nextInt(prompts.length)];
                int[] tokens = base.clone();
                if (random.nextBoolean()) {
                    int from = random.nextInt(tokens.length);
                    for (int i = from; i < tokens.length; i++) {
                        tokens[i] = random.nextInt(50_000); // diverges from the shared prompt here
                    }
                }
                KvSequence s = m.newSequence();
                PrefixMatch match = m.match(tokens, random.nextInt(tokens.length + 1));
                if (random.nextInt(4) == 0) {
                    m.loadProgressively(match, s);
                    for (int i = 0; i < match.blocks(); i++) {
                        if (random.nextBoolean()) {
                            m.require(s, i);
                        }
                    }
                } else {
                    m.load(match, s);
                }
                running.add(new Run(s, tokens));
            } else if (op < 58 && !running.isEmpty()) {
                Run r = running.get(random.nextInt(running.size()));
                int target = Math.min(r.tokens.length, r.seq.tokens() + 1 + random.nextInt(3 * BT));
                extend(rig, r, target);
            } else if (op < 72 && !running.isEmpty()) {
                Run r = running.remove(random.nextInt(running.size()));
                PriorityClass c = PriorityClass.values()[1 + random.nextInt(3)];
                m.release(r.seq, c);
            } else if (op < 81 && !running.isEmpty()) {
                Run r = running.remove(random.nextInt(running.size()));
                m.preempt(r.seq);
                preempted.add(r);
            } else if (op < 89 && !preempted.isEmpty()) {
                Run r = preempted.remove(random.nextInt(preempted.size()));
                m.resume(r.seq);
                running.add(r);
            } else if (op < 92 && !preempted.isEmpty()) {
                Run r = preempted.remove(random.nextInt(preempted.size()));
                m.release(r.seq);
            } else if (op < 97) {
                assertThat(m.awaitIdle(30, TimeUnit.SECONDS)).isTrue();
                m.checkInvariants();
                assertThat(rig.store.size()).as("store objects vs blocks the manager offloaded")
                        .isEqualTo(m.offloadedKeys().size());
                for (ObjectKey k : m.offloadedKeys()) {
                    assertThat(rig.store.contains(k)).isTrue();
                }
                for (Run r : running) {
                    for (int i = 0; i < r.seq.committedBlocks(); i++) {
                        assertThat(m.deviceBlock(r.seq.key(i)) == null || !m.deviceBlock(r.seq.key(i)).loading())
                                .as("no load is left running when idle").isTrue();
                    }
                }
            } else {
                m.poll();
            }
            m.checkInvariants();
            for (Run r : running) {
                checkBytes(rig, r);
            }
        }
        for (Run r : running) {
            m.release(r.seq);
        }
        for (Run r : preempted) {
            m.release(r.seq);
        }
        assertThat(m.awaitIdle(30, TimeUnit.SECONDS)).isTrue();
        m.checkInvariants();
        assertThat(m.stats().openSequences()).isZero();
    }

    /** Engine step: slots up to {@code target} tokens, fill the new full blocks, commit them. */
    private static void extend(KvRig rig, Run r, int target) {
        KvBlockManager m = rig.manager;
        if (r.seq.loadingProgressively()) {
            for (int i = 0; r.seq.loadingProgressively() && i <= r.seq.blockCount(); i++) {
                m.require(r.seq, i); // the engine walks its context, which starts the remaining loads
            }
            return;
        }
        if (r.seq.blockCount() > r.seq.committedBlocks() && r.seq.tokens() < r.seq.committedBlocks() * BT) {
            return;
        }
        for (int i = 0; i < r.seq.committedBlocks(); i++) {
            DeviceBlock b = m.deviceBlock(r.seq.key(i));
            if (b == null || b.slot() != r.seq.slot(i) || b.loading()) {
                return; // wait until the loaded prefix has landed before computing on top of it
            }
        }
        if (target <= r.seq.tokens()) {
            return;
        }
        if (m.allocateTo(r.seq, target) != AllocationStatus.ALLOCATED) {
            return;
        }
        ObjectKey[] keys = rig.hasher.chain(r.tokens, target);
        for (int i = r.seq.committedBlocks(); i < keys.length; i++) {
            rig.fill(r.seq, i, keys[i]);
        }
        int before = r.seq.committedBlocks();
        assertThat(m.commit(r.seq, r.tokens, target)).isEqualTo(keys.length - before);
        for (int i = 0; i < keys.length; i++) {
            assertThat(r.seq.key(i)).isEqualTo(keys[i]);
        }
    }

    private static void checkBytes(KvRig rig, Run r) {
        KvSequence s = r.seq;
        ObjectKey[] keys = rig.hasher.chain(r.tokens, Math.min(r.tokens.length, s.committedBlocks() * BT));
        for (int i = 0; i < s.committedBlocks(); i++) {
            assertThat(s.key(i)).as("block %d of %s is keyed by its tokens", i, s).isEqualTo(keys[i]);
            DeviceBlock b = rig.manager.deviceBlock(s.key(i));
            if (b != null && b.slot() == s.slot(i) && b.loading()) {
                continue;
            }
            assertThat(rig.mismatch(s.slot(i), s.key(i))).as("block %d of %s (slot %d) first wrong byte", i, s, s.slot(i))
                    .isEqualTo(-1L);
        }
    }
}
