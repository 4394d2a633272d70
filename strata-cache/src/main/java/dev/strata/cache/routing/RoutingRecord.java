package dev.strata.cache.routing;

/**
 * One record of a routing trace, in trace order: a forward pass's routing ({@link RoutingStep}),
 * the start of a request within a session ({@link RequestStart}) or the start of a burst
 * ({@link BurstStart}). Records are immutable; any thread.
 */
public sealed interface RoutingRecord permits RoutingStep, RequestStart, BurstStart {
}
