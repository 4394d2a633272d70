/**
 * Memory lent across processes: the {@code strata peer} agent ({@link dev.strata.node.peer.PeerAgent})
 * owns a budget, lends what its own demand ({@link dev.strata.node.peer.DemandSignal}) leaves free
 * through a shared-memory lending file ({@link dev.strata.node.peer.LendingFileLayout}), revokes
 * regions when its demand rises and fences borrowers that miss their deadline;
 * {@link dev.strata.node.peer.ShmPeerLender} is the client side, a
 * {@link dev.strata.cache.peer.PeerLender} over that file. invariant 4 of docs/ARCHITECTURE.md: no access
 * through a revoked lease succeeds, and accesses under way are drained before the memory is
 * reused.
 */
package dev.strata.node.peer;
