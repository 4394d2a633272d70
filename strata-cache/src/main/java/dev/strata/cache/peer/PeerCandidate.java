package dev.strata.cache.peer;

/**
 * One peer as a {@link PlacementPolicy} sees it for one allocation: a peer that is alive, within
 * the hints' distance and latency bounds, and offers at least the requested bytes.
 *
 * <p>Immutable value; any thread.
 *
 * @param peer                  the peer's id
 * @param name                  the peer's name
 * @param distance              topology distance from the client (0 same device, 1 direct link, 2 via host)
 * @param lendableBytes         bytes the peer offers now
 * @param firstByteLatencyNanos the peer's first-byte latency, ns
 * @param recentRevocations     leases this client lost to the peer, decayed with the client's half-life
 * @param consumerBytes         bytes the requesting consumer holds on this peer now
 */
public record PeerCandidate(int peer, String name, int distance, long lendableBytes, long firstByteLatencyNanos,
                            double recentRevocations, long consumerBytes) {

    /** Lendable bytes the peer would have left after lending {@code size}. */
    public long leftoverAfter(long size) {
        return lendableBytes - size;
    }
}
