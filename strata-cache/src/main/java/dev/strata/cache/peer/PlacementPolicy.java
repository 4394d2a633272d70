package dev.strata.cache.peer;

import java.util.Comparator;
import java.util.Locale;

/**
 * Chooses which peer lends the memory for one allocation of a {@link PeerClient}.
 *
 * <p>Design note. A policy only orders peers; everything else is the client's. For each
 * {@code alloc(size, hints)} the client (1) refuses at once if the consumer's
 * {@link ConsumerLimits} (byte cap, token-bucket rate) would be exceeded, (2) builds one
 * {@link PeerCandidate} per peer that is alive, within {@code hints.maxDistance()}, within
 * {@code hints.latencyBoundNanos()} and offers at least {@code size}, (3) puts the hinted preferred
 * peer first when it is a candidate and orders the rest with {@link #order}, and (4) borrows from
 * each in turn until one lends (a peer's offer is advisory, so a borrow may still fail). Policies
 * are therefore stateless and pure: what they weigh (lendable bytes, distance, decayed revocation
 * counts, the consumer's bytes per peer) comes in the candidates, computed by the client under its
 * lock. Every policy ends its order with the best fit and then the peer id, so choices are
 * deterministic.
 *
 * <p>Threads: any; implementations hold no mutable state.
 */
public interface PlacementPolicy {

    /**
     * The policy a client uses unless told otherwise, by the name {@link #named} accepts:
     * {@code stability}. Lent memory comes back when its owner needs it, and a peer whose demand
     * churns takes it back again and again; every revocation costs a drain, a callback and, for a
     * LOSSY object, a recomputation. Fewest recent revocations first loses about a quarter fewer
     * KV blocks than best fit under the same churn (the churn replay of {@code strata bench peer}),
     * and where no peer has revoked it is best fit.
     */
    String DEFAULT_NAME = "stability";

    /** The policy's name as {@link #named} accepts it, e.g. {@code BEST_FIT}. */
    String name();

    /** Orders candidates for an allocation of {@code size} bytes, best first. */
    Comparator<PeerCandidate> order(long size);

    /** Least leftover lendable bytes after the allocation (the Harvest prototype's rule). */
    static PlacementPolicy bestFit() {
        return BestFitPlacement.INSTANCE;
    }

    /** Smallest topology distance, ties by best fit. */
    static PlacementPolicy locality() {
        return LocalityPlacement.INSTANCE;
    }

    /** Fewest bytes of the requesting consumer on the peer (spreads each consumer), ties by best fit. */
    static PlacementPolicy fairness() {
        return FairnessPlacement.INSTANCE;
    }

    /** Fewest recent revocations (decayed), ties by best fit. */
    static PlacementPolicy stability() {
        return StabilityPlacement.INSTANCE;
    }

    /** The policy called {@link #DEFAULT_NAME}. */
    static PlacementPolicy defaultPolicy() {
        return named(DEFAULT_NAME);
    }

    /**
     * The policy called {@code name}: {@code BEST_FIT}, {@code LOCALITY}, {@code FAIRNESS} or
     * {@code STABILITY}, in any case, with {@code -} or {@code _}.
     *
     * @throws IllegalArgumentException naming the value and the accepted names
     */
    static PlacementPolicy named(String name) {
        String key = name == null ? "" : name.trim().toUpperCase(Locale.ROOT).replace('-', '_');
        return switch (key) {
            case "BEST_FIT" -> bestFit();
            case "LOCALITY" -> locality();
            case "FAIRNESS" -> fairness();
            case "STABILITY" -> stability();
            default -> throw new IllegalArgumentException("unknown peer placement policy '" + name
                    + "'; expected one of BEST_FIT, LOCALITY, FAIRNESS, STABILITY");
        };
    }

    /** Best fit, then peer id: the tie-break every policy ends with. */
    static Comparator<PeerCandidate> bestFitOrder(long size) {
        return Comparator.comparingLong((PeerCandidate c) -> c.leftoverAfter(size)).thenComparingInt(PeerCandidate::peer);
    }
}
