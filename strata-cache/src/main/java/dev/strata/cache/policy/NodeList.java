package dev.strata.cache.policy;

/**
 * An intrusive doubly linked list of {@link PolicyNode}s, most recently used first, with a
 * sentinel so that insertion and removal are O(1) and branch-light.
 *
 * <p>Threads: not thread-safe; guarded by the owning policy's lock.
 */
final class NodeList {
    private final PolicyNode sentinel = new PolicyNode() {
        @Override
        public dev.strata.cache.PriorityClass priority() {
            throw new UnsupportedOperationException("sentinel");
        }

        @Override
        public boolean evictable() {
            return false;
        }

        @Override
        public long keyHash() {
            return 0;
        }
    };
    private final String name;
    private int size; // nodes linked

    NodeList(String name) {
        this.name = name;
        sentinel.prev = sentinel;
        sentinel.next = sentinel;
    }

    /** Links {@code n} at the most recently used end. */
    void addFirst(PolicyNode n) {
        checkFree(n);
        PolicyNode first = sentinel.next;
        n.prev = sentinel;
        n.next = first;
        first.prev = n;
        sentinel.next = n;
        n.list = this;
        size++;
    }

    /** Links {@code n} at the least recently used end. */
    void addLast(PolicyNode n) {
        checkFree(n);
        PolicyNode last = sentinel.prev;
        n.next = sentinel;
        n.prev = last;
        last.next = n;
        sentinel.prev = n;
        n.list = this;
        size++;
    }

    /** Links {@code n} right behind {@code anchor} (towards the least recently used end); {@code anchor} must be in this list. */
    void addAfter(PolicyNode anchor, PolicyNode n) {
        if (anchor.list != this) {
            throw new IllegalStateException("anchor is not in list '" + name + "'");
        }
        checkFree(n);
        PolicyNode after = anchor.next;
        n.prev = anchor;
        n.next = after;
        after.prev = n;
        anchor.next = n;
        n.list = this;
        size++;
    }

    /** Unlinks {@code n}, which must be in this list. */
    void remove(PolicyNode n) {
        if (n.list != this) {
            throw new IllegalStateException("node is in list '" + (n.list == null ? "none" : n.list.name)
                    + "', not in '" + name + "'");
        }
        n.prev.next = n.next;
        n.next.prev = n.prev;
        n.prev = null;
        n.next = null;
        n.list = null;
        size--;
    }

    /** Moves {@code n} (in this list) to the most recently used end. */
    void moveToFirst(PolicyNode n) {
        remove(n);
        addFirst(n);
    }

    /** The least recently used node, or null if empty. */
    PolicyNode last() {
        PolicyNode l = sentinel.prev;
        return l == sentinel ? null : l;
    }

    /** The most recently used node, or null if empty. */
    PolicyNode first() {
        PolicyNode f = sentinel.next;
        return f == sentinel ? null : f;
    }

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    String name() {
        return name;
    }

    private void checkFree(PolicyNode n) {
        if (n.prefixOwner != null) {
            throw new IllegalStateException("node is tracked by a prefix-aware policy, cannot add to '" + name + "'");
        }
        if (n.list != null) {
            throw new IllegalStateException("node is already in list '" + n.list.name + "', cannot add to '" + name + "'");
        }
    }
}
