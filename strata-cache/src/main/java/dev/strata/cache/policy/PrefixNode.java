package dev.strata.cache.policy;

/**
 * The prefix structure of a KV block, as a {@link PolicyNode} may expose it to a prefix-aware
 * policy ({@link PrefixAwarePolicy}). Optional: a node that does not implement it is treated as a
 * prefix of its own (no parent, no children) whose reach is counted by the policy from hits.
 *
 * <p>A KV block is the K and V of one fixed-size run of tokens; its key chains the keys of every
 * block before it, so block {@code i} of a sequence can only be used when blocks {@code 0..i-1}
 * are available. The blocks therefore form a tree (the prefix tree): a block's <em>parent</em> is
 * the block before it, its <em>children</em> are the distinct blocks that have followed it.
 *
 * <p>Contract, per tier (each tier has its own policy and its own nodes):
 * <ul>
 *   <li>{@link #prefixParent()}: the parent block's node <em>in the same tier</em>, or null when
 *       the block starts a sequence or its parent has no copy in this tier. It is read at
 *       {@code onInsert} and at {@code onRemove} of this node (and, by {@link AdaptiveReachPolicy},
 *       at {@code onAccess} and on becoming evictable again), and must name the parent exactly
 *       when the parent's copy is tracked by the tier's policy at that moment.</li>
 *   <li>{@link #residentPrefixChildren()}: how many children of this block have a copy in the same
 *       tier that the tier's policy tracks at the moment of {@code onInsert} of this node (children
 *       that arrived first, e.g. demoted before their parent). Read only at {@code onInsert}; from
 *       then on the policy counts children itself, from their own {@code onInsert}/{@code onRemove}.</li>
 *   <li>{@link #prefixReach()}: how many requests have reached this block so far (a hit or the
 *       prefill that wrote it each count once), across all tiers; at least 1. It never exceeds the
 *       parent's reach, since every request that reaches a block reaches its parent. Read at
 *       {@code onInsert}, {@code onAccess} and on becoming evictable again.</li>
 * </ul>
 *
 * <p>Threads: called by the policy under the store's lock; implementations read the block
 * manager's state guarded by the same lock.
 */
public interface PrefixNode {

    /** The parent block's node in the same tier, or null (a root, or the parent is not in this tier). */
    PolicyNode prefixParent();

    /** Children of this block with a copy tracked in the same tier now (read at insert). */
    int residentPrefixChildren();

    /** Requests that have reached this block so far, at least 1. */
    long prefixReach();
}
