/**
 * Eviction policies for one tier each: priority-class LRU (the default), plain LRU and a
 * W-TinyLFU-style frequency-aware policy, all O(1) per operation over intrusive lists of
 * {@link dev.strata.cache.policy.PolicyNode}s.
 */
package dev.strata.cache.policy;
