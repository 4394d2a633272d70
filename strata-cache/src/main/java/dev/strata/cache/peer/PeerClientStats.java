package dev.strata.cache.peer;

import dev.strata.memory.metrics.PrometheusText;
import java.util.List;
import java.util.Locale;

/**
 * A snapshot of a {@link PeerClient}'s counters (since it was created) and gauges, per peer and per
 * consumer. {@link #writeTo} renders them in the Prometheus text format ({@code strata_peer_*}).
 *
 * <p>Immutable; any thread.
 *
 * @param peers            one entry per peer, in the client's order
 * @param consumers        one entry per consumer, in registration order
 * @param allocMisses      allocations no peer could serve (no candidate, or every borrow refused)
 * @param callbackFailures revocation callbacks that threw (logged and otherwise ignored)
 * @param abandonedCopies  reads and writes that stopped part-way because their lease's revocation
 *                         began ({@link PeerClient#COPY_STEP_BYTES}); each returned false
 */
public record PeerClientStats(List<Peer> peers, List<Consumer> consumers, long allocMisses, long callbackFailures,
                              long abandonedCopies) {

    public PeerClientStats {
        peers = List.copyOf(peers);
        consumers = List.copyOf(consumers);
    }

    /**
     * One peer.
     *
     * @param peer              id
     * @param name              name
     * @param distance          topology distance
     * @param alive             false once the peer is lost
     * @param lendableBytes     bytes the peer offers now
     * @param borrowedBytes     bytes this client holds on the peer (sum of live lease sizes)
     * @param leases            live leases on the peer
     * @param allocs            successful borrows
     * @param failedAllocs      borrows the peer refused although it was a candidate
     * @param reclaimed         leases ended by RECLAIMED
     * @param fenced            leases ended by FENCED
     * @param lost              leases ended by PEER_LOST
     * @param lateFences        fences of leases already ended by a RECLAIMED callback (acknowledged too late)
     * @param recentRevocations decayed revocation count (what STABILITY weighs)
     * @param drainCount        drains measured
     * @param drainP50Nanos     median time from a revocation event to the last access ending, ns
     * @param drainP99Nanos     99th percentile, ns
     * @param drainMaxNanos     largest, ns
     * @param callbackP50Nanos  median time from a revocation event to its callbacks starting, ns
     * @param callbackP99Nanos  99th percentile, ns
     * @param callbackMaxNanos  largest, ns
     * @param reattachments     times the peer, once lost, lent again (its agent restarted or recovered)
     * @param revokeToCallbackCount reclaimed leases whose time from the lender's revocation to the callbacks was measured
     * @param revokeToCallbackP50Nanos median time from the lender revoking a lease (its own clock reading, passed
     *                          with the revocation) to the lease's callbacks starting here, ns
     * @param revokeToCallbackP99Nanos 99th percentile, ns
     * @param revokeToCallbackMaxNanos largest, ns
     * @param reclaimsOfFreed   reclaims that met a lease this client had freed or was freeing: acknowledged (by the
     *                          free), but no revocation; the lender's acknowledgements are {@code reclaimed} plus these
     */
    public record Peer(int peer, String name, int distance, boolean alive, long lendableBytes, long borrowedBytes,
                       long leases, long allocs, long failedAllocs, long reclaimed, long fenced, long lost,
                       long lateFences, double recentRevocations, long drainCount, long drainP50Nanos,
                       long drainP99Nanos, long drainMaxNanos, long callbackP50Nanos, long callbackP99Nanos,
                       long callbackMaxNanos, long reattachments, long revokeToCallbackCount, long revokeToCallbackP50Nanos,
                       long revokeToCallbackP99Nanos, long revokeToCallbackMaxNanos, long reclaimsOfFreed) {

        /** Leases ended for {@code reason}. */
        public long revocations(RevocationReason reason) {
            return switch (reason) {
                case RECLAIMED -> reclaimed;
                case FENCED -> fenced;
                case PEER_LOST -> lost;
            };
        }

        /** Leases ended by any revocation. */
        public long revocations() {
            return reclaimed + fenced + lost;
        }
    }

    /**
     * One consumer.
     *
     * @param name          the consumer's name
     * @param maxBytes      its byte cap
     * @param borrowedBytes bytes it holds now
     * @param leases        live leases it holds
     * @param allocs        successful allocations
     * @param refusedBytes  allocations refused by its byte cap
     * @param refusedRate   allocations refused by its token bucket
     * @param misses        allocations no peer could serve
     */
    public record Consumer(String name, long maxBytes, long borrowedBytes, long leases, long allocs, long refusedBytes,
                           long refusedRate, long misses) {
    }

    /** The peer with id {@code peer}. */
    public Peer peer(int peer) {
        for (Peer p : peers) {
            if (p.peer() == peer) {
                return p;
            }
        }
        throw new IllegalArgumentException("no peer " + peer + " in these stats (peers " + peers.stream().map(Peer::peer).toList() + ")");
    }

    /** The consumer called {@code name}. */
    public Consumer consumer(String name) {
        for (Consumer c : consumers) {
            if (c.name().equals(name)) {
                return c;
            }
        }
        throw new IllegalArgumentException("no consumer '" + name + "' in these stats (consumers "
                + consumers.stream().map(Consumer::name).toList() + ")");
    }

    /** Bytes borrowed from all peers. */
    public long borrowedBytes() {
        return peers.stream().mapToLong(Peer::borrowedBytes).sum();
    }

    /** Appends the {@code strata_peer_*} families to {@code out}. */
    public void writeTo(PrometheusText out) {
        peerFamily(out, "strata_peer_borrowed_bytes", PrometheusText.Type.GAUGE, "Bytes this client holds on the peer", Peer::borrowedBytes);
        peerFamily(out, "strata_peer_leases", PrometheusText.Type.GAUGE, "Live leases on the peer", Peer::leases);
        peerFamily(out, "strata_peer_lendable_bytes", PrometheusText.Type.GAUGE, "Bytes the peer offers now", Peer::lendableBytes);
        peerFamily(out, "strata_peer_alive", PrometheusText.Type.GAUGE, "1 while the peer is reachable", p -> p.alive() ? 1 : 0);
        peerFamily(out, "strata_peer_reattach_total", PrometheusText.Type.COUNTER,
                "Times the peer, once lost, lent again (its agent restarted or recovered)", Peer::reattachments);
        peerFamily(out, "strata_peer_allocs_total", PrometheusText.Type.COUNTER, "Leases borrowed from the peer", Peer::allocs);
        peerFamily(out, "strata_peer_failed_allocs_total", PrometheusText.Type.COUNTER, "Borrows the peer refused", Peer::failedAllocs);
        out.family("strata_peer_revocations_total", PrometheusText.Type.COUNTER, "Leases the peer took back, by reason");
        for (Peer p : peers) {
            for (RevocationReason r : RevocationReason.values()) {
                out.sample("strata_peer_revocations_total", p.revocations(r), "peer", p.name(), "reason", r.name().toLowerCase(Locale.ROOT));
            }
        }
        peerFamily(out, "strata_peer_reclaims_of_freed_total", PrometheusText.Type.COUNTER,
                "Reclaims that met a lease this client had freed or was freeing: acknowledged by the free, not revocations",
                Peer::reclaimsOfFreed);
        peerFamily(out, "strata_peer_late_fences_total", PrometheusText.Type.COUNTER,
                "Fences of leases whose callbacks had run but whose acknowledgement came too late", Peer::lateFences);
        peerFamily(out, "strata_peer_recent_revocations", PrometheusText.Type.GAUGE, "Revocations, exponentially decayed",
                Peer::recentRevocations);
        summary(out, "strata_peer_drain_seconds", "Time from a revocation event to the last access on the lease ending",
                Peer::drainCount, Peer::drainP50Nanos, Peer::drainP99Nanos, Peer::drainMaxNanos);
        summary(out, "strata_peer_revocation_callback_seconds", "Time from a revocation event to its callbacks starting",
                Peer::drainCount, Peer::callbackP50Nanos, Peer::callbackP99Nanos, Peer::callbackMaxNanos);
        summary(out, "strata_peer_revoke_to_callback_seconds",
                "Time from the peer revoking a lease (by its own clock) to the lease's callbacks starting",
                Peer::revokeToCallbackCount, Peer::revokeToCallbackP50Nanos, Peer::revokeToCallbackP99Nanos,
                Peer::revokeToCallbackMaxNanos);
        out.family("strata_peer_alloc_misses_total", PrometheusText.Type.COUNTER, "Allocations no peer could serve")
                .sample("strata_peer_alloc_misses_total", allocMisses);
        out.family("strata_peer_callback_failures_total", PrometheusText.Type.COUNTER, "Revocation callbacks that threw")
                .sample("strata_peer_callback_failures_total", callbackFailures);
        out.family("strata_peer_copies_abandoned_total", PrometheusText.Type.COUNTER,
                "Reads and writes of a lease stopped part-way because its revocation began")
                .sample("strata_peer_copies_abandoned_total", abandonedCopies);
        consumerFamily(out, "strata_peer_consumer_borrowed_bytes", PrometheusText.Type.GAUGE, "Bytes the consumer holds on peers",
                Consumer::borrowedBytes);
        consumerFamily(out, "strata_peer_consumer_max_bytes", PrometheusText.Type.GAUGE, "The consumer's byte cap",
                c -> c.maxBytes() == Long.MAX_VALUE ? Double.POSITIVE_INFINITY : c.maxBytes());
        consumerFamily(out, "strata_peer_consumer_allocs_total", PrometheusText.Type.COUNTER, "Leases the consumer borrowed",
                Consumer::allocs);
        out.family("strata_peer_consumer_refused_total", PrometheusText.Type.COUNTER, "Allocations refused by the consumer's limits");
        for (Consumer c : consumers) {
            out.sample("strata_peer_consumer_refused_total", c.refusedBytes(), "consumer", c.name(), "cause", "bytes");
            out.sample("strata_peer_consumer_refused_total", c.refusedRate(), "consumer", c.name(), "cause", "rate");
        }
        consumerFamily(out, "strata_peer_consumer_misses_total", PrometheusText.Type.COUNTER,
                "Allocations of the consumer no peer could serve", Consumer::misses);
    }

    /** The counters alone in the Prometheus text format. */
    public String toPrometheus() {
        PrometheusText out = new PrometheusText();
        writeTo(out);
        return out.toString();
    }

    private void peerFamily(PrometheusText out, String name, PrometheusText.Type type, String help,
                            java.util.function.ToDoubleFunction<Peer> f) {
        out.family(name, type, help);
        for (Peer p : peers) {
            out.sample(name, f.applyAsDouble(p), "peer", p.name());
        }
    }

    private void consumerFamily(PrometheusText out, String name, PrometheusText.Type type, String help,
                                java.util.function.ToDoubleFunction<Consumer> f) {
        out.family(name, type, help);
        for (Consumer c : consumers) {
            out.sample(name, f.applyAsDouble(c), "consumer", c.name());
        }
    }

    private void summary(PrometheusText out, String name, String help, java.util.function.ToLongFunction<Peer> count,
                         java.util.function.ToLongFunction<Peer> p50, java.util.function.ToLongFunction<Peer> p99,
                         java.util.function.ToLongFunction<Peer> max) {
        out.family(name, PrometheusText.Type.SUMMARY, help);
        for (Peer p : peers) {
            out.summary(name, new double[] {0.5, 0.99, 1},
                    new double[] {p50.applyAsLong(p) / 1e9, p99.applyAsLong(p) / 1e9, max.applyAsLong(p) / 1e9},
                    count.applyAsLong(p), "peer", p.name());
        }
    }
}
