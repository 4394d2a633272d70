/**
 * Trace-driven simulation of KV prefix caching across tiers: the replay simulator that drives
 * Strata's real eviction policies over DEVICE → HOST → DISK
 * ({@link dev.strata.analysis.kvsim.KvReplaySimulator}, {@code strata simulate}), its multi-machine
 * form behind a shared CLUSTER tier ({@link dev.strata.analysis.kvsim.ClusterReplaySimulator},
 * {@code strata simulate kv --machines}), Bélády's optimum
 * as the upper bound ({@link dev.strata.analysis.kvsim.BeladyBound}), the interned trace both replay
 * ({@link dev.strata.analysis.kvsim.PrefixTrace}, read through
 * {@link dev.strata.analysis.kvtrace.MooncakeTraceReader}) and a synthetic prefix-trace generator.
 */
package dev.strata.analysis.kvsim;
