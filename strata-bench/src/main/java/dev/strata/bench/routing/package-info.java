/**
 * Workload generators for the expert and KV streams: synthetic routing traces with skew, burst
 * locality, drift and co-activation structure ({@link dev.strata.bench.routing.RoutingTraceGenerator}),
 * their statistics ({@link dev.strata.bench.routing.RoutingTraceStats}), and KV-block reference
 * streams ({@link dev.strata.bench.routing.SyntheticKvBlockStream},
 * {@link dev.strata.bench.routing.MooncakeKvBlockStream}).
 */
package dev.strata.bench.routing;
