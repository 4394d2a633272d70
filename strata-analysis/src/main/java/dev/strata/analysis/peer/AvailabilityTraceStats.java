package dev.strata.analysis.peer;

import dev.strata.cache.peer.trace.AvailabilityTrace;
import dev.strata.memory.Sizes;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What a peer availability trace says about lendable memory: per peer, the time-weighted mean,
 * minimum and maximum of its free bytes, and its reclaims — falls of free memory between two
 * consecutive samples of at least {@code reclaimThreshold} bytes, the sudden drops a job landing on
 * the peer causes (slow diurnal swings move far less in one sample step).
 *
 * <p>The mean of a peer is taken over [its first sample, the trace's end] with each value weighted
 * by how long it held. When the device capacity is known, mean utilisation is
 * {@code 1 - mean free / capacity}.
 *
 * <p>Immutable value; any thread.
 *
 * @param duration         seconds from the start to the last sample
 * @param samples          samples in the trace
 * @param capacity         device capacity in bytes, or 0 when unknown
 * @param reclaimThreshold a fall of at least this many bytes in one sample step counts as a reclaim
 * @param peers            one entry per peer, in trace order
 */
public record AvailabilityTraceStats(double duration, long samples, long capacity, long reclaimThreshold, List<PeerStats> peers) {

    /** The default reclaim threshold as a fraction of the capacity (or of the largest free value when unknown). */
    public static final double DEFAULT_RECLAIM_FRACTION = 0.1;

    public AvailabilityTraceStats {
        peers = List.copyOf(peers);
    }

    /**
     * One peer's figures.
     *
     * @param peer           its name
     * @param samples        its samples
     * @param minFree        bytes
     * @param maxFree        bytes
     * @param meanFree       time-weighted mean, bytes
     * @param reclaims       falls of at least the threshold in one step
     * @param reclaimedBytes sum of those falls, bytes
     * @param largestDrop    the largest fall in one step, bytes (0 if free never fell)
     */
    public record PeerStats(String peer, int samples, long minFree, long maxFree, double meanFree, int reclaims,
                            long reclaimedBytes, long largestDrop) {
    }

    /**
     * Summarises {@code trace}.
     *
     * @param capacity        device capacity in bytes, or 0 when unknown
     * @param reclaimFraction a fall of at least this fraction of the capacity (or, with the capacity
     *                        unknown, of the largest free value in the trace) counts as a reclaim; in (0, 1]
     */
    public static AvailabilityTraceStats of(AvailabilityTrace trace, long capacity, double reclaimFraction) {
        if (capacity < 0) {
            throw new IllegalArgumentException("capacity must be >= 0 bytes (0: unknown), got " + capacity);
        }
        if (!(reclaimFraction > 0 && reclaimFraction <= 1)) {
            throw new IllegalArgumentException("reclaim fraction must be in (0, 1], got " + reclaimFraction);
        }
        long scale = capacity;
        if (scale == 0) {
            for (String p : trace.peers()) {
                for (long f : trace.freeValues(p)) {
                    scale = Math.max(scale, f);
                }
            }
        }
        long threshold = Math.max(1, (long) Math.ceil(reclaimFraction * scale));
        double end = trace.duration();
        List<PeerStats> out = new ArrayList<>();
        for (String p : trace.peers()) {
            double[] ts = trace.times(p);
            long[] fs = trace.freeValues(p);
            long min = Long.MAX_VALUE;
            long max = 0;
            double integral = 0; // byte-seconds
            int reclaims = 0;
            long reclaimed = 0;
            long largest = 0;
            for (int i = 0; i < ts.length; i++) {
                min = Math.min(min, fs[i]);
                max = Math.max(max, fs[i]);
                double until = i + 1 < ts.length ? ts[i + 1] : end;
                integral += (double) fs[i] * (until - ts[i]);
                if (i > 0 && fs[i] < fs[i - 1]) {
                    long drop = fs[i - 1] - fs[i];
                    largest = Math.max(largest, drop);
                    if (drop >= threshold) {
                        reclaims++;
                        reclaimed += drop;
                    }
                }
            }
            double span = end - ts[0];
            double mean = span > 0 ? integral / span : fs[fs.length - 1];
            out.add(new PeerStats(p, ts.length, min, max, mean, reclaims, reclaimed, largest));
        }
        return new AvailabilityTraceStats(end, trace.samples().size(), capacity, threshold, out);
    }

    /** Mean free bytes per peer, averaged over the peers. */
    public double meanFree() {
        return peers.stream().mapToDouble(PeerStats::meanFree).average().orElse(0);
    }

    /** {@code 1 - meanFree / capacity}, or NaN when the capacity is unknown. */
    public double meanUtilisation() {
        return capacity > 0 ? 1 - meanFree() / capacity : Double.NaN;
    }

    /** Reclaims over all peers. */
    public int reclaims() {
        return peers.stream().mapToInt(PeerStats::reclaims).sum();
    }

    /** Reclaims per peer per hour of trace; NaN for a trace of no duration. */
    public double reclaimsPerPeerHour() {
        return duration > 0 && !peers.isEmpty() ? reclaims() / (peers.size() * duration / 3600.0) : Double.NaN;
    }

    /** A few lines for people: totals, then one line per peer (the first {@code maxPeers}). */
    public String report(int maxPeers) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%d peers, %d samples, %.1f s%n", peers.size(), samples, duration));
        b.append(String.format(Locale.ROOT, "mean free per peer %s", Sizes.format((long) meanFree())));
        if (capacity > 0) {
            b.append(String.format(Locale.ROOT, " of %s: mean utilisation %.3f", Sizes.format(capacity), meanUtilisation()));
        }
        b.append(String.format(Locale.ROOT, "%nreclaims (falls >= %s in one step): %d, %.2f per peer-hour%n",
                Sizes.format(reclaimThreshold), reclaims(), reclaimsPerPeerHour()));
        b.append(String.format(Locale.ROOT, "%-12s %8s %12s %12s %12s %9s %12s%n", "peer", "samples", "min free", "mean free",
                "max free", "reclaims", "largest drop"));
        for (PeerStats p : peers.subList(0, Math.min(maxPeers, peers.size()))) {
            b.append(String.format(Locale.ROOT, "%-12s %8d %12s %12s %12s %9d %12s%n", p.peer(), p.samples(),
                    Sizes.format(p.minFree()), Sizes.format((long) p.meanFree()), Sizes.format(p.maxFree()), p.reclaims(),
                    Sizes.format(p.largestDrop())));
        }
        if (peers.size() > maxPeers) {
            b.append("... ").append(peers.size() - maxPeers).append(" more peers\n");
        }
        return b.toString();
    }
}
