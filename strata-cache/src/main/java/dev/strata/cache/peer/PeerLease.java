package dev.strata.cache.peer;

/**
 * A lease on a region of memory lent by a peer: the peer's id, the region's id at that peer, its
 * size in bytes and the epoch the region had when it was lent.
 *
 * <p>The epoch names this lending of the region: when the peer takes the region back, or fences a
 * client that did not give it back in time, the region's epoch advances, and every later access
 * through a lease carrying the old epoch fails (invariant 4 of docs/ARCHITECTURE.md). A region id alone is
 * therefore never enough to reach memory; the pair (region, epoch) is. A lender that re-attaches to
 * a restarted agent keeps the pairs unique across the agents (the new agent's epochs start again),
 * so a lease of a dead agent never names memory of its successor.
 *
 * <p>Immutable value; any thread.
 *
 * @param peer   the lending peer's id, unique among the peers one client sees
 * @param region the region's id at that peer
 * @param size   bytes in the region
 * @param epoch  the region's epoch when lent; positive
 */
public record PeerLease(int peer, long region, long size, long epoch) {
    public PeerLease {
        if (peer < 0 || region < 0 || size <= 0 || epoch <= 0) {
            throw new IllegalArgumentException("lease needs peer >= 0, region >= 0, size > 0 and epoch > 0; got peer "
                    + peer + ", region " + region + ", size " + size + ", epoch " + epoch);
        }
    }

    @Override
    public String toString() {
        return "lease(peer " + peer + ", region " + region + ", " + size + " bytes, epoch " + epoch + ")";
    }
}
