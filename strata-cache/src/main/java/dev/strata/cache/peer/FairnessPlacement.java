package dev.strata.cache.peer;

import java.util.Comparator;

/**
 * FAIRNESS placement.
 *
 * <p>Design note: fairness between consumers (e.g. {@code kv} and {@code experts}) has two parts.
 * Admission, which the client applies under every policy: a consumer never holds more than its
 * {@link ConsumerLimits#maxBytes()} and never allocates faster than its token bucket allows. And
 * placement, this policy: the peer on which the requesting consumer holds the fewest bytes wins,
 * so each consumer's leases spread over the peers and one peer taking its memory back hurts every
 * consumer a little rather than one consumer entirely; ties by best fit.
 *
 * <p>Stateless; any thread.
 */
final class FairnessPlacement implements PlacementPolicy {
    static final FairnessPlacement INSTANCE = new FairnessPlacement();

    private FairnessPlacement() {
    }

    @Override
    public String name() {
        return "FAIRNESS";
    }

    @Override
    public Comparator<PeerCandidate> order(long size) {
        return Comparator.comparingLong(PeerCandidate::consumerBytes).thenComparing(PlacementPolicy.bestFitOrder(size));
    }

    @Override
    public String toString() {
        return name();
    }
}
