/**
 * Eviction policies for one tier each: priority-class LRU (the default), plain LRU and a
 * W-TinyLFU-style frequency-aware policy, all O(1) per operation over intrusive lists of
 * {@link dev.strata.cache.policy.PolicyNode}s; and the prefix-aware policy for KV blocks
 * ({@link dev.strata.cache.policy.PrefixAwarePolicy}, O(log n) over two indexed heaps), which evicts
 * only leaves of the resident prefix tree, given by nodes that implement
 * {@link dev.strata.cache.policy.PrefixNode}, and splits the tier between blocks reached by one
 * request and shared blocks with a target learned online from ghosts of recent evictions; and the
 * default for KV slots, {@link dev.strata.cache.policy.AdaptiveReachPolicy}: LRU within levels of
 * reach, O(1), adapting the room of blocks reached once and recency against frequency from the
 * evictions that come back, and evicting the dead last block of each finished prompt first.
 */
package dev.strata.cache.policy;
