package dev.strata.cache.policy;

/**
 * What every policy shares: the list of parked nodes (not evictable: pinned or ACTIVE) and the
 * list of skipped nodes of the current pressure pass.
 *
 * <p>Design note: a skipped node is always the LRU end of its list at the moment it is skipped,
 * so putting the skipped nodes back at the LRU ends, most recently skipped first, restores every
 * list exactly. Parked nodes keep their {@code home} list and return to its MRU end when they
 * become evictable again (being unpinned counts as a use).
 *
 * <p>Threads: not thread-safe; guarded by the store's lock.
 */
abstract class AbstractPolicy implements EvictionPolicy {
    protected final NodeList parked = new NodeList("parked");
    protected final NodeList skipped = new NodeList("skipped");
    private int size; // nodes tracked

    /** Links a new evictable node into the policy's lists. */
    protected abstract void insertEvictable(PolicyNode node);

    /** The home list of a node that is inserted while not evictable. */
    protected abstract NodeList homeForNew(PolicyNode node);

    /** Called by {@link #onRemove} before {@code node} is unlinked (it is still in its list). */
    protected void removing(PolicyNode node) {
    }

    /** Called by {@link #skip} after {@code node} was hidden. */
    protected void skipped(PolicyNode node) {
    }

    /** Links a node that became evictable again (its {@code home} is set). */
    protected void unpark(PolicyNode node) {
        node.home.addFirst(node);
    }

    @Override
    public final void onInsert(PolicyNode node) {
        size++;
        if (node.evictable()) {
            insertEvictable(node);
        } else {
            node.home = homeForNew(node);
            parked.addFirst(node);
        }
    }

    @Override
    public final void onRemove(PolicyNode node) {
        removing(node);
        node.list.remove(node);
        node.home = null;
        size--;
    }

    @Override
    public final void onEligibilityChange(PolicyNode node) {
        if (node.evictable()) {
            if (node.list == parked) {
                parked.remove(node);
                unpark(node);
            }
        } else if (node.list != parked) {
            NodeList from = node.list;
            if (from != skipped) {
                node.home = from;
            }
            from.remove(node);
            parked.addFirst(node);
        }
    }

    @Override
    public final void skip(PolicyNode node) {
        NodeList from = node.list;
        if (from == skipped || from == parked) {
            throw new IllegalStateException("node in list '" + from.name() + "' cannot be skipped");
        }
        node.home = from;
        from.remove(node);
        skipped.addFirst(node);
        skipped(node);
    }

    @Override
    public final void restoreSkipped() {
        PolicyNode n;
        while ((n = skipped.first()) != null) {
            skipped.remove(n);
            n.home.addLast(n);
        }
    }

    @Override
    public final int size() {
        return size;
    }
}
