package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;

/**
 * A frequency-aware policy in the style of W-TinyLFU: a small LRU window in front of a segmented
 * main LRU, with admission into the main area decided by a frequency sketch.
 *
 * <p>Design note:
 * <ul>
 *   <li>Every insert and hit is counted in a {@link FrequencySketch} (count-min, 4-bit counters,
 *       halved every 10 increments per entry, so popularity decays).</li>
 *   <li>New copies enter the <em>window</em> (about 1% of the entries, at least one). The main area
 *       is split into <em>probation</em> and <em>protected</em> (at most 80% of the main area); a
 *       hit in probation promotes the copy to protected, pushing protected's LRU copy back to
 *       probation.</li>
 *   <li>Admission happens when a victim is needed: while the window is over its share, its LRU
 *       copy (the candidate) duels the main area's LRU copy (probation first; an empty main area admits
 *       it freely): the one with the
 *       lower estimated frequency is the victim, the winner stays (a winning candidate moves to
 *       probation). Otherwise the victim is probation's LRU, then the window's, then protected's.</li>
 *   <li>Result: a one-time scan flows through the window and loses every duel against copies that
 *       were used repeatedly, so a scan does not flush the frequently used set.</li>
 *   <li>Priority classes do not order this policy; ACTIVE and pinned copies are parked and never
 *       offered. All operations are O(1) (four sketch counters each).</li>
 * </ul>
 *
 * <p>Threads: not thread-safe; guarded by the store's lock.
 */
public final class TinyLfuPolicy extends AbstractPolicy {
    private static final int WINDOW_PERCENT = 1;
    private static final int PROTECTED_PERCENT = 80;

    private final NodeList window = new NodeList("window");
    private final NodeList probation = new NodeList("probation");
    private final NodeList protectedList = new NodeList("protected");
    private final FrequencySketch sketch;

    public TinyLfuPolicy() {
        this(64);
    }

    /** A policy whose sketch starts sized for {@code expectedEntries} (it grows as needed). */
    public TinyLfuPolicy(int expectedEntries) {
        this.sketch = new FrequencySketch(expectedEntries);
    }

    @Override
    public String name() {
        return "tiny-lfu";
    }

    private int windowMax() {
        return Math.max(1, size() * WINDOW_PERCENT / 100);
    }

    private int protectedMax() {
        return Math.max(1, (size() - windowMax()) * PROTECTED_PERCENT / 100);
    }

    /** The sketch's estimate for a key hash (for tests and reports). */
    public int frequency(long keyHash) {
        return sketch.frequency(keyHash);
    }

    @Override
    protected void insertEvictable(PolicyNode node) {
        sketch.ensureCapacity(size());
        sketch.increment(node.keyHash());
        window.addFirst(node);
    }

    @Override
    protected NodeList homeForNew(PolicyNode node) {
        sketch.ensureCapacity(size());
        sketch.increment(node.keyHash());
        return window;
    }

    @Override
    public void onAccess(PolicyNode node) {
        sketch.increment(node.keyHash());
        NodeList l = node.list;
        if (l == window || l == protectedList) {
            l.moveToFirst(node);
        } else if (l == probation) {
            probation.remove(node);
            protectedList.addFirst(node);
            if (protectedList.size() > protectedMax()) {
                PolicyNode demoted = protectedList.last();
                protectedList.remove(demoted);
                probation.addFirst(demoted);
            }
        } else if (l == parked && node.home == probation) {
            node.home = protectedList;
        }
    }

    @Override
    public void onPriorityChange(PolicyNode node, PriorityClass previous) {
        // classes do not order this policy
    }

    @Override
    public PolicyNode victim() {
        while (window.size() > windowMax()) {
            PolicyNode candidate = window.last();
            PolicyNode incumbent = probation.last();
            if (incumbent == null) {
                incumbent = protectedList.last();
            }
            if (incumbent == null) {
                window.remove(candidate); // main area empty: admit without a duel
                probation.addFirst(candidate);
                continue;
            }
            if (sketch.frequency(candidate.keyHash()) > sketch.frequency(incumbent.keyHash())) {
                window.remove(candidate);
                probation.addFirst(candidate);
                return incumbent;
            }
            return candidate;
        }
        PolicyNode v = probation.last();
        if (v == null) {
            v = window.last();
            if (v == null) {
                v = protectedList.last();
            }
        }
        return v;
    }
}
