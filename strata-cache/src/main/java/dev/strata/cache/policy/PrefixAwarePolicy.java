package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;
import java.util.Arrays;

/**
 * An eviction policy for KV blocks that knows the prefix tree: it evicts only leaves of the tree of
 * blocks resident in its tier, and splits the tier adaptively between blocks one request has
 * reached and blocks that several requests share.
 *
 * <p>Design note. Every piece follows from how prefix caching works, not from a workload.
 * <ol>
 *   <li><b>Leaves only.</b> A KV block is usable only when every block before it in its sequence is
 *       available (its key chains theirs), so the blocks form a tree, and a block is worthless once
 *       its parent is gone: no request can reach it, yet it keeps occupying memory. So a block is
 *       never evicted while one of its children is resident in the same tier; only <em>leaves</em>
 *       of the resident tree are candidates. This also gives every block the value of its subtree
 *       for free: a request that uses a block uses all its ancestors, so an ancestor is at least as
 *       recent and as often reached as any descendant, and it stays until the whole subtree has gone.
 *       Plain LRU gets this exactly wrong: a request touches its blocks in prefix order, so the
 *       first block of a prefix is the least recently used of the prefix and leaves first, cutting
 *       off everything after it.</li>
 *   <li><b>Two segments by reach.</b> A block is reached at most as often as its parent (every
 *       request that reaches it reaches the parent). A block that a second request has reached
 *       ({@link PrefixNode#prefixReach()} &ge; 2, or a hit seen by this policy for other nodes) is
 *       the trunk of something shared: a system prompt, the earlier turns of a conversation that
 *       came back. A block reached once is the tail of a prompt that may never return: the body of
 *       a one-off document, and always the last, partial block of a prompt (the next turn extends
 *       it into a different block). So the tier holds two segments, ONCE and SHARED, each ordered
 *       by last use; the victim is the least recently used leaf of ONCE while ONCE holds more than
 *       its target size, else of SHARED. A long one-off document only cycles through ONCE and cannot
 *       flush the shared trunks (scan resistance), and a shared block that is no longer used still
 *       ages out of SHARED, which a strict "shared before single-use" order never lets happen.</li>
 *   <li><b>An adaptive split (after ARC).</b> How much room reached-once blocks deserve depends on
 *       the workload: a chat needs room for each open conversation's newest turn until its next
 *       turn reaches it; document analysis needs almost none, since one-off documents never come
 *       back. The policy learns it online from its own mistakes: every eviction leaves a
 *       <em>ghost</em>, the key hash and the segment it left, in a bounded table
 *       ({@link GhostTable}, at most as many ghosts per segment as the tier holds blocks). When a
 *       block is inserted again while its ghost is remembered, the eviction was a mistake that a
 *       larger segment would have avoided: a ghost of ONCE raises the target of ONCE, a ghost of
 *       SHARED lowers it, by one block or by the ratio of the other segment's ghosts to this one's
 *       if larger (ARC's rule: the rarer kind of regret is the stronger evidence), within
 *       {@code [0, tier size]}. Why a block can come back at all is itself prefix structure: the
 *       next turn of a conversation re-reads the previous turn's blocks.</li>
 *   <li><b>No fitted constants.</b> The only quantities are scale-free or learned: the target is in
 *       blocks and bounded by the tier's own size (the most blocks it has tracked at once); the
 *       ghost bound is the tier's size (a key evicted longer ago than one tier-turnover would not
 *       have survived in a tier of twice the size either, so it is no evidence about this split);
 *       the steps are ARC's ratios. Before any ghost is hit the target is 0 (reached-once blocks
 *       go first, which costs nothing while nothing has come back); the first ghost hit, the first
 *       evidence that reached-once blocks return, sets it to half the tier, the split that assumes
 *       nothing about which segment matters, and adaptation moves it from there. (Starting from 0
 *       as ARC does learns the same split, but one block per mistake when SHARED has never been
 *       evicted, since it then has no ghosts to weigh against: a tier full of stale shared blocks
 *       would take a tier's worth of mistakes to correct.)</li>
 * </ol>
 *
 * <p>Structure: two indexed binary min-heaps ({@link LeafHeap}), one per segment, of the evictable
 * leaves by logical time of last use (the index lives in the node, so removal and re-keying are
 * O(log n)); evictable inner nodes and parked nodes (pinned or ACTIVE) sit outside the heaps,
 * counted by state and segment only. A use re-reads the reach and may move a node from ONCE to
 * SHARED. Each node counts its children tracked by this policy: a child's insert increments its
 * parent's count (the parent named by {@link PrefixNode#prefixParent()}), the child's removal
 * decrements it, and a parent that arrives after its children (demotion sends leaves down first)
 * takes its count from {@link PrefixNode#residentPrefixChildren()}. When the count drops to zero an
 * evictable parent joins its heap; when it rises from zero the parent leaves it. A parent that
 * leaves the tier before its children (removed by the store, not offered as a victim) stops
 * counting them; a child counts in a parent only while that parent is tracked, at its insert and at
 * its removal, so the counts stay exact whatever the order of arrivals and departures. The children
 * it leaves behind are leaves of the tier's tree from then on (the store decides whether they are
 * still reachable through a copy of the parent in another tier, and drops them otherwise: the
 * cascade). Pinned or ACTIVE leaves keep their ancestors out of the heaps, which is right: a running
 * sequence uses its whole prefix. Only the removal of the node last returned by {@link #victim()}
 * counts as an eviction and leaves a ghost; other removals (a promotion, a cascade drop) do not.
 * Priority classes other than ACTIVE do not order this policy.
 *
 * <p>Across tiers: when every tier of a chain runs this policy and victims move down the chain,
 * a block's parent is never in a lower tier than the block (a leaf leaves a tier before its
 * parent can; a hit brings the whole prefix up, parent first), so no block is ever stranded by an
 * eviction, in its own tier or another. Each tier learns its own split.
 *
 * <p>Cost: O(log n) per insert, access, removal and victim; O(1) expected for the ghost table. No
 * allocation except when the heap arrays, the ghost table or the skip stack grow (amortised,
 * doubling), which stops once the tier has filled.
 *
 * <p>Invariants: a tracked, evictable node with no tracked children is in its segment's heap unless
 * skipped; {@link #victim()} never returns a node with a child tracked by this policy; the target
 * of ONCE lies in {@code [0, most nodes tracked]}.
 *
 * <p>Threads: not thread-safe; guarded by the store's lock.
 */
public final class PrefixAwarePolicy implements EvictionPolicy {
    static final byte LEAF = 1; // evictable, no tracked children: in its segment's heap
    static final byte INNER = 2; // evictable, with tracked children
    static final byte PARKED = 3; // pinned or ACTIVE
    static final byte SKIPPED = 4; // hidden until restoreSkipped()
    static final byte ONCE = 0; // segment: reached by one request so far
    static final byte SHARED = 1; // segment: reached by two or more requests

    private final LeafHeap[] leaves = {new LeafHeap(), new LeafHeap()}; // [segment] evictable leaves by last use
    private final int[] segmentSize = new int[2]; // [segment] nodes tracked in it, any state
    private final GhostTable ghosts = new GhostTable();
    private PolicyNode[] skipped = new PolicyNode[8]; // [0, skippedCount): skipped this pressure pass
    private int skippedCount;
    private int size; // nodes tracked
    private int peakSize; // most nodes ever tracked at once: the tier's capacity once it has filled
    private double onceTarget; // target size of ONCE, in blocks, in [0, peakSize]; adapted by ghost hits
    private boolean adapted; // a ghost has been hit: onceTarget has been set from evidence
    private PolicyNode offered; // the last victim() returned; its removal is an eviction
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
                    leaves[parent.prefixSegment].remove(parent);
                    parent.prefixState = INNER;
                }
            }
        }
        adapt(ghosts.take(node.keyHash()));
        node.prefixValue = ++clock;
        node.prefixSegment = segmentOf(node);
        segmentSize[node.prefixSegment]++;
        size++;
        peakSize = Math.max(peakSize, size);
        node.prefixState = 0;
        file(node);
    }

    @Override
    public void onAccess(PolicyNode node) {
        mine(node);
        node.localHits++;
        touch(node);
    }

    @Override
    public void onRemove(PolicyNode node) {
        mine(node);
        if (node.heapIndex >= 0) {
            leaves[node.prefixSegment].remove(node);
        }
        if (node == offered) { // an eviction: remember the key, to learn if it was a mistake
            ghosts.record(node.keyHash(), node.prefixSegment, peakSize);
            offered = null;
        }
        if (node instanceof PrefixNode p) {
            PolicyNode parent = p.prefixParent();
            if (parent != null && parent.prefixOwner == this && --parent.prefixChildren == 0 && parent.prefixState == INNER) {
                parent.prefixState = LEAF;
                leaves[parent.prefixSegment].add(parent);
            }
        }
        segmentSize[node.prefixSegment]--;
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
            leaves[node.prefixSegment].remove(node);
        }
        if (wasParked) {
            node.prefixValue = ++clock; // becoming evictable again counts as a use
            resegment(node);
        }
        file(node);
    }

    @Override
    public void onPriorityChange(PolicyNode node, PriorityClass previous) {
        // classes other than ACTIVE (which flips evictable()) do not order this policy
    }

    @Override
    public PolicyNode victim() {
        PolicyNode once = leaves[ONCE].min();
        PolicyNode shared = leaves[SHARED].min();
        PolicyNode v;
        if (once == null) {
            v = shared;
        } else if (shared == null) {
            v = once;
        } else {
            v = segmentSize[ONCE] > onceTarget ? once : shared;
        }
        offered = v;
        return v;
    }

    @Override
    public void skip(PolicyNode node) {
        mine(node);
        if (node.prefixState != LEAF) {
            throw new IllegalStateException("only a candidate leaf can be skipped, this node is in state " + node.prefixState);
        }
        leaves[node.prefixSegment].remove(node);
        node.prefixState = SKIPPED;
        if (skippedCount == skipped.length) {
            skipped = Arrays.copyOf(skipped, skippedCount * 2);
        }
        skipped[skippedCount++] = node;
        offered = null;
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
        return leaves[ONCE].size() + leaves[SHARED].size();
    }

    /** The children of {@code node} that this policy counts as tracked (for tests). */
    public int trackedChildren(PolicyNode node) {
        mine(node);
        return node.prefixChildren;
    }

    /** The adaptive target size of the reached-once segment, in blocks (for tests and reports). */
    public double onceTarget() {
        return onceTarget;
    }

    /** Blocks tracked that one request has reached so far (for tests and reports). */
    public int onceSize() {
        return segmentSize[ONCE];
    }

    /** Evicted keys still remembered from the reached-once and the shared segment (for tests). */
    int[] ghostCounts() {
        return new int[] {ghosts.count(ONCE), ghosts.count(SHARED)};
    }

    /** For tests: the ghost table's invariants. */
    void checkGhosts() {
        ghosts.check();
    }

    // ---- internals ----

    private void mine(PolicyNode node) {
        if (node.prefixOwner != this) {
            throw new IllegalStateException("node is not tracked by this prefix-aware policy");
        }
    }

    /** ONCE or SHARED, from the requests that have reached the block (or, for other nodes, the hits seen). */
    private static byte segmentOf(PolicyNode node) {
        long reach = node instanceof PrefixNode p ? p.prefixReach() : node.localHits;
        return reach >= 2 ? SHARED : ONCE;
    }

    /** A use: the node becomes the most recent of its segment, which its reach may have changed. */
    private void touch(PolicyNode node) {
        node.prefixValue = ++clock;
        if (node.heapIndex >= 0) {
            leaves[node.prefixSegment].remove(node);
            resegment(node);
            leaves[node.prefixSegment].add(node);
        } else {
            resegment(node);
        }
    }

    private void resegment(PolicyNode node) {
        byte s = segmentOf(node);
        if (s != node.prefixSegment) {
            segmentSize[node.prefixSegment]--;
            segmentSize[s]++;
            node.prefixSegment = s;
        }
    }

    /**
     * A key evicted from {@code segment} came back: that segment was cut too short. Move the target
     * towards it by one block, or by the ratio of the other segment's ghosts to this one's when that
     * is larger (the rarer kind of regret weighs more), within [0, the tier's size].
     */
    private void adapt(int segment) {
        if (segment == GhostTable.NONE) {
            return;
        }
        if (!adapted) { // the first evidence: start from an even split, the target of no prior
            adapted = true;
            onceTarget = peakSize / 2.0;
        }
        int once = ghosts.count(ONCE);
        int shared = ghosts.count(SHARED);
        if (segment == ONCE) {
            onceTarget = Math.min(peakSize, onceTarget + Math.max(1.0, (double) shared / Math.max(1, once)));
        } else {
            onceTarget = Math.max(0, onceTarget - Math.max(1.0, (double) once / Math.max(1, shared)));
        }
    }

    /** Puts a node that is in no structure into the one its state calls for. */
    private void file(PolicyNode node) {
        if (!node.evictable()) {
            node.prefixState = PARKED;
        } else if (node.prefixChildren > 0) {
            node.prefixState = INNER;
        } else {
            node.prefixState = LEAF;
            leaves[node.prefixSegment].add(node);
        }
    }
}
