package dev.strata.cache.peer;

import java.util.Comparator;

/**
 * LOCALITY placement.
 *
 * <p>Design note: the nearest peer wins (smallest topology distance: a direct link such as NVLink
 * before a peer reached through the host bridge), since a fetch from it is the cheapest; among
 * peers at the same distance, best fit. The hints' {@code maxDistance} has already removed peers
 * that are too far.
 *
 * <p>Stateless; any thread.
 */
final class LocalityPlacement implements PlacementPolicy {
    static final LocalityPlacement INSTANCE = new LocalityPlacement();

    private LocalityPlacement() {
    }

    @Override
    public String name() {
        return "LOCALITY";
    }

    @Override
    public Comparator<PeerCandidate> order(long size) {
        return Comparator.comparingInt(PeerCandidate::distance).thenComparing(PlacementPolicy.bestFitOrder(size));
    }

    @Override
    public String toString() {
        return name();
    }
}
