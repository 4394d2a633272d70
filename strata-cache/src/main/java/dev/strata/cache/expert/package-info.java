/**
 * The MoE expert pager: a working set of experts in DEVICE slots over masters in HOST or DISK,
 * the {@code expert_map} indirection the engine computes with, pluggable eviction policies
 * (per-layer LRU, a shared pool, LFU with aging), token grouping for batches whose expert union
 * exceeds the slots, per-layer hit and fetch metrics, and resizing at drained barriers for the
 * expert/KV split.
 */
package dev.strata.cache.expert;
