/**
 * Memory lent by peers (other devices or processes) as a revocable tier: leases with epochs
 * ({@link dev.strata.cache.peer.PeerLease}), the client API ({@link dev.strata.cache.peer.PeerMemory}),
 * the transport to a lending agent ({@link dev.strata.cache.peer.PeerLender}), and revocation with
 * drain and fencing. See DESIGN.md invariant 4: no access through a revoked lease succeeds, and
 * in-flight transfers on a lease are drained before its memory is released.
 */
package dev.strata.cache.peer;
