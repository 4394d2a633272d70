package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The DEVICE slots under {@link PolicyKind#PREFIX_AWARE}: {@link DeviceBlock} exposes the prefix
 * tree, so the policy evicts only leaves of the resident tree and never strands a resident child
 * (a block whose parent left the slots can never be used again).
 */
class KvPrefixEvictionTest {
    private static final int BT = KvRig.GEOMETRY.blockTokens();

    @Test
    void deviceBlocksNameTheirResidentParentAndCountTheirChildren() throws Exception {
        KvManagerConfig config = KvManagerConfig.defaults().devicePolicy(PolicyKind.PREFIX_AWARE);
        try (KvRig rig = new KvRig(KvRig.Spec.of(7, 0, 0, 0).config(config))) {
            KvBlockManager m = rig.manager;
            int[] trunk = KvRig.tokens(7, 3 * BT);
            int[] a = concat(trunk, KvRig.tokens(8, 2 * BT));
            int[] b = concat(trunk, KvRig.tokens(9, 2 * BT));
            KvSequence sa = m.newSequence();
            assertThat(rig.extend(sa, a, a.length)).isEqualTo(AllocationStatus.ALLOCATED);
            KvSequence sb = m.newSequence();
            PrefixMatch match = m.match(b, b.length);
            assertThat(match.blocks()).isEqualTo(3);
            m.load(match, sb).join();
            assertThat(rig.extend(sb, b, b.length)).isEqualTo(AllocationStatus.ALLOCATED);
            rig.idle();
            ObjectKey[] ka = rig.hasher.chain(a, a.length);
            ObjectKey[] kb = rig.hasher.chain(b, b.length);
            DeviceBlock fork = m.deviceBlock(ka[2]);
            assertThat(fork.residentPrefixChildren()).as("two branches follow the trunk").isEqualTo(2);
            assertThat(m.deviceBlock(ka[3]).prefixParent()).isSameAs(fork);
            assertThat(m.deviceBlock(kb[3]).prefixParent()).isSameAs(fork);
            assertThat(m.deviceBlock(ka[0]).prefixParent()).as("block 0 has no parent").isNull();
            assertThat(fork.prefixReach()).as("committed once, shared once").isEqualTo(2);
            assertThat(m.deviceBlock(ka[4]).prefixReach()).isEqualTo(1);
            m.release(sa);
            m.release(sb);
            // two slots of pressure: only the two branch tips may go, never a trunk block
            KvSequence sc = m.newSequence();
            int[] c = KvRig.tokens(10, 2 * BT);
            assertThat(rig.extend(sc, c, c.length)).isEqualTo(AllocationStatus.ALLOCATED);
            rig.idle();
            for (int i = 0; i < 3; i++) {
                assertThat(m.isOnDevice(ka[i])).as("trunk block %d", i).isTrue();
            }
            assertThat(m.isOnDevice(ka[4])).as("the oldest leaf, tip of branch a, went first").isFalse();
            int branchBlocks = 0;
            for (ObjectKey[] k : new ObjectKey[][] {ka, kb}) {
                branchBlocks += (m.isOnDevice(k[3]) ? 1 : 0) + (m.isOnDevice(k[4]) ? 1 : 0);
                assertThat(!m.isOnDevice(k[3]) && m.isOnDevice(k[4])).as("a tip stranded").isFalse();
            }
            assertThat(branchBlocks).as("two branch blocks made room").isEqualTo(2);
            m.release(sc);
        }
    }

    @Test
    void prefixAwareSlotsNeverStrandAResidentChild() {
        Property.forAll("kv-prefix-eviction", 12, random -> {
            KvManagerConfig config = KvManagerConfig.defaults().devicePolicy(PolicyKind.PREFIX_AWARE);
            try (KvRig rig = new KvRig(KvRig.Spec.of(6 + random.nextInt(6), 0, 0, 0).config(config))) {
                assertThat(strandsUnder(rig, random, 120, true)).isZero();
            }
        });
    }

    @Test
    void prefixAwareSlotsNeverStrandAResidentChildUnderWriteThrough() {
        // write-through: a block becomes evictable when its copy lands, in commit order, so the parent
        // is the older of the two by recency; only the prefix tree keeps it from going first
        Property.forAll("kv-prefix-eviction-wt", 12, random -> {
            KvManagerConfig config = KvManagerConfig.defaults().devicePolicy(PolicyKind.PREFIX_AWARE)
                    .offload(OffloadMode.WRITE_THROUGH);
            try (KvRig rig = new KvRig(KvRig.Spec.of(6 + random.nextInt(6), 64, 0, 0).config(config))) {
                assertThat(strandsUnder(rig, random, 120, true)).isZero();
            }
        });
    }

    @Test
    void priorityLruStrandsChildrenOnTheSameWorkload() throws Exception {
        // the check above can fail: plain recency order evicts trunks first on this workload
        int stranded = 0;
        SplittableRandom random = new SplittableRandom(0x57A4D);
        for (int run = 0; run < 6; run++) {
            KvManagerConfig config = KvManagerConfig.defaults().devicePolicy(PolicyKind.PRIORITY_LRU);
            try (KvRig rig = new KvRig(KvRig.Spec.of(6 + random.nextInt(6), 0, 0, 0).config(config))) {
                stranded += strandsUnder(rig, random, 120, false);
            }
        }
        assertThat(stranded).isPositive();
    }

    /**
     * Random conversations over a few shared trunks; after every step, counts the resident blocks
     * whose parent is not resident (asserting none when {@code strict}).
     */
    private static int strandsUnder(KvRig rig, SplittableRandom random, int steps, boolean strict) {
        KvBlockManager m = rig.manager;
        int[][] trunks = new int[3][];
        for (int t = 0; t < trunks.length; t++) {
            trunks[t] = KvRig.tokens(random.nextLong(), (1 + random.nextInt(4)) * BT);
        }
        List<ObjectKey[]> chains = new ArrayList<>();
        List<KvSequence> running = new ArrayList<>();
        int stranded = 0;
        for (int step = 0; step < steps; step++) {
            if (running.size() < 2 && random.nextInt(3) > 0 || running.isEmpty()) {
                int[] tokens = concat(trunks[random.nextInt(trunks.length)], KvRig.tokens(random.nextLong(),
                        random.nextInt(3 * BT + 1)));
                KvSequence s = m.newSequence();
                PrefixMatch match = m.match(tokens, tokens.length);
                m.load(match, s).join();
                chains.add(rig.hasher.chain(tokens, tokens.length));
                if (rig.extend(s, tokens, tokens.length) == AllocationStatus.ALLOCATED) {
                    if (random.nextBoolean()) {
                        m.release(s); // at once: with write-through its blocks become evictable as their copies land, parent first
                    } else {
                        running.add(s);
                    }
                } else {
                    m.release(s);
                }
            } else {
                KvSequence s = running.remove(random.nextInt(running.size()));
                m.release(s, random.nextBoolean() ? PriorityClass.RECENT : PriorityClass.IDLE);
            }
            m.checkInvariants();
            for (ObjectKey[] chain : chains) {
                for (int i = 1; i < chain.length; i++) {
                    if (m.isOnDevice(chain[i]) && !m.isOnDevice(chain[i - 1])) {
                        stranded++;
                        if (strict) {
                            throw new AssertionError("step " + step + ": block " + i + " (" + chain[i]
                                    + ") is resident but its parent " + chain[i - 1] + " was evicted");
                        }
                    }
                }
            }
        }
        for (KvSequence s : running) {
            m.release(s);
        }
        return stranded;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
