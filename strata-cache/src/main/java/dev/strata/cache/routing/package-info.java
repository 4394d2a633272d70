/**
 * Routing traces: the experts a MoE model's routers chose, per step, per layer, per token, with
 * request and burst boundaries, in a compact binary file ({@link dev.strata.cache.routing.RoutingTraceFormat},
 * {@link dev.strata.cache.routing.RoutingTraceWriter}, {@link dev.strata.cache.routing.RoutingTraceReader})
 * and a JSON-lines text form for small hand-written traces ({@link dev.strata.cache.routing.RoutingTraceText}).
 * The engine records traces; the offline tools of strata-analysis (statistics, miss curves, the
 * co-activation predictor) and the benchmarks replay them.
 */
package dev.strata.cache.routing;
