package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;

/**
 * Plain least recently used, blind to priority classes (except that ACTIVE and pinned copies,
 * parked, are never offered).
 *
 * <p>Design note: one intrusive list, MRU first; a hit moves the copy to the front, the victim is
 * the back. A baseline for comparing the priority and frequency policies. O(1) everywhere.
 *
 * <p>Threads: not thread-safe; guarded by the store's lock.
 */
public final class LruPolicy extends AbstractPolicy {
    private final NodeList lru = new NodeList("lru");

    @Override
    public String name() {
        return "lru";
    }

    @Override
    protected void insertEvictable(PolicyNode node) {
        lru.addFirst(node);
    }

    @Override
    protected NodeList homeForNew(PolicyNode node) {
        return lru;
    }

    @Override
    public void onAccess(PolicyNode node) {
        if (node.list == lru) {
            lru.moveToFirst(node);
        }
    }

    @Override
    public void onPriorityChange(PolicyNode node, PriorityClass previous) {
        // classes do not order plain LRU
    }

    @Override
    public PolicyNode victim() {
        return lru.last();
    }
}
