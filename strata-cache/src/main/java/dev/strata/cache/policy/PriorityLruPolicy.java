package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;

/**
 * The default policy: least recently used within priority classes, after vLLM's offload policy.
 *
 * <p>Design note: one intrusive LRU list per evictable class (RECENT, IDLE, EVICTABLE). The victim
 * is the LRU end of EVICTABLE, else of IDLE, else of RECENT: blocks of preempted sequences go
 * before shared prefix blocks, whose loss forces recomputation. ACTIVE and pinned copies are
 * parked outside the class lists and are never offered. A class change moves the copy to the MRU
 * end of its new class; becoming evictable again (unpin, leaving ACTIVE) counts as a use. Every
 * operation is O(1): at most three list heads are looked at to find a victim.
 *
 * <p>Threads: not thread-safe; guarded by the store's lock.
 */
public final class PriorityLruPolicy extends AbstractPolicy {
    private final NodeList[] byClass = new NodeList[PriorityClass.values().length]; // index: class ordinal; ACTIVE unused

    public PriorityLruPolicy() {
        for (PriorityClass c : PriorityClass.values()) {
            byClass[c.ordinal()] = new NodeList(c.name().toLowerCase(java.util.Locale.ROOT));
        }
    }

    @Override
    public String name() {
        return "priority-lru";
    }

    private NodeList listOf(PriorityClass c) {
        if (c == PriorityClass.ACTIVE) {
            throw new IllegalStateException("an ACTIVE copy is never evictable");
        }
        return byClass[c.ordinal()];
    }

    @Override
    protected void insertEvictable(PolicyNode node) {
        listOf(node.priority()).addFirst(node);
    }

    @Override
    protected NodeList homeForNew(PolicyNode node) {
        return byClass[PriorityClass.EVICTABLE.ordinal()]; // unused: unpark files by the current class
    }

    @Override
    protected void unpark(PolicyNode node) {
        listOf(node.priority()).addFirst(node);
    }

    @Override
    public void onAccess(PolicyNode node) {
        NodeList l = node.list;
        if (l != parked && l != skipped) {
            l.moveToFirst(node);
        }
    }

    @Override
    public void onPriorityChange(PolicyNode node, PriorityClass previous) {
        NodeList l = node.list;
        if (l == parked) {
            return; // filed by class when unparked
        }
        if (l == skipped) {
            node.home = listOf(node.priority());
            return;
        }
        l.remove(node);
        listOf(node.priority()).addFirst(node);
    }

    @Override
    public PolicyNode victim() {
        PolicyNode v = byClass[PriorityClass.EVICTABLE.ordinal()].last();
        if (v == null) {
            v = byClass[PriorityClass.IDLE.ordinal()].last();
            if (v == null) {
                v = byClass[PriorityClass.RECENT.ordinal()].last();
            }
        }
        return v;
    }
}
