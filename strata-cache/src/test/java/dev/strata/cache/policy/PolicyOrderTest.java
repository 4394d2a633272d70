package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static dev.strata.cache.PriorityClass.ACTIVE;
import static dev.strata.cache.PriorityClass.EVICTABLE;
import static dev.strata.cache.PriorityClass.IDLE;
import static dev.strata.cache.PriorityClass.RECENT;
import static org.assertj.core.api.Assertions.assertThat;

/** Victim order of each policy. */
class PolicyOrderTest {

    /** Evicts victims until none is left, returning their names in order. */
    private static List<String> drain(EvictionPolicy policy) {
        List<String> order = new ArrayList<>();
        PolicyNode v;
        while ((v = policy.victim()) != null) {
            assertThat(v.evictable()).as("victim %s must be evictable", v).isTrue();
            order.add(v.toString());
            policy.onRemove(v);
        }
        return order;
    }

    private static TestNode add(EvictionPolicy policy, String name, PriorityClass p) {
        TestNode n = new TestNode(name, p);
        policy.onInsert(n);
        return n;
    }

    @Test
    void priorityLruEvictsByClassThenLeastRecentlyUsed() {
        PriorityLruPolicy policy = new PriorityLruPolicy();
        add(policy, "r1", RECENT);
        TestNode e1 = add(policy, "e1", EVICTABLE);
        add(policy, "i1", IDLE);
        add(policy, "a1", ACTIVE);
        add(policy, "e2", EVICTABLE);
        add(policy, "r2", RECENT);
        add(policy, "i2", IDLE);
        TestNode e3 = add(policy, "e3", EVICTABLE);
        e3.pinned = true;
        policy.onEligibilityChange(e3);
        add(policy, "r3", RECENT);
        policy.onAccess(e1); // now the most recently used EVICTABLE copy
        assertThat(policy.size()).isEqualTo(9);

        assertThat(drain(policy)).containsExactly("e2", "e1", "i1", "i2", "r1", "r2", "r3");
        assertThat(policy.size()).isEqualTo(2); // a1 (ACTIVE) and e3 (pinned) are never offered
    }

    @Test
    void priorityLruFollowsClassChangesAndUnpinning() {
        PriorityLruPolicy policy = new PriorityLruPolicy();
        TestNode a = add(policy, "a", ACTIVE);
        TestNode b = add(policy, "b", EVICTABLE);
        TestNode c = add(policy, "c", IDLE);
        assertThat(policy.victim()).isSameAs(b);

        PriorityClass old = b.priority;
        b.priority = RECENT;
        policy.onPriorityChange(b, old);
        assertThat(policy.victim()).isSameAs(c);

        a.priority = EVICTABLE; // leaves ACTIVE: becomes evictable
        policy.onEligibilityChange(a);
        assertThat(policy.victim()).isSameAs(a);

        a.pinned = true;
        policy.onEligibilityChange(a);
        assertThat(drain(policy)).containsExactly("c", "b");
        a.pinned = false;
        policy.onEligibilityChange(a);
        assertThat(drain(policy)).containsExactly("a");
    }

    @Test
    void skippedVictimsReturnToTheirExactPlaces() {
        for (EvictionPolicy policy : List.of(new PriorityLruPolicy(), new LruPolicy(), new TinyLfuPolicy())) {
            List<TestNode> nodes = new ArrayList<>();
            for (int i = 0; i < 7; i++) {
                nodes.add(add(policy, "n" + i, i % 2 == 0 ? IDLE : EVICTABLE));
            }
            List<String> expected = drainCopy(policy, nodes);
            PolicyNode first = policy.victim();
            policy.skip(first);
            PolicyNode second = policy.victim();
            assertThat(second).isNotSameAs(first);
            policy.skip(second);
            policy.restoreSkipped();
            assertThat(drain(policy)).as(policy.name()).containsExactlyElementsOf(expected);
        }
    }

    /** The order a policy would evict in, found on an identical twin fed the same events. */
    private static List<String> drainCopy(EvictionPolicy like, List<TestNode> nodes) {
        EvictionPolicy twin = switch (like.name()) {
            case "priority-lru" -> new PriorityLruPolicy();
            case "lru" -> new LruPolicy();
            default -> new TinyLfuPolicy();
        };
        for (TestNode n : nodes) {
            twin.onInsert(new TestNode(n.name, n.priority));
        }
        return drain(twin);
    }

    @Test
    void lruIgnoresClassesButNeverOffersActiveOrPinned() {
        LruPolicy policy = new LruPolicy();
        TestNode a = add(policy, "a", RECENT);
        add(policy, "b", EVICTABLE);
        add(policy, "active", ACTIVE);
        TestNode c = add(policy, "c", IDLE);
        c.pinned = true;
        policy.onEligibilityChange(c);
        policy.onAccess(a);
        assertThat(drain(policy)).containsExactly("b", "a");
        assertThat(policy.size()).isEqualTo(2);
    }

    @Test
    void tinyLfuKeepsAFrequentlyUsedObjectThroughAScan() {
        TinyLfuPolicy policy = new TinyLfuPolicy(64);
        int capacity = 20;
        List<TestNode> resident = new ArrayList<>();
        TestNode hot = add(policy, "hot", EVICTABLE);
        resident.add(hot);
        for (int i = 0; i < capacity - 1; i++) {
            resident.add(add(policy, "warm" + i, EVICTABLE));
        }
        for (int i = 0; i < 10; i++) {
            policy.onAccess(hot);
        }
        // a scan of one-time objects, keeping the population at capacity
        for (int i = 0; i < 200; i++) {
            add(policy, "scan" + i, EVICTABLE);
            PolicyNode v = policy.victim();
            assertThat(v).as("scan step %d evicts the hot object", i).isNotSameAs(hot);
            policy.onRemove(v);
        }
        assertThat(hot.tracked()).isTrue();
        assertThat(policy.frequency(hot.keyHash())).isGreaterThan(1);

        // a plain LRU fed the same sequence loses it
        LruPolicy lru = new LruPolicy();
        TestNode lruHot = add(lru, "hot", EVICTABLE);
        for (int i = 0; i < capacity - 1; i++) {
            add(lru, "warm" + i, EVICTABLE);
        }
        for (int i = 0; i < 10; i++) {
            lru.onAccess(lruHot);
        }
        for (int i = 0; i < 200; i++) {
            add(lru, "scan" + i, EVICTABLE);
            lru.onRemove(lru.victim());
        }
        assertThat(lruHot.tracked()).isFalse();
    }

    @Test
    void tinyLfuNeverOffersPinnedOrActive() {
        TinyLfuPolicy policy = new TinyLfuPolicy();
        TestNode p = add(policy, "p", IDLE);
        p.pinned = true;
        policy.onEligibilityChange(p);
        add(policy, "a", ACTIVE);
        add(policy, "x", IDLE);
        add(policy, "y", RECENT);
        assertThat(drain(policy)).containsExactlyInAnyOrder("x", "y");
        assertThat(policy.size()).isEqualTo(2);
    }

    @Test
    void sketchCountsAndForgets() {
        FrequencySketch sketch = new FrequencySketch(16);
        long key = 0x1234_5678_9ABCL;
        for (int i = 0; i < 9; i++) {
            sketch.increment(key);
        }
        assertThat(sketch.frequency(key)).isBetween(9, 15);
        assertThat(sketch.frequency(key + 1)).isLessThan(9);
        for (int i = 0; i < 20_000; i++) {
            sketch.increment(i * 0x9E3779B97F4A7C15L);
        }
        assertThat(sketch.frequency(key)).isLessThan(9); // halved since
    }
}
