/**
 * Offline analysis of expert and KV reference streams: synthetic routing traces with skew, burst
 * locality, drift and co-activation structure ({@link dev.strata.analysis.routing.RoutingTraceGenerator},
 * {@code strata trace generate}), their statistics ({@link dev.strata.analysis.routing.RoutingTraceStats},
 * {@code strata trace stats}), exact per-layer and shared miss curves of a routing trace
 * ({@link dev.strata.analysis.routing.RoutingReuseDistances}), the co-activation predictor and its
 * precision ({@link dev.strata.analysis.routing.CoActivationPredictor}), and KV-block reference
 * streams ({@link dev.strata.analysis.routing.SyntheticKvBlockStream},
 * {@link dev.strata.analysis.routing.MooncakeKvBlockStream}). The trace format itself is the
 * runtime's ({@code dev.strata.cache.routing}).
 */
package dev.strata.analysis.routing;
