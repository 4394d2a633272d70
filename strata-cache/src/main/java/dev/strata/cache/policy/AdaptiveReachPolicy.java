package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;

/**
 * The default policy for KV blocks: least recently used within three levels of reach, the order
 * between the two upper levels chosen online by whichever of two rules has regretted less.
 *
 * <p>Design note.
 * <ol>
 *   <li><b>What it keeps.</b> A block's <em>reach</em> is how many requests have used it
 *       ({@link PrefixNode#prefixReach()}; for other nodes, the insert and hits this policy saw).
 *       Reach predicts reuse: on the Mooncake trace a block reached once is used again 42% of the
 *       time, one reached twice or more 73–84% of the time, and the more requests reached it, the sooner
 *       the next one comes (median gap 3,900 block references at four or more requests against
 *       13,000 at two). So blocks sit in three LRU lists by reach: ONCE (1), WARM (2–3) and HOT
 *       (4 and more; levels double, so the lists stay few whatever the popularity).</li>
 *   <li><b>Whom it evicts.</b> ONCE goes first: a block one request has used is the tail of a
 *       prompt (a one-off document, or a new question appended to a shared one) until a second
 *       request proves otherwise, so a long one-off prompt flows through and cannot flush the
 *       shared trunks (scan resistance, as TinyLFU's admission). When ONCE is empty, two rules
 *       disagree about WARM and HOT: <em>frequency</em> says WARM's least recently used block
 *       goes before any HOT block; <em>recency</em> says the older of the two lists' least
 *       recently used blocks goes (ties to WARM). Frequency wins in small tiers, where only the
 *       hottest prefixes survive a tier turnover anyway; recency wins in large ones, where a HOT
 *       prefix whose requests have stopped would otherwise never leave.</li>
 *   <li><b>How it adapts (after LeCaR).</b> When the two rules name different victims, the one
 *       followed is recorded with the evicted key in a bounded ghost table ({@link GhostTable},
 *       at most as many ghosts per rule as the tier has held blocks). A block inserted again
 *       while its ghost is remembered was a mistake of that rule: its regret count rises. The
 *       policy follows the rule with fewer regrets (recency on a tie, i.e. at the start), so it
 *       moves to frequency as soon as recency's evictions come back more often than
 *       frequency's, and back again. The regret difference is bounded by the tier size, so a
 *       change of workload is followed within one tier's worth of mistakes.</li>
 *   <li><b>Prefix order.</b> A KV block is usable only after its parent, and every request that
 *       uses a block uses its parent, so a block is never worth more than its parent. A block that
 *       becomes evictable or is used right after its parent (the parent is the newest node of the
 *       policy, as when a request releases its blocks in prefix order) goes right behind the
 *       parent, with the parent's time, instead of in front: a finished request's blocks stand in
 *       prefix order, deepest (least likely to be shared) at the least recently used end, so the
 *       tail of a prompt leaves before its trunk and a parent is not offered before the children
 *       released with it.</li>
 * </ol>
 *
 * <p>Structure: three intrusive lists ({@link NodeList}, most recently used first) with each
 * node's logical time of last use in {@link PolicyNode#prefixValue} (non-increasing from the front
 * of each list), the parked and skipped lists of {@link AbstractPolicy}, a ghost table and one
 * regret counter. Priority classes other than ACTIVE (which flips {@link PolicyNode#evictable()})
 * do not order this policy.
 *
 * <p>Cost: O(1) per insert, access, removal, eligibility change and victim: a few list links, at
 * most three list tails compared, and one expected-O(1) ghost-table probe per insert and per
 * eviction. No allocation except when the ghost table grows (doubling), which stops once the tier
 * has filled.
 *
 * <p>Invariants: every tracked evictable node that is not skipped is in the list of its level as
 * last read; each list is ordered by {@code prefixValue}, largest first, so its last node is its
 * least recently used; the regret difference lies in {@code [-most nodes tracked, +most nodes
 * tracked]}.
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
        PolicyNode v = levels[ONCE].last();
        int by = NO_RULE;
        if (v == null) {
            PolicyNode warm = levels[WARM].last();
            PolicyNode hot = levels[HOT].last();
            if (warm == null || hot == null) {
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
        if (node == offered) {
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

    /** A new node: counts it, and charges a regret to the rule that evicted it if its ghost is remembered. */
    private void admit(PolicyNode node) {
        node.localHits = 1;
        peakSize = Math.max(peakSize, size());
        int rule = ghosts.take(node.keyHash());
        if (rule != GhostTable.NONE) {
            regrets[rule]++;
            long step = rule == RECENCY ? 1 : -1;
            regretBalance = Math.max(-peakSize, Math.min(peakSize, regretBalance + step));
        }
    }

    /**
     * Links an evictable node, in no list, into its level: right behind its parent when the parent
     * is there and was the last node placed (same time), else in front.
     */
    private void place(PolicyNode node) {
        NodeList target = levels[levelOf(node)];
        PolicyNode parent = node instanceof PrefixNode p ? p.prefixParent() : null;
        if (parent != null && parent.list == target && parent.prefixValue == clock) {
            node.prefixValue = parent.prefixValue;
            target.addAfter(parent, node);
        } else {
            node.prefixValue = ++clock;
            target.addFirst(node);
        }
    }

    /** ONCE, WARM or HOT from the requests that have reached the node (or, for other nodes, the uses seen). */
    private static int levelOf(PolicyNode node) {
        long reach = node instanceof PrefixNode p ? p.prefixReach() : node.localHits;
        return reach >= 4 ? HOT : reach >= 2 ? WARM : ONCE;
    }
}
