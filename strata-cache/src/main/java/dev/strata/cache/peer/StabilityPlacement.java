package dev.strata.cache.peer;

import java.util.Comparator;

/**
 * STABILITY placement.
 *
 * <p>Design note: a peer that took memory back recently is likely to do so again (its own demand
 * is churning), and every revocation costs a drain, a callback and a refetch. The peer with the
 * fewest recent revocations wins: the client counts the leases it lost to each peer (reclaimed,
 * fenced or lost) in a count that halves every half-life, so old churn is forgiven. Counts within
 * 0.05 of each other are equal; ties by best fit.
 *
 * <p>Stateless; any thread.
 */
final class StabilityPlacement implements PlacementPolicy {
    static final StabilityPlacement INSTANCE = new StabilityPlacement();
    private static final double RESOLUTION = 0.05; // decayed revocations closer than this count as equal

    private StabilityPlacement() {
    }

    @Override
    public String name() {
        return "STABILITY";
    }

    @Override
    public Comparator<PeerCandidate> order(long size) {
        return Comparator.comparingLong((PeerCandidate c) -> Math.round(c.recentRevocations() / RESOLUTION))
                .thenComparing(PlacementPolicy.bestFitOrder(size));
    }

    @Override
    public String toString() {
        return name();
    }
}
