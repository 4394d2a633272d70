package dev.strata.cache.policy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.PriorityClass;
import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The adaptive-reach policy: levels by reach, prefix order inside a level, the dead tail of a finished prompt first, the
 * adaptive room of the reached-once level, and the switch between its two rules on regrets.
 */
class AdaptiveReachPolicyTest {

    private static PrefixBlock insert(AdaptiveReachPolicy p, String name, PrefixBlock parent, long reach) {
        PrefixBlock b = new PrefixBlock(name, parent, reach);
        b.inTier = true;
        p.onInsert(b);
        return b;
    }

    /** Takes the next victim and evicts it; returns its name. */
    private static String evict(AdaptiveReachPolicy p) {
        PolicyNode v = p.victim();
        assertThat(v).isNotNull();
        assertThat(v.evictable()).isTrue();
        p.onRemove(v);
        ((PrefixBlock) v).inTier = false;
        return v.toString();
    }

    @Test
    void blocksReachedOnceLeaveFirstThenTheLeastRecentlyUsedOfTheUpperLevels() {
        AdaptiveReachPolicy p = new AdaptiveReachPolicy();
        insert(p, "warm-old", null, 2);
        insert(p, "hot", null, 7);
        insert(p, "once-old", null, 1);
        insert(p, "warm-new", null, 3);
        PrefixBlock onceNew = insert(p, "once-new", null, 1);
        PrefixBlock pinned = insert(p, "once-pinned", null, 1);
        pinned.pinned = true;
        p.onEligibilityChange(pinned);
        assertThat(p.levelSize(AdaptiveReachPolicy.ONCE)).isEqualTo(2);
        assertThat(p.levelSize(AdaptiveReachPolicy.WARM)).isEqualTo(2);
        assertThat(p.levelSize(AdaptiveReachPolicy.HOT)).isEqualTo(1);

        // the first use of once-new by a second request lifts it to WARM, at the front
        onceNew.reach = 2;
        p.onAccess(onceNew);
        // ONCE first (its target is 0 until a reached-once eviction comes back); then recency (the rule at the start): the older of WARM's and HOT's tails, WARM on equal times
        assertThat(List.of(evict(p), evict(p), evict(p), evict(p), evict(p))).containsExactly(
                "once-old", "warm-old", "hot", "warm-new", "once-new");
        assertThat(p.victim()).as("a pinned block is never offered").isNull();
        assertThat(p.size()).isEqualTo(1);
        assertThat(p.regrets(AdaptiveReachPolicy.RECENCY)).isZero();
    }

    /** A request writes blocks {@code names} pinned under {@code parent}, each the child of the one before, with {@code reach}. */
    private static List<PrefixBlock> write(AdaptiveReachPolicy p, PrefixBlock parent, long reach, String... names) {
        List<PrefixBlock> chain = new ArrayList<>();
        for (String n : names) {
            PrefixBlock b = new PrefixBlock(n, parent, reach);
            b.pinned = true;
            b.inTier = true;
            p.onInsert(b);
            chain.add(b);
            parent = b;
        }
        return chain;
    }

    /** The request ends: its blocks become evictable in the order given (a block manager releases them root first). */
    private static void release(AdaptiveReachPolicy p, List<PrefixBlock> blocks) {
        for (PrefixBlock b : blocks) {
            b.pinned = false;
            p.onEligibilityChange(b);
        }
    }

    @Test
    void aFinishedRequestStandsInPrefixOrderSoItsTailLeavesBeforeItsTrunk() {
        AdaptiveReachPolicy p = new AdaptiveReachPolicy();
        insert(p, "other", null, 2);
        // a second request re-reads root, a, b, c (WARM), releasing them root first
        List<PrefixBlock> chain = write(p, null, 2, "root", "a", "b", "c");
        release(p, chain);
        // 'other' is older than the whole request; inside the request the deepest block goes first
        assertThat(List.of(evict(p), evict(p), evict(p), evict(p), evict(p))).containsExactly("other", "c", "b", "a", "root");
    }

    @Test
    void theDeadTailOfAFinishedPromptLeavesFirstAndItsParentKeepsItsPlace() {
        AdaptiveReachPolicy p = new AdaptiveReachPolicy();
        insert(p, "other", null, 1);
        PrefixBlock shared = insert(p, "shared", null, 2);
        // a request extends the shared block with three new blocks; the last one ends the prompt
        List<PrefixBlock> chain = write(p, shared, 1, "x", "y", "z");
        release(p, chain);
        PrefixBlock w = insert(p, "w", null, 1); // an unrelated block ends the run x, y, z
        assertThat(p.victim()).as("the prompt's last block, reached once").isSameAs(chain.get(2));
        assertThat(p.levelSize(AdaptiveReachPolicy.ONCE)).isEqualTo(5);
        // then LRU again: other, then the rest of the request deepest first, then w, then the upper level
        assertThat(List.of(evict(p), evict(p), evict(p), evict(p), evict(p), evict(p)))
                .containsExactly("z", "other", "y", "x", "w", "shared");
        p.checkOrder();
        assertThat(w.tracked()).isFalse();
    }

    @Test
    void aPromptReleasedDeepestFirstLosesItsDeadTailFirstTooButARootAloneKeepsItsPlace() {
        AdaptiveReachPolicy p = new AdaptiveReachPolicy();
        insert(p, "old", null, 1);
        // released deepest first, as the block manager releases a sequence: each block is the parent of the one before
        List<PrefixBlock> chain = write(p, null, 1, "r", "s", "t");
        release(p, List.of(chain.get(2), chain.get(1), chain.get(0)));
        // a root alone and a node without prefix structure end runs but are no prompt tails themselves
        insert(p, "root-alone", null, 1);
        p.onInsert(new TestNode("plain", PriorityClass.RECENT));
        p.checkOrder();
        assertThat(List.of(evict(p), evict(p), evict(p), evict(p), evict(p))).containsExactly("t", "old", "s", "r", "root-alone");
        assertThat(p.victim()).hasToString("plain");
    }

    @Test
    void theRoomOfOnceGrowsWhenItsEvictionsComeBackAndShrinksWhenTheUpperLevelsDo() {
        AdaptiveReachPolicy p = new AdaptiveReachPolicy();
        insert(p, "w1", null, 2);
        insert(p, "o1", null, 1);
        insert(p, "o2", null, 1);
        assertThat(p.onceTarget()).isZero();
        // with no evidence yet, reached-once blocks go first
        assertThat(evict(p)).isEqualTo("o1");
        // o1 comes back (a second request reached it): ONCE was cut too short
        insert(p, "o1", null, 2);
        assertThat(p.onceTarget()).isEqualTo(1.0);
        // ONCE holds one candidate, no more than its target: the upper levels give the victim
        assertThat(evict(p)).isEqualTo("w1");
        // w1 comes back: the upper levels were cut too short, and ONCE's room shrinks again
        insert(p, "w1", null, 3);
        assertThat(p.onceTarget()).isZero();
        assertThat(evict(p)).isEqualTo("o2");
        // ONCE empty: the upper levels give victims whatever the target
        assertThat(evict(p)).isEqualTo("o1");
    }

    @Test
    void aRuleWhoseEvictionComesBackLosesTheNextDisagreement() {
        AdaptiveReachPolicy p = new AdaptiveReachPolicy();
        insert(p, "h", null, 4); // HOT, time 1
        insert(p, "w", null, 2); // WARM, time 2
        assertThat(p.rule()).isEqualTo(AdaptiveReachPolicy.RECENCY);
        // the rules disagree: recency names h (older), frequency names w (lower level); recency is followed
        assertThat(evict(p)).isEqualTo("h");

        // h comes back: recency's eviction was a mistake, so frequency leads
        insert(p, "h", null, 5); // HOT, time 3
        assertThat(p.regrets(AdaptiveReachPolicy.RECENCY)).isEqualTo(1);
        assertThat(p.rule()).isEqualTo(AdaptiveReachPolicy.FREQUENCY);
        insert(p, "w2", null, 2); // WARM, time 4
        // WARM's tail w (time 2) is older than h (time 3): both rules name w
        assertThat(evict(p)).isEqualTo("w");
        // now w2 (time 4) against h (time 3): frequency, leading, names w2
        assertThat(evict(p)).isEqualTo("w2");

        // w2 comes back: frequency has regretted as often as recency, and the tie goes to recency
        insert(p, "w2", null, 3); // WARM, time 5
        assertThat(p.regrets(AdaptiveReachPolicy.FREQUENCY)).isEqualTo(1);
        assertThat(p.rule()).isEqualTo(AdaptiveReachPolicy.RECENCY);
        assertThat(evict(p)).isEqualTo("h");
        // an eviction both rules agree on leaves no ghost: w2's return charges nobody
        assertThat(evict(p)).isEqualTo("w2");
        insert(p, "w2", null, 3);
        assertThat(p.regrets(AdaptiveReachPolicy.RECENCY)).isEqualTo(1);
        assertThat(p.regrets(AdaptiveReachPolicy.FREQUENCY)).isEqualTo(1);
    }

    @Test
    void aSkippedVictimIsHiddenThenRestoredInPlaceAndItsLaterRemovalIsNoEviction() {
        AdaptiveReachPolicy p = new AdaptiveReachPolicy();
        insert(p, "h", null, 4);
        insert(p, "w", null, 2);
        PolicyNode v = p.victim();
        assertThat(v).hasToString("h");
        p.skip(v);
        assertThat(p.victim()).hasToString("w");
        p.restoreSkipped();
        assertThat(p.victim()).hasToString("h");
        p.skip(p.victim());
        p.restoreSkipped();
        p.onRemove(v); // removed for another reason (say, promoted), not as the victim offered: no ghost
        ((PrefixBlock) v).inTier = false;
        insert(p, "h", null, 5);
        assertThat(p.regrets(AdaptiveReachPolicy.RECENCY)).isZero();
    }

    @Test
    void nodesWithoutPrefixStructureClimbLevelsByTheHitsThePolicySees() {
        AdaptiveReachPolicy p = new AdaptiveReachPolicy();
        TestNode a = new TestNode("a", PriorityClass.RECENT);
        TestNode b = new TestNode("b", PriorityClass.RECENT);
        p.onInsert(a);
        p.onInsert(b);
        p.onAccess(a); // two uses: WARM
        assertThat(p.levelSize(AdaptiveReachPolicy.ONCE)).isEqualTo(1);
        assertThat(p.levelSize(AdaptiveReachPolicy.WARM)).isEqualTo(1);
        p.onAccess(a);
        p.onAccess(a); // four uses: HOT
        assertThat(p.levelSize(AdaptiveReachPolicy.HOT)).isEqualTo(1);
        assertThat(p.victim()).isSameAs(b);
    }

    @Test
    void underRandomEventsVictimsAreEvictableAndTrackedAndEachLevelStaysInTimeOrder() {
        Property.forAll("adaptive-reach invariants", 60, rnd -> {
            AdaptiveReachPolicy p = new AdaptiveReachPolicy();
            Map<String, PrefixBlock> resident = new HashMap<>();
            List<PrefixBlock> live = new ArrayList<>();
            int capacity = 1 + rnd.nextInt(12);
            for (int step = 0; step < 400; step++) {
                int op = rnd.nextInt(4);
                if (op == 0 || live.isEmpty()) { // a request writes a chain under a random resident block
                    PrefixBlock parent = live.isEmpty() || rnd.nextInt(3) == 0 ? null : live.get(rnd.nextInt(live.size()));
                    String name = (parent == null ? "" : parent.name + "/") + rnd.nextInt(4);
                    if (resident.containsKey(name)) {
                        continue;
                    }
                    while (live.size() >= capacity) {
                        PolicyNode v = p.victim();
                        if (v == null) {
                            break;
                        }
                        PrefixBlock vb = (PrefixBlock) v;
                        assertThat(vb.evictable()).isTrue();
                        assertThat(vb.inTier).isTrue();
                        p.onRemove(vb);
                        vb.inTier = false;
                        live.remove(vb);
                        resident.remove(vb.name);
                    }
                    if (live.size() >= capacity) {
                        continue;
                    }
                    long reach = parent == null ? 1 + rnd.nextInt(6) : 1 + rnd.nextInt((int) parent.reach);
                    PrefixBlock b = insert(p, name, parent != null && parent.inTier ? parent : null, reach);
                    live.add(b);
                    resident.put(name, b);
                } else if (op == 1) { // a hit: reach grows, never past the parent's
                    PrefixBlock b = live.get(rnd.nextInt(live.size()));
                    long cap = b.parent != null && b.parent.inTier ? b.parent.reach : Long.MAX_VALUE;
                    b.reach = Math.min(cap, b.reach + 1);
                    p.onAccess(b);
                } else if (op == 2) { // pin or unpin
                    PrefixBlock b = live.get(rnd.nextInt(live.size()));
                    b.pinned = !b.pinned;
                    p.onEligibilityChange(b);
                } else { // a removal that is not an eviction
                    PrefixBlock b = live.remove(rnd.nextInt(live.size()));
                    p.onRemove(b);
                    b.inTier = false;
                    resident.remove(b.name);
                }
                assertThat(p.size()).isEqualTo(live.size());
                assertThat(live.size()).isLessThanOrEqualTo(capacity);
                int evictable = (int) live.stream().filter(PrefixBlock::evictable).count();
                assertThat(p.levelSize(0) + p.levelSize(1) + p.levelSize(2)).isEqualTo(evictable);
                p.checkOrder();
            }
        });
    }
}
