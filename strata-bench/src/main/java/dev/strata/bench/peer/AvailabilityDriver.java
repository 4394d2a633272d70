package dev.strata.bench.peer;

import dev.strata.cache.peer.trace.AvailabilityTrace;
import java.util.List;

/**
 * Replays a peer availability trace onto lenders: at each replay step, every lender is told to
 * offer what its peer had free at that time of the trace. Time is the trace's own, stepped in
 * {@code secondsPerStep}; the caller runs its workload between steps, so a trace of a day can drive
 * a benchmark of seconds.
 *
 * <p>Threads: one driving thread.
 */
public final class AvailabilityDriver {

    /** Receives what peer {@code peer} (its index in the trace) offers from now on, in bytes. */
    @FunctionalInterface
    public interface Sink {
        void lendable(int peer, long bytes);
    }

    private final AvailabilityTrace trace;
    private final double secondsPerStep; // trace seconds per replay step
    private final Sink sink;
    private final int steps; // replay steps, t = 0 .. duration
    private final int lenders; // lenders driven: the trace's first peers

    /**
     * @param lenders how many lenders receive the trace's peers; the trace must have at least as many
     *                peers (lender {@code i} follows the trace's {@code i}-th peer)
     */
    public AvailabilityDriver(AvailabilityTrace trace, int lenders, double secondsPerStep, Sink sink) {
        if (trace.peers().size() < lenders) {
            throw new IllegalArgumentException("availability trace has " + trace.peers().size() + " peers, fewer than the "
                    + lenders + " lenders to drive (peers: " + trace.peers() + ")");
        }
        if (!(secondsPerStep > 0)) {
            throw new IllegalArgumentException("seconds per replay step must be > 0, got " + secondsPerStep);
        }
        this.trace = trace;
        this.secondsPerStep = secondsPerStep;
        this.sink = sink;
        this.steps = (int) Math.floor(trace.duration() / secondsPerStep + 1e-9) + 1;
        this.lenders = lenders;
    }

    /** Replay steps: one at t = 0, then every {@code secondsPerStep} up to the trace's duration. */
    public int steps() {
        return steps;
    }

    /** Trace time of replay step {@code step}, seconds. */
    public double time(int step) {
        return Math.min(step * secondsPerStep, trace.duration());
    }

    /** Tells every lender what its peer had free at replay step {@code step}. */
    public void apply(int step) {
        double t = time(step);
        for (int p = 0; p < lenders; p++) {
            sink.lendable(p, trace.freeAt(p, t));
        }
    }

    /** The peers driven, in lender order. */
    public List<String> peers() {
        return trace.peers().subList(0, lenders);
    }
}
