/**
 * Peer availability traces: how much memory each peer could lend, over time. The JSON-lines format
 * ({@link dev.strata.cache.peer.trace.AvailabilityTraceReader}, {@link dev.strata.cache.peer.trace.AvailabilityTraceWriter}),
 * and the in-memory step functions ({@link dev.strata.cache.peer.trace.AvailabilityTrace}) a peer
 * agent replays as its demand. Benchmarks replay them to make peers lend and revoke as real clusters
 * would; the generator and the summary are offline tools (strata-analysis, package {@code analysis.peer}).
 */
package dev.strata.cache.peer.trace;
