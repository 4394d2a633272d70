package dev.strata.cache.peer.trace;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A whole peer availability trace in memory: for each peer, a step function of its free bytes over
 * time. {@link #freeAt} gives the value of the peer's last sample at or before {@code t} (the last
 * one of several at the same time), and 0 before the peer's first sample: memory never reported
 * free is not lendable.
 *
 * <p>Invariants: samples are sorted by time (checked on construction, ties allowed); every peer
 * has at least one sample; {@link #duration} is the time of the last sample.
 *
 * <p>Immutable after construction; any thread.
 */
public final class AvailabilityTrace {
    private final List<String> peers; // in order of first appearance
    private final Map<String, Integer> index; // peer name -> position in peers
    private final double[][] times; // [peer][sample] seconds, non-decreasing
    private final long[][] free; // [peer][sample] bytes, >= 0
    private final List<AvailabilitySample> samples; // every sample in trace order
    private final double duration; // seconds: the last sample's t, 0 for an empty trace

    private AvailabilityTrace(List<AvailabilitySample> samples) {
        Map<String, Integer> idx = new LinkedHashMap<>();
        List<int[]> counts = new ArrayList<>();
        for (AvailabilitySample s : samples) {
            Integer i = idx.get(s.peer());
            if (i == null) {
                idx.put(s.peer(), idx.size());
                counts.add(new int[1]);
                i = idx.size() - 1;
            }
            counts.get(i)[0]++;
        }
        int n = idx.size();
        this.times = new double[n][];
        this.free = new long[n][];
        for (int p = 0; p < n; p++) {
            times[p] = new double[counts.get(p)[0]];
            free[p] = new long[counts.get(p)[0]];
        }
        int[] fill = new int[n];
        for (AvailabilitySample s : samples) {
            int p = idx.get(s.peer());
            times[p][fill[p]] = s.t();
            free[p][fill[p]] = s.free();
            fill[p]++;
        }
        this.index = Collections.unmodifiableMap(idx);
        this.peers = List.copyOf(idx.keySet());
        this.samples = Collections.unmodifiableList(samples);
        this.duration = samples.isEmpty() ? 0 : samples.getLast().t();
    }

    /**
     * Reads a whole trace file.
     *
     * @throws AvailabilityTraceException naming line, field and value of the first bad line
     */
    public static AvailabilityTrace read(Path file) {
        try (AvailabilityTraceReader in = AvailabilityTraceReader.open(file)) {
            return from(in);
        }
    }

    /** Reads every remaining sample of {@code in}. */
    public static AvailabilityTrace from(AvailabilityTraceReader in) {
        List<AvailabilitySample> all = new ArrayList<>();
        for (AvailabilitySample s; (s = in.next()) != null; ) {
            all.add(s);
        }
        return new AvailabilityTrace(all);
    }

    /**
     * A trace of {@code samples}, which must be sorted by time.
     *
     * @throws IllegalArgumentException naming the first sample out of order
     */
    public static AvailabilityTrace of(List<AvailabilitySample> samples) {
        List<AvailabilitySample> copy = new ArrayList<>(samples);
        for (int i = 1; i < copy.size(); i++) {
            if (copy.get(i).t() < copy.get(i - 1).t()) {
                throw new IllegalArgumentException("availability samples must be sorted by t: sample " + i + " at t "
                        + copy.get(i).t() + " follows t " + copy.get(i - 1).t());
            }
        }
        return new AvailabilityTrace(copy);
    }

    /** The peers, in order of their first sample. */
    public List<String> peers() {
        return peers;
    }

    /** Seconds from the start to the last sample. */
    public double duration() {
        return duration;
    }

    /** Every sample, in trace order. */
    public List<AvailabilitySample> samples() {
        return samples;
    }

    /** True when {@code peer} has samples in this trace. */
    public boolean hasPeer(String peer) {
        return index.containsKey(peer);
    }

    /**
     * Free bytes on {@code peer} at {@code t} seconds: its last sample at or before {@code t}, or 0
     * before its first sample.
     *
     * @throws IllegalArgumentException when the trace has no such peer
     */
    public long freeAt(String peer, double t) {
        return freeAt(peerIndex(peer), t);
    }

    /** As {@link #freeAt(String, double)} for the peer at {@code peer} in {@link #peers()}. */
    public long freeAt(int peer, double t) {
        double[] ts = times[checkIndex(peer)];
        int at = lastAtOrBefore(ts, t);
        return at < 0 ? 0 : free[peer][at];
    }

    /** Samples of {@code peer}. */
    public int sampleCount(String peer) {
        return times[peerIndex(peer)].length;
    }

    /** Times of {@code peer}'s samples in seconds, in order (a copy). */
    public double[] times(String peer) {
        return times[peerIndex(peer)].clone();
    }

    /** Free bytes of {@code peer}'s samples, in the order of {@link #times} (a copy). */
    public long[] freeValues(String peer) {
        return free[peerIndex(peer)].clone();
    }

    /** Position of {@code peer} in {@link #peers()}. */
    public int peerIndex(String peer) {
        Integer i = index.get(peer);
        if (i == null) {
            throw new IllegalArgumentException("availability trace has no peer '" + peer + "' (peers: "
                    + (peers.size() <= 16 ? peers : peers.subList(0, 16) + "...") + ")");
        }
        return i;
    }

    private int checkIndex(int peer) {
        if (peer < 0 || peer >= peers.size()) {
            throw new IllegalArgumentException("peer index " + peer + " is outside [0, " + peers.size() + ")");
        }
        return peer;
    }

    /** Index of the last entry of {@code ts} that is {@code <= t}, or -1. */
    private static int lastAtOrBefore(double[] ts, double t) {
        int lo = 0;
        int hi = ts.length; // first index with ts[i] > t lies in [lo, hi]
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (ts[mid] <= t) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo - 1;
    }

    @Override
    public String toString() {
        return "availability trace: " + peers.size() + " peers, " + samples.size() + " samples, " + duration + " s"
                + (peers.isEmpty() ? "" : " " + Arrays.toString(peers.stream().limit(8).toArray()));
    }
}
