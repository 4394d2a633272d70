package dev.strata.cache.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The prefix-aware policy: leaves only, two segments with an adaptive split, exact child counts under any order of events. */
class PrefixAwarePolicyTest {

    private static void insert(PrefixAwarePolicy p, PrefixBlock b) {
        b.inTier = true; // the store records residency, then tells the policy
        p.onInsert(b);
    }

    private static void remove(PrefixAwarePolicy p, PrefixBlock b) {
        p.onRemove(b); // the policy hears of the removal while the block is still resident
        b.inTier = false;
    }

    private static List<String> drain(PrefixAwarePolicy p, List<PrefixBlock> all) {
        List<String> order = new ArrayList<>();
        PolicyNode v;
        while ((v = p.victim()) != null) {
            PrefixBlock b = (PrefixBlock) v;
            assertThat(b.trackedChildren()).as("children of victim %s", b).isZero();
            order.add(b.name);
            remove(p, b);
        }
        return order;
    }

    @Test
    void evictsLeavesFirstEvenWhenTheParentIsOlder() {
        PrefixAwarePolicy p = new PrefixAwarePolicy();
        PrefixBlock a = new PrefixBlock("a", null);
        PrefixBlock b = new PrefixBlock("b", a);
        PrefixBlock c = new PrefixBlock("c", b);
        PrefixBlock x = new PrefixBlock("x", null);
        insert(p, a);
        insert(p, b);
        insert(p, c);
        insert(p, x);
        // LRU would offer a first; here a and b are inner nodes, so c (older than x) goes first
        assertThat(p.candidateCount()).isEqualTo(2);
        assertThat(drain(p, List.of(a, b, c, x))).containsExactly("c", "b", "a", "x");
    }

    @Test
    void blocksReachedOnceGoBeforeSharedBlocksUntilAGhostSaysOtherwise() {
        PrefixAwarePolicy p = new PrefixAwarePolicy();
        PrefixBlock shared = new PrefixBlock("shared", null);
        shared.reach = 2;
        insert(p, shared);
        PrefixBlock[] once = new PrefixBlock[3];
        for (int i = 0; i < once.length; i++) {
            once[i] = new PrefixBlock("once" + i, null);
            insert(p, once[i]);
        }
        // no evidence yet: the reached-once segment has target 0, so it is emptied first (scan
        // resistance), even though shared is the least recently used block
        assertThat(p.onceTarget()).isZero();
        assertThat(p.onceSize()).isEqualTo(3);
        assertThat(drain(p, List.of())).containsExactly("once0", "once1", "once2", "shared");
    }

    @Test
    void aSecondRequestMovesABlockIntoTheSharedSegment() {
        PrefixAwarePolicy p = new PrefixAwarePolicy();
        PrefixBlock a = new PrefixBlock("a", null);
        PrefixBlock x = new PrefixBlock("x", null);
        insert(p, a);
        insert(p, x);
        assertThat(p.onceSize()).isEqualTo(2);
        a.reach = 2;
        p.onAccess(a);
        assertThat(p.onceSize()).isEqualTo(1);
        assertThat(drain(p, List.of())).containsExactly("x", "a");
    }

    @Test
    void ghostHitsMoveTheTargetTowardsTheSegmentThatWasCutTooShort() {
        PrefixAwarePolicy p = new PrefixAwarePolicy();
        List<PrefixBlock> sharedBlocks = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            PrefixBlock s = new PrefixBlock("s" + i, null);
            s.reach = 3;
            insert(p, s);
            sharedBlocks.add(s);
        }
        PrefixBlock[] once = new PrefixBlock[4];
        for (int i = 0; i < once.length; i++) {
            once[i] = new PrefixBlock("o" + i, null);
            insert(p, once[i]);
        }
        // pressure: two reached-once blocks leave (target 0), o0 then o1
        for (int i = 0; i < 2; i++) {
            PrefixBlock v = (PrefixBlock) p.victim();
            assertThat(v.name).isEqualTo("o" + i);
            remove(p, v);
        }
        assertThat(p.ghostCounts()).containsExactly(2, 0);
        // o0 comes back (a second request reached it): the once segment was too short; the first
        // evidence sets an even split of the 10 blocks, plus one step
        o(p, once[0]);
        double afterFirst = p.onceTarget();
        assertThat(afterFirst).isEqualTo(10 / 2.0 + 1);
        assertThat(p.ghostCounts()).containsExactly(1, 0);
        // o0 is shared now; make room again: the once segment (2 blocks: o2, o3) is under its target,
        // so the least recently used shared block goes
        PrefixBlock v = (PrefixBlock) p.victim();
        assertThat(v.name).isEqualTo("s0");
        remove(p, v);
        assertThat(p.ghostCounts()).containsExactly(1, 1);
        // o1 comes back as well: the target grows again
        o(p, once[1]);
        double afterSecond = p.onceTarget();
        assertThat(afterSecond).isGreaterThan(afterFirst);
        // s0 comes back: the shared segment was cut too short, the target shrinks
        insert(p, sharedBlocks.get(0));
        assertThat(p.onceTarget()).isLessThan(afterSecond);
        assertThat(p.ghostCounts()).containsExactly(0, 0);
        p.checkGhosts();
    }

    /** A reached-once block evicted earlier is reached again and re-inserted. */
    private static void o(PrefixAwarePolicy p, PrefixBlock b) {
        b.reach++;
        insert(p, b);
    }

    @Test
    void ghostsAreBoundedByTheTierSizeAndForgetTheOldestFirst() {
        PrefixAwarePolicy p = new PrefixAwarePolicy();
        List<PrefixBlock> resident = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            PrefixBlock b = new PrefixBlock("r" + i, null);
            insert(p, b);
            resident.add(b);
        }
        List<PrefixBlock> evicted = new ArrayList<>();
        for (int i = 0; i < 13; i++) { // evict one, insert a fresh one: the tier stays at 5 blocks
            PrefixBlock v = (PrefixBlock) p.victim();
            remove(p, v);
            evicted.add(v);
            insert(p, new PrefixBlock("n" + i, null));
            p.checkGhosts();
        }
        assertThat(p.ghostCounts()).containsExactly(5, 0);
        // the oldest ghosts are gone: r0 coming back is no ghost hit, the newest eviction is
        o(p, evicted.get(0));
        assertThat(p.onceTarget()).isZero();
        o(p, evicted.get(evicted.size() - 1));
        assertThat(p.onceTarget()).isGreaterThan(0);
        p.checkGhosts();
    }

    @Test
    void aParentArrivingAfterItsChildrenIsNotACandidateUntilTheyLeave() {
        PrefixAwarePolicy p = new PrefixAwarePolicy();
        PrefixBlock a = new PrefixBlock("a", null);
        PrefixBlock b = new PrefixBlock("b", a);
        PrefixBlock c = new PrefixBlock("c", a);
        insert(p, b); // demoted first: the leaves arrive before their parent
        insert(p, c);
        insert(p, a);
        assertThat(p.trackedChildren(a)).isEqualTo(2);
        assertThat(p.victim()).isIn(b, c);
        remove(p, b);
        assertThat(p.victim()).isSameAs(c);
        remove(p, c);
        assertThat(p.victim()).isSameAs(a);
    }

    @Test
    void pinnedLeavesProtectTheirAncestorsAndUnpinningCountsAsAUse() {
        PrefixAwarePolicy p = new PrefixAwarePolicy();
        PrefixBlock a = new PrefixBlock("a", null);
        PrefixBlock b = new PrefixBlock("b", a);
        PrefixBlock y = new PrefixBlock("y", null);
        insert(p, a);
        insert(p, b);
        insert(p, y);
        b.pinned = true;
        p.onEligibilityChange(b);
        assertThat(p.victim()).isSameAs(y);
        remove(p, y);
        assertThat(p.victim()).isNull(); // a has a resident (pinned) child, b is pinned
        b.pinned = false;
        p.onEligibilityChange(b);
        assertThat(p.victim()).isSameAs(b);
        assertThat(p.size()).isEqualTo(2);
    }

    @Test
    void skippedLeavesComeBackAndMisuseIsRefused() {
        PrefixAwarePolicy p = new PrefixAwarePolicy();
        PrefixBlock a = new PrefixBlock("a", null);
        PrefixBlock b = new PrefixBlock("b", null);
        insert(p, a);
        insert(p, b);
        PolicyNode v = p.victim();
        p.skip(v);
        PolicyNode w = p.victim();
        assertThat(w).isNotSameAs(v);
        p.skip(w);
        assertThat(p.victim()).isNull();
        p.restoreSkipped();
        assertThat(p.victim()).isSameAs(v);
        assertThatThrownBy(() -> p.onInsert(a)).isInstanceOf(IllegalStateException.class).hasMessageContaining("already tracked");
        assertThatThrownBy(() -> new PrefixAwarePolicy().onAccess(a)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("not tracked by this prefix-aware policy");
        assertThatThrownBy(() -> new LruPolicy().onInsert(a)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void parsesAsAPolicyKind() {
        assertThat(PolicyKind.parse("prefix-aware")).isEqualTo(PolicyKind.PREFIX_AWARE);
        assertThat(PolicyKind.PREFIX_AWARE.create()).isInstanceOf(PrefixAwarePolicy.class);
        assertThat(PolicyKind.PREFIX_AWARE.create().name()).isEqualTo("prefix-aware");
        assertThatThrownBy(() -> PolicyKind.parse("prefix")).hasMessageContaining("prefix-aware");
    }

    @Test
    void neverOffersABlockWithAResidentDescendantUnderRandomEvents() {
        Property.forAll("prefix-aware victims are leaves", 60, rnd -> {
            PrefixAwarePolicy p = new PrefixAwarePolicy();
            List<PrefixBlock> blocks = new ArrayList<>();
            int n = 5 + rnd.nextInt(60);
            for (int i = 0; i < n; i++) {
                PrefixBlock parent = i == 0 || rnd.nextInt(5) == 0 ? null : blocks.get(rnd.nextInt(blocks.size()));
                blocks.add(new PrefixBlock("b" + i, parent));
            }
            List<PrefixBlock> skipped = new ArrayList<>();
            for (int step = 0; step < 400; step++) {
                PrefixBlock b = blocks.get(rnd.nextInt(n));
                switch (rnd.nextInt(7)) {
                    case 0, 1 -> {
                        if (!b.inTier) {
                            b.reach += rnd.nextInt(3);
                            insert(p, b);
                        }
                    }
                    case 2 -> {
                        if (b.inTier && !skipped.contains(b)) {
                            b.reach++;
                            p.onAccess(b);
                        }
                    }
                    case 3 -> {
                        if (b.inTier) { // removal by the store, possibly of an inner block
                            skipped.remove(b);
                            remove(p, b);
                        }
                    }
                    case 4 -> {
                        if (b.inTier && !skipped.contains(b)) {
                            b.pinned = !b.pinned;
                            p.onEligibilityChange(b);
                        } else if (!b.inTier) {
                            b.pinned = rnd.nextBoolean();
                        }
                    }
                    case 5 -> {
                        PolicyNode v = p.victim();
                        if (v != null) {
                            if (rnd.nextBoolean()) {
                                remove(p, (PrefixBlock) v);
                            } else {
                                p.skip(v);
                                skipped.add((PrefixBlock) v);
                            }
                        }
                    }
                    default -> {
                        p.restoreSkipped();
                        skipped.clear();
                    }
                }
                check(p, blocks, skipped, rnd);
            }
        });
    }

    /** The victim is the least recently used evictable leaf of the segment the target picks; counts match the model. */
    private static void check(PrefixAwarePolicy p, List<PrefixBlock> blocks, List<PrefixBlock> skipped, SplittableRandom rnd) {
        long tracked = blocks.stream().filter(b -> b.inTier).count();
        assertThat(p.size()).isEqualTo((int) tracked);
        PrefixBlock[] best = new PrefixBlock[2]; // [segment] least recently used candidate of the segment
        int candidates = 0;
        int onceCount = 0;
        for (PrefixBlock b : blocks) {
            if (!b.inTier) {
                continue;
            }
            assertThat(p.trackedChildren(b)).as("children of %s", b).isEqualTo(b.trackedChildren());
            int segment = b.reach >= 2 ? 1 : 0;
            onceCount += 1 - segment;
            if (b.evictable() && b.trackedChildren() == 0 && !skipped.contains(b)) {
                candidates++;
                if (best[segment] == null || b.prefixValue < best[segment].prefixValue) {
                    best[segment] = b;
                }
            }
        }
        assertThat(p.candidateCount()).isEqualTo(candidates);
        assertThat(p.onceSize()).isEqualTo(onceCount);
        assertThat(p.onceTarget()).isBetween(0.0, (double) blocks.size());
        p.checkGhosts();
        PrefixBlock expected = best[0] == null ? best[1] : best[1] == null ? best[0] : p.onceSize() > p.onceTarget() ? best[0] : best[1];
        PolicyNode v = p.victim();
        if (expected == null) {
            assertThat(v).isNull();
        } else {
            assertThat(v).isNotNull();
            PrefixBlock vb = (PrefixBlock) v;
            assertThat(vb.trackedChildren()).isZero();
            assertThat(vb.evictable()).isTrue();
            assertThat(vb).isSameAs(expected);
        }
    }
}
