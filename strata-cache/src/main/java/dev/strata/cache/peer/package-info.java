/**
 * Memory lent by peers (other devices or processes) as a revocable tier: leases with epochs
 * ({@link dev.strata.cache.peer.PeerLease}), the client API ({@link dev.strata.cache.peer.PeerMemory}),
 * the transport to a lending agent ({@link dev.strata.cache.peer.PeerLender}), and revocation with
 * drain and fencing. See invariant 4 of docs/ARCHITECTURE.md: no access through a revoked lease succeeds, and
 * in-flight transfers on a lease are drained before its memory is released.
 *
 * <p>{@link dev.strata.cache.peer.PeerClient} is the client over any lenders (placement by a
 * {@link dev.strata.cache.peer.PlacementPolicy}, per-consumer views with
 * {@link dev.strata.cache.peer.ConsumerLimits}, drained exactly-once revocation callbacks,
 * {@link dev.strata.cache.peer.PeerClientStats}); {@link dev.strata.cache.peer.LocalLender} is an
 * in-process lender and agent over one arena. {@link dev.strata.cache.peer.LendingRule} is the
 * rule every lender (this one and the cross-process peer agent) offers and asks back by.
 */
package dev.strata.cache.peer;
