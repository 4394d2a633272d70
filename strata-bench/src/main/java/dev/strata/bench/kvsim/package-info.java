/**
 * Trace-driven simulation of KV prefix caching across tiers: a streaming reader for Mooncake-format
 * request traces ({@link dev.strata.cache.kv.trace.MooncakeTraceReader}), the replay simulator that
 * drives Strata's real eviction policies over DEVICE → HOST → DISK
 * ({@link dev.strata.bench.kvsim.KvReplaySimulator}), Bélády's optimum as the upper bound
 * ({@link dev.strata.bench.kvsim.BeladyBound}), a synthetic prefix-trace generator and the
 * benchmark measure that reports each policy as a fraction of the optimum.
 */
package dev.strata.bench.kvsim;

