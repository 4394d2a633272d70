package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;

/**
 * The default policy for KV blocks: least recently used within three levels of reach, with an
 * adaptive share for blocks reached once, the order between the two upper levels chosen online by
 * whichever of two rules has regretted less, and the dead tail of each finished prompt first.
 *
 * <p>Design note.
 * <ol>
 *   <li><b>What it keeps.</b> A block's <em>reach</em> is how many requests have used it
 *       ({@link PrefixNode#prefixReach()}; for other nodes, the insert and hits this policy saw).
 *       Reach predicts reuse: on the Mooncake traces a block reached once is used again 24–42% of
 *       the time, one reached twice or more 42–96% of the time, and the more requests reached it,
 *       the sooner the next one comes. So blocks sit in three LRU lists by reach: ONCE (1), WARM
 *       (2–3) and HOT (4 and more; levels double, so the lists stay few whatever the
 *       popularity).</li>
 *   <li><b>How much room ONCE gets (after ARC).</b> A block one request has used is the tail of a
 *       prompt (a one-off document, or a new question appended to a shared one) until a second
 *       request proves otherwise, so ONCE gives the victim while it holds more candidates than its
 *       <em>target</em>: a long one-off prompt flows through and cannot flush the shared trunks
 *       (scan resistance). But in a chat each open conversation's newest turn is reached once
 *       until the next turn re-reads it, and a large tier that always empties ONCE first keeps
 *       stale shared blocks instead of those turns. The target is learned from mistakes: every
 *       eviction leaves a ghost (key hash and side, ONCE or upper) in a bounded table; a block
 *       inserted again while its ONCE ghost is remembered raises the target, one whose upper
 *       ghost is remembered lowers it, by one block or by the ratio of the other side's ghosts to
 *       this side's if larger (ARC's rule: the rarer regret weighs more), within
 *       {@code [0, the tier's size]}. It starts at 0, as ARC's does: reached-once blocks go first
 *       until one of them comes back.</li>
 *   <li><b>Whom the upper levels give (after LeCaR).</b> When ONCE is at or under its target, two
 *       rules disagree about WARM and HOT: <em>frequency</em> says WARM's least recently used block
 *       goes before any HOT block; <em>recency</em> says the older of the two lists' least
 *       recently used blocks goes (ties to WARM). When they name different victims, the one
 *       followed is recorded with the evicted key in a second ghost table; a block inserted again
 *       while its ghost is remembered was a mistake of that rule, and the policy follows the rule
 *       with fewer regrets (recency on a tie, i.e. at the start). The regret difference is bounded
 *       by the tier size, so a change of workload is followed within one tier's worth of
 *       mistakes.</li>
 *   <li><b>Prefix order.</b> A KV block is usable only after its parent, and every request that
 *       uses a block uses its parent, so a block is never worth more than its parent. A block that
 *       becomes evictable or is used right after its parent (the parent is the newest node of the
 *       policy, as when a request releases its blocks in prefix order) goes right behind the
 *       parent, with the parent's time, instead of in front: a finished request's blocks stand in
 *       prefix order, deepest at the least recently used end, so the tail of a prompt leaves
 *       before its trunk and a parent is not offered before the children released with it.</li>
 *   <li><b>The dead tail.</b> The deepest block of a finished prompt, when no other request has
 *       reached it, is almost never used again (95–99% on the Mooncake traces): its tokens end
 *       where the prompt ended, usually part-way through a block, so the next turn of the
 *       conversation extends the prompt into a <em>different</em> block and shares only the
 *       blocks before it. A request's blocks become evictable in a row, root first or deepest
 *       first (a <em>run</em>: each block placed is the child or the parent of the one before).
 *       When the run ends (a block placed continues it in neither way, or a victim is asked for)
 *       and its deepest block is in ONCE with its parent a candidate, that block moves to ONCE's
 *       least recently used end, taking the time of the block there: it leaves first, and its
 *       parent, which the next turn does share, keeps its place. (A root or a node without
 *       prefix structure keeps its place.)</li>
 * </ol>
 *
 * <p>Structure: three intrusive lists ({@link NodeList}, most recently used first) with each
 * node's logical time of last use in {@link PolicyNode#prefixValue} (non-increasing from the front
 * of each list), the parked and skipped lists of {@link AbstractPolicy}, two ghost tables, one
 * regret counter, the target of ONCE, and the last node placed and the deepest of its run.
 * Priority classes other than ACTIVE (which flips {@link PolicyNode#evictable()}) do not order
 * this policy.
 *
 * <p>Cost: O(1) per insert, access, removal, eligibility change and victim: a few list links, at
 * most three list tails compared, and expected-O(1) ghost-table probes (two per insert and per
 * eviction). No allocation except when a ghost table grows (doubling), which stops once the tier
 * has filled; each table holds at most as many ghosts per side as the tier has held blocks.
 *
 * <p>Invariants: every tracked evictable node that is not skipped is in the list of its level as
 * last read; each list is ordered by {@code prefixValue}, largest first, so its last node is its
 * least recently used; the regret difference lies in {@code [-most nodes tracked, +most nodes
 * tracked]}; the target of ONCE lies in {@code [0, most nodes tracked]}.
 *
 * <p>Threads: not thread-safe; guarded by the store's lock.
 */
public final class AdaptiveReachPolicy extends AbstractPolicy {
    static final int ONCE = 0; // level: reached by one request
    static final int WARM = 1; // level: reached by 2 or 3 requests
    static final int HOT = 2; // level: reached by 4 or more requests
    static final int RECENCY = 0; // rule: the older of WARM's and HOT's least recently used
    static final int FREQUENCY = 1; // rule: WARM's least recently used before HOT's
    private static final int NO_RULE = -1; // the rules agreed, or ONCE gave the victim

    private final NodeList[] levels = {new NodeList("once"), new NodeList("warm"), new NodeList("hot")}; // [level]
    private final GhostTable ghosts = new GhostTable(); // evicted keys by the rule that chose them
    private final GhostTable sides = new GhostTable(); // evicted keys by side: ONCE (0) or upper (1)
    private double onceTarget; // blocks ONCE may hold before it stops giving victims, in [0, peakSize]
    private PolicyNode lastPlaced; // the last node placed, while its run goes on
    private PolicyNode runTail; // the deepest node of the run being placed (a request's blocks released in a row)
    private long regretBalance; // recency's regrets minus frequency's, in [-peakSize, peakSize]
    private final long[] regrets = new long[2]; // [rule] mistakes counted (for reports and tests)
    private int peakSize; // most nodes tracked at once: the tier's capacity once it has filled
    private PolicyNode offered; // the last victim(); its removal is an eviction
    private int offeredBy = NO_RULE; // the rule that chose it when the rules disagreed
    private long clock; // logical time, one tick per insert or use

    @Override
    public String name() {
        return "adaptive-reach";
    }

    /** The rule now followed when the rules disagree: {@link #RECENCY} or {@link #FREQUENCY} (for tests and reports). */
    public int rule() {
        return regretBalance > 0 ? FREQUENCY : RECENCY;
    }

    /** Mistakes counted for {@code rule} so far (for tests and reports). */
    public long regrets(int rule) {
        return regrets[rule];
    }

    /** The adaptive target of ONCE, in blocks (for tests and reports). */
    public double onceTarget() {
        return onceTarget;
    }

    /** Nodes in {@code level} (ONCE 0, WARM 1, HOT 2) that are candidates now (for tests). */
    int levelSize(int level) {
        return levels[level].size();
    }

    /** For tests: every level list is ordered by time of last use, newest first; throws naming the list that is not. */
    void checkOrder() {
        for (NodeList l : levels) {
            long previous = Long.MAX_VALUE;
            for (PolicyNode n = l.first(); n != null; n = n.next.list == l ? n.next : null) {
                if (n.prefixValue > previous) {
                    throw new IllegalStateException("list '" + l.name() + "' is out of time order at " + n);
                }
                previous = n.prefixValue;
            }
        }
    }

    @Override
    protected void insertEvictable(PolicyNode node) {
        admit(node);
        place(node);
    }

    @Override
    protected NodeList homeForNew(PolicyNode node) {
        admit(node);
        return levels[levelOf(node)]; // unused: unpark files by the level then
    }

    @Override
    protected void unpark(PolicyNode node) {
        place(node); // becoming evictable again counts as a use
    }

    @Override
    public void onAccess(PolicyNode node) {
        node.localHits++;
        NodeList l = node.list;
        if (l != parked && l != skipped && l != null) {
            l.remove(node);
            place(node);
        }
    }

    @Override
    public void onPriorityChange(PolicyNode node, PriorityClass previous) {
        // classes other than ACTIVE do not order this policy
    }

    @Override
    public PolicyNode victim() {
        endRun();
        PolicyNode v = levels[ONCE].size() > onceTarget ? levels[ONCE].last() : null;
        int by = NO_RULE;
        if (v == null) {
            PolicyNode warm = levels[WARM].last();
            PolicyNode hot = levels[HOT].last();
            if (warm == null && hot == null) {
                v = levels[ONCE].last(); // ONCE at or under its target, but nothing else to give
            } else if (warm == null || hot == null) {
                v = warm != null ? warm : hot;
            } else if (warm.prefixValue <= hot.prefixValue) {
                v = warm; // both rules name WARM's
            } else {
                by = rule();
                v = by == FREQUENCY ? warm : hot;
            }
        }
        offered = v;
        offeredBy = v == null ? NO_RULE : by;
        return v;
    }

    @Override
    protected void removing(PolicyNode node) {
        if (node == lastPlaced) {
            lastPlaced = null;
        }
        if (node == runTail) {
            runTail = null;
        }
        if (node == offered) {
            sides.record(node.keyHash(), node.list == levels[ONCE] ? ONCE : 1, peakSize);
            if (offeredBy != NO_RULE) {
                ghosts.record(node.keyHash(), offeredBy, peakSize);
            }
            offered = null;
            offeredBy = NO_RULE;
        }
    }

    @Override
    protected void skipped(PolicyNode node) {
        offered = null;
        offeredBy = NO_RULE;
    }

    /**
     * A new node: counts it; if it was evicted lately, moves the target of ONCE towards the side
     * that evicted it and charges a regret to the rule that chose it.
     */
    private void admit(PolicyNode node) {
        node.localHits = 1;
        peakSize = Math.max(peakSize, size());
        int side = sides.take(node.keyHash());
        if (side != GhostTable.NONE) {
            int once = sides.count(ONCE);
            int upper = sides.count(1);
            if (side == ONCE) {
                onceTarget = Math.min(peakSize, onceTarget + Math.max(1.0, (double) upper / Math.max(1, once)));
            } else {
                onceTarget = Math.max(0, onceTarget - Math.max(1.0, (double) once / Math.max(1, upper)));
            }
        }
        int rule = ghosts.take(node.keyHash());
        if (rule != GhostTable.NONE) {
            regrets[rule]++;
            long step = rule == RECENCY ? 1 : -1;
            regretBalance = Math.max(-peakSize, Math.min(peakSize, regretBalance + step));
        }
    }

    /**
     * Links an evictable node, in no list, into its level: right behind its parent when the parent
     * is there and was the last node placed (same time), else in front. A node that is the child
     * or the parent of the last node placed continues the current run (a request's blocks
     * released root first or deepest first); any other node ends it and starts a new one.
     */
    private void place(PolicyNode node) {
        NodeList target = levels[levelOf(node)];
        PolicyNode parent = node instanceof PrefixNode p ? p.prefixParent() : null;
        if (parent != null && parent == lastPlaced) {
            runTail = node; // the run goes one block deeper
        } else if (!(lastPlaced instanceof PrefixNode last && last.prefixParent() == node)) {
            endRun(); // not the parent of the last one placed either: a new run
            runTail = node;
        }
        if (parent != null && parent.list == target && parent.prefixValue == clock) {
            node.prefixValue = parent.prefixValue;
            target.addAfter(parent, node);
        } else {
            node.prefixValue = ++clock;
            target.addFirst(node);
        }
        lastPlaced = node;
    }

    /**
     * Ends the current run: its deepest block, if still a candidate of ONCE whose parent is a
     * candidate too, is a finished prompt's dead tail and moves to ONCE's least recently used end
     * with the time of the block there. A block without a candidate parent (a root, a node without
     * prefix structure) keeps its place; a tail's children, if any, were reached by the same one
     * request and so belong to its run, so no parent is put behind its child.
     */
    private void endRun() {
        PolicyNode tail = runTail;
        runTail = null;
        lastPlaced = null;
        NodeList once = levels[ONCE];
        if (tail == null || tail.list != once || tail == once.last() || !(tail instanceof PrefixNode p)) {
            return;
        }
        PolicyNode parent = p.prefixParent();
        if (parent != null && isLevel(parent.list)) {
            once.remove(tail);
            tail.prefixValue = once.last().prefixValue;
            once.addLast(tail);
        }
    }

    private boolean isLevel(NodeList list) {
        return list == levels[ONCE] || list == levels[WARM] || list == levels[HOT];
    }

    /** ONCE, WARM or HOT from the requests that have reached the node (or, for other nodes, the uses seen). */
    private static int levelOf(PolicyNode node) {
        long reach = node instanceof PrefixNode p ? p.prefixReach() : node.localHits;
        return reach >= 4 ? HOT : reach >= 2 ? WARM : ONCE;
    }
}
