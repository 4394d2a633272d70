package dev.strata.engine.schedule;

/** How the scheduler frees KV blocks when a running sequence cannot grow. */
public enum PreemptionMode {
    /**
     * The victim's KV is swapped out through the manager ({@code KvBlockManager.preempt}: committed
     * blocks offloaded to its store when it has one) and loaded back on resume; whatever did not
     * come back, and the uncommitted tail, is recomputed.
     */
    SWAP,
    /**
     * The victim's sequence is released (its committed blocks stay cached while nobody needs their
     * slots) and re-prefilled from its prompt and generated tokens on resume, hitting whatever of
     * its prefix is still cached.
     */
    RECOMPUTE
}
