package dev.strata.cache.peer;

import dev.strata.memory.metrics.PrometheusText;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * Exports {@link PeerTier}s as the Prometheus families {@code strata_peer_tier_*}, one sample per
 * tier labelled {@code tier} (its name): the lease counters of {@link PeerTier.Counters} and the
 * gauges of borrowed and allocated bytes.
 *
 * <p>Stateless; any thread (each tier's counters are read once per family, so one render is not
 * a consistent snapshot across families).
 */
public final class PeerTierMetrics {

    /** One exported family: name, type, help and how a tier gives its value. */
    private record Family(String name, PrometheusText.Type type, String help, ToLongFunction<PeerTier> value) {
    }

    private static final List<Family> FAMILIES = List.of(
            counter("strata_peer_tier_leases_borrowed_total", "Leases the PEER tier borrowed", t -> t.counters().leasesBorrowed()),
            counter("strata_peer_tier_leases_returned_total", "Leases the PEER tier gave back (empty, or at close)",
                    t -> t.counters().leasesReturned()),
            counter("strata_peer_tier_leases_revoked_total", "Leases the peers took back (reclaimed, fenced or lost)",
                    t -> t.counters().leasesRevoked()),
            counter("strata_peer_tier_handles_revoked_total", "Allocations that were live on revoked leases",
                    t -> t.counters().handlesRevoked()),
            counter("strata_peer_tier_borrow_failures_total", "Times no peer could lend a chunk when one was needed",
                    t -> t.counters().borrowFailures()),
            counter("strata_peer_tier_lost_writes_total", "Writes that stored nothing because the lease had ended",
                    t -> t.counters().lostWrites()),
            new Family("strata_peer_tier_borrowed_bytes", PrometheusText.Type.GAUGE, "Bytes the PEER tier borrows now",
                    PeerTier::borrowedBytes),
            new Family("strata_peer_tier_used_bytes", PrometheusText.Type.GAUGE, "Bytes allocated in the PEER tier now",
                    PeerTier::used));

    private PeerTierMetrics() {
    }

    private static Family counter(String name, String help, ToLongFunction<PeerTier> value) {
        return new Family(name, PrometheusText.Type.COUNTER, help, value);
    }

    /** Appends the {@code strata_peer_tier_*} families of {@code tiers} to {@code out}; nothing when there are none. */
    public static void writeTo(PrometheusText out, List<PeerTier> tiers) {
        if (tiers.isEmpty()) {
            return;
        }
        for (Family f : FAMILIES) {
            out.family(f.name(), f.type(), f.help());
            for (PeerTier t : tiers) {
                out.sample(f.name(), f.value().applyAsLong(t), "tier", t.name());
            }
        }
    }
}
