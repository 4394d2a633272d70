package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;
import java.util.Arrays;

/**
 * An eviction policy for KV blocks that knows the prefix tree: it evicts only leaves of the tree of
 * blocks resident in its tier, the leaf of least value first.
 *
 * <p>Design note. A KV block is usable only when every block before it in its sequence is
 * available (its key chains theirs), so the blocks form a tree and two facts follow:
 * <ol>
 *   <li>A block is worthless once its parent is gone: no request can reach it any more, yet it
 *       keeps occupying memory. So a block must not be evicted while one of its children is
 *       resident in the same tier: only <em>leaves</em> of the resident tree are candidates.
 *       Plain LRU gets this exactly wrong: a request touches its blocks in prefix order, so the
 *       first block of a prefix is always the least recently used of the prefix and leaves first,
 *       cutting off everything after it.</li>
 *   <li>A block is reached at most as often as its parent (every request that reaches it reaches
 *       the parent), and never later than its parent. So a block that a second request has reached
 *       is the trunk of something shared (a system prompt, the earlier turns of a conversation
 *       that came back), while a block reached once may be the tail of a one-off prompt, and the
 *       last, partial block of a prompt is never reached again at all (the next turn extends it
 *       into a different block).</li>
 * </ol>
 * The value of a leaf therefore combines recency with reach (how many requests reached it:
 * {@link PrefixNode#prefixReach()}, or the hits this policy saw for other nodes): it is the
 * logical time of its last use plus {@code n * log2(reach)}, where {@code n} is the number of
 * blocks the tier tracks and time advances one tick per insert or use. In words: a block reached
 * by {@code 2^k} requests is kept as if it had been used {@code k} tier-turnovers later than it
 * was. A block reached once gets no bonus, so the tips of one-off prompts (and every last, partial
 * block) go first, in LRU order; a shared trunk outlives a few turnovers of one-off traffic; a
 * block no longer used still ages out, however popular it was, since the bonus is fixed at its
 * last use and time moves on. The scale is the tier's own size, so there is no constant to tune
 * per workload; the logarithm gives diminishing returns to very popular blocks, which a
 * strict frequency order would keep forever (a strict "shared before single-use" order, as in
 * priority LRU, loses to plain LRU once conversations end and their shared blocks go stale).
 * A child is used only in requests that also use its parent and is never reached more often, so
 * its value is at most its parent's, up to the order of touches inside one request; evicting
 * leaves only makes the tree order exact whatever that order.
 *
 * <p>Structure: an indexed binary min-heap of the evictable leaves (the index lives in the node, so
 * removal and re-keying are O(log n)); evictable inner nodes and parked nodes (pinned or ACTIVE)
 * sit outside the heap, counted by state only. Each node counts its children tracked by this
 * policy: a child's insert increments its parent's count (the parent named by
 * {@link PrefixNode#prefixParent()}), the child's removal decrements it, and a parent that arrives
 * after its children (demotion sends leaves down first) takes its count from
 * {@link PrefixNode#residentPrefixChildren()}. When the count drops to zero an evictable parent
 * joins the heap; when it rises from zero the parent leaves it. A parent that leaves the tier
 * before its children (removed by the store, not offered as a victim) stops counting them; a
 * child counts in a parent only while that parent is tracked, at its insert and at its removal,
 * so the counts stay exact whatever the order of arrivals and departures. The children it leaves
 * behind are leaves of the tier's tree from then on (the store decides
 * whether they are still reachable through a copy of the parent in another tier, and drops them
 * otherwise: the cascade). Pinned or ACTIVE leaves keep their ancestors out of the heap, which is
 * right: a running sequence uses its whole prefix. Priority classes other than ACTIVE do not order
 * this policy.
 *
 * <p>Across tiers: when every tier of a chain runs this policy and victims move down the chain,
 * a block's parent is never in a lower tier than the block (a leaf leaves a tier before its
 * parent can; a hit brings the whole prefix up, parent first), so no block is ever stranded by an
 * eviction, in its own tier or another.
 *
 * <p>Cost: O(log n) per insert, access, removal and victim; no allocation except when the heap
 * array or the skip stack grows (amortised, doubling).
 *
 * <p>Invariants: a tracked, evictable node with no tracked children is in the heap unless skipped;
 * {@link #victim()} never returns a node with a child tracked by this policy.
 *
 * <p>Threads: not thread-safe; guarded by the store's lock.
 */
public final class PrefixAwarePolicy implements EvictionPolicy {
    private static final double INV_LN2 = 1 / Math.log(2);
    static final byte LEAF = 1; // evictable, no tracked children: in the heap
    static final byte INNER = 2; // evictable, with tracked children
    static final byte PARKED = 3; // pinned or ACTIVE
    static final byte SKIPPED = 4; // hidden until restoreSkipped()

    private PolicyNode[] heap = new PolicyNode[64]; // [0, heapSize): min-heap on prefixValue
    private int heapSize;
    private PolicyNode[] skipped = new PolicyNode[8]; // [0, skippedCount): skipped this pressure pass
    private int skippedCount;
    private int size; // nodes tracked
    private long clock; // logical time, one tick per insert or use

    @Override
    public String name() {
        return "prefix-aware";
    }

    @Override
    public void onInsert(PolicyNode node) {
        if (node.prefixOwner != null || node.list != null) {
            throw new IllegalStateException("node is already tracked by a policy");
        }
        node.prefixOwner = this;
        node.localHits = 1;
        node.prefixChildren = 0;
        if (node instanceof PrefixNode p) {
            int children = p.residentPrefixChildren();
            if (children < 0) {
                throw new IllegalArgumentException("negative resident child count " + children);
            }
            node.prefixChildren = children;
            PolicyNode parent = p.prefixParent();
            if (parent != null && parent.prefixOwner == this) {
                if (parent.prefixChildren++ == 0 && parent.prefixState == LEAF) {
                    heapRemove(parent);
                    parent.prefixState = INNER;
                }
            }
        }
        touch(node);
        size++;
        node.prefixState = 0;
        file(node);
    }

    @Override
    public void onAccess(PolicyNode node) {
        mine(node);
        node.localHits++;
        touch(node);
        if (node.heapIndex >= 0) {
            heapFix(node);
        }
    }

    @Override
    public void onRemove(PolicyNode node) {
        mine(node);
        if (node.heapIndex >= 0) {
            heapRemove(node);
        }
        if (node instanceof PrefixNode p) {
            PolicyNode parent = p.prefixParent();
            if (parent != null && parent.prefixOwner == this && --parent.prefixChildren == 0 && parent.prefixState == INNER) {
                parent.prefixState = LEAF;
                heapAdd(parent);
            }
        }
        node.prefixOwner = null;
        node.prefixState = 0;
        size--;
    }

    @Override
    public void onEligibilityChange(PolicyNode node) {
        mine(node);
        if (node.prefixState == SKIPPED) {
            return; // refiled by restoreSkipped()
        }
        boolean wasParked = node.prefixState == PARKED;
        if (wasParked == !node.evictable()) {
            return;
        }
        if (node.heapIndex >= 0) {
            heapRemove(node);
        }
        if (wasParked) {
            touch(node); // becoming evictable again counts as a use
        }
        file(node);
    }

    @Override
    public void onPriorityChange(PolicyNode node, PriorityClass previous) {
        // classes other than ACTIVE (which flips evictable()) do not order this policy
    }

    @Override
    public PolicyNode victim() {
        return heapSize == 0 ? null : heap[0];
    }

    @Override
    public void skip(PolicyNode node) {
        mine(node);
        if (node.prefixState != LEAF) {
            throw new IllegalStateException("only a candidate leaf can be skipped, this node is in state " + node.prefixState);
        }
        heapRemove(node);
        node.prefixState = SKIPPED;
        if (skippedCount == skipped.length) {
            skipped = Arrays.copyOf(skipped, skippedCount * 2);
        }
        skipped[skippedCount++] = node;
    }

    @Override
    public void restoreSkipped() {
        for (int i = 0; i < skippedCount; i++) {
            PolicyNode n = skipped[i];
            skipped[i] = null;
            if (n.prefixOwner == this && n.prefixState == SKIPPED) {
                file(n);
            }
        }
        skippedCount = 0;
    }

    @Override
    public int size() {
        return size;
    }

    /** Leaves that are candidates now (for tests and reports). */
    public int candidateCount() {
        return heapSize;
    }

    /** The children of {@code node} that this policy counts as tracked (for tests). */
    public int trackedChildren(PolicyNode node) {
        mine(node);
        return node.prefixChildren;
    }

    // ---- internals ----

    private void mine(PolicyNode node) {
        if (node.prefixOwner != this) {
            throw new IllegalStateException("node is not tracked by this prefix-aware policy");
        }
    }

    /** A use: the value becomes the current time plus the reach bonus. */
    private void touch(PolicyNode node) {
        long reach = node instanceof PrefixNode p ? Math.max(1, p.prefixReach()) : node.localHits;
        // recency, plus one tier's worth of uses (a turnover) per doubling of the reach
        node.prefixValue = ++clock + (long) (Math.max(1, size) * Math.log(reach) * INV_LN2);
    }

    /** Puts a node that is in no structure into the one its state calls for. */
    private void file(PolicyNode node) {
        if (!node.evictable()) {
            node.prefixState = PARKED;
        } else if (node.prefixChildren > 0) {
            node.prefixState = INNER;
        } else {
            node.prefixState = LEAF;
            heapAdd(node);
        }
    }

    private static boolean less(PolicyNode a, PolicyNode b) {
        return a.prefixValue < b.prefixValue;
    }

    private void heapAdd(PolicyNode node) {
        if (heapSize == heap.length) {
            heap = Arrays.copyOf(heap, heapSize * 2);
        }
        heap[heapSize] = node;
        node.heapIndex = heapSize++;
        siftUp(node.heapIndex);
    }

    private void heapRemove(PolicyNode node) {
        int i = node.heapIndex;
        PolicyNode last = heap[--heapSize];
        heap[heapSize] = null;
        node.heapIndex = -1;
        if (last != node) {
            heap[i] = last;
            last.heapIndex = i;
            siftDown(i);
            siftUp(last.heapIndex);
        }
    }

    private void heapFix(PolicyNode node) {
        int i = node.heapIndex;
        siftDown(i);
        siftUp(node.heapIndex);
    }

    private void siftUp(int i) {
        PolicyNode n = heap[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            PolicyNode p = heap[parent];
            if (!less(n, p)) {
                break;
            }
            heap[i] = p;
            p.heapIndex = i;
            i = parent;
        }
        heap[i] = n;
        n.heapIndex = i;
    }

    private void siftDown(int i) {
        PolicyNode n = heap[i];
        int half = heapSize >>> 1;
        while (i < half) {
            int c = 2 * i + 1;
            PolicyNode child = heap[c];
            int r = c + 1;
            if (r < heapSize && less(heap[r], child)) {
                c = r;
                child = heap[c];
            }
            if (!less(child, n)) {
                break;
            }
            heap[i] = child;
            child.heapIndex = i;
            i = c;
        }
        heap[i] = n;
        n.heapIndex = i;
    }
}
