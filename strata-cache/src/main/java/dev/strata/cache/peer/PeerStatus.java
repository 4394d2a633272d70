package dev.strata.cache.peer;

/**
 * One peer as a client sees it now.
 *
 * <p>Immutable value; any thread.
 *
 * @param peer          the peer's id
 * @param name          a human name, e.g. {@code gpu1} or the agent's file name
 * @param distance      topology distance from this client (0 = same device, 1 = direct link, 2 = via host)
 * @param lendableBytes bytes the peer offers to lend now
 * @param borrowedBytes bytes this client holds on the peer now
 * @param revocations   leases this client lost to the peer (reclaimed, fenced or lost) so far
 * @param alive         false once the peer is known dead or unreachable
 */
public record PeerStatus(int peer, String name, int distance, long lendableBytes, long borrowedBytes,
                         long revocations, boolean alive) {
}
