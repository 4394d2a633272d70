/**
 * Peer availability traces: how much memory each peer could lend, over time. The JSON-lines format
 * ({@link dev.strata.cache.peer.trace.AvailabilityTraceReader}, {@link dev.strata.cache.peer.trace.AvailabilityTraceWriter}),
 * the in-memory step functions ({@link dev.strata.cache.peer.trace.AvailabilityTrace}), their summary
 * ({@link dev.strata.cache.peer.trace.AvailabilityTraceStats}) and a seeded generator shaped after
 * published cluster figures ({@link dev.strata.cache.peer.trace.AvailabilityTraceGenerator}). Benchmarks
 * replay them to make peers lend and revoke as real clusters would.
 */
package dev.strata.cache.peer.trace;
