/**
 * Offline tools for peer availability traces ({@code strata peer-trace}): a seeded generator shaped
 * after published cluster figures ({@link dev.strata.analysis.peer.AvailabilityTraceGenerator}) and a
 * summary of a trace's utilisation and reclaims ({@link dev.strata.analysis.peer.AvailabilityTraceStats}).
 * The format, its reader and writer, and the in-memory trace a peer agent replays stay in the runtime
 * ({@code dev.strata.cache.peer.trace}).
 */
package dev.strata.analysis.peer;
