package dev.strata.cache.peer;

import java.util.Comparator;

/**
 * BEST_FIT placement.
 *
 * <p>Design note: the peer left with the fewest lendable bytes after the allocation wins (all
 * candidates offer at least the size, so the leftover is never negative). Packing small leases
 * onto nearly full peers keeps the large free offers whole for large requests, the way a best-fit
 * allocator keeps large free ranges. Ties go to the lower peer id.
 *
 * <p>Stateless; any thread.
 */
final class BestFitPlacement implements PlacementPolicy {
    static final BestFitPlacement INSTANCE = new BestFitPlacement();

    private BestFitPlacement() {
    }

    @Override
    public String name() {
        return "BEST_FIT";
    }

    @Override
    public Comparator<PeerCandidate> order(long size) {
        return PlacementPolicy.bestFitOrder(size);
    }

    @Override
    public String toString() {
        return name();
    }
}
