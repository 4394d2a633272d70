/**
 * Modelled multi-instance trace replay for request routing: {@link dev.strata.bench.route.RoutingReplay}
 * sends each request of a prefix trace to one of several engine instances through a real
 * {@link dev.strata.node.route.Router}, with a local KV cache per instance and optionally a shared
 * POOL tier, and a FIFO time model per instance; {@link dev.strata.bench.route.RoutingReplayMeasure}
 * turns four arms (cache-aware or load-only routing, with or without the pool) into figures.
 */
package dev.strata.bench.route;
