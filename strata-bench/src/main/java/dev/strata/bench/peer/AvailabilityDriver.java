package dev.strata.bench.peer;

import dev.strata.cache.peer.trace.AvailabilityTrace;
import dev.strata.node.peer.TraceDemand;
import java.util.List;

/**
 * Replays a peer availability trace onto lenders as demand: at each replay step, every lender is
 * told its own demand at that time of the trace, the budget less what its peer had free, by the
 * same {@link TraceDemand} a {@code strata peer} agent replaying the trace reads. The lender then
 * decides what it offers and what it asks back by its lending rule, so the replay measures the
 * rule every Strata lender follows. Time is the trace's own, stepped in {@code secondsPerStep}; the
 * caller runs its workload between steps, so a trace of a day can drive a benchmark of seconds.
 *
 * <p>Threads: one driving thread.
 */
public final class AvailabilityDriver {

    /** Receives lender {@code peer}'s own demand (its index in the trace) from now on, in bytes. */
    @FunctionalInterface
    public interface Sink {
        void demand(int peer, long bytes);
    }

    private final AvailabilityTrace trace;
    private final double secondsPerStep; // trace seconds per replay step
    private final Sink sink;
    private final int steps; // replay steps, t = 0 .. duration
    private final List<TraceDemand> demands; // [lender] its peer of the trace against its budget, at 1 trace second per second

    /**
     * @param lenders     how many lenders receive the trace's peers; the trace must have at least as many
     *                    peers (lender {@code i} follows the trace's {@code i}-th peer)
     * @param budgetBytes each lender's budget: its demand is this less its peer's free bytes
     */
    public AvailabilityDriver(AvailabilityTrace trace, int lenders, long budgetBytes, double secondsPerStep, Sink sink) {
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
        this.demands = trace.peers().subList(0, lenders).stream()
                .map(peer -> new TraceDemand(trace, peer, budgetBytes, 1, false)).toList();
    }

    /** Replay steps: one at t = 0, then every {@code secondsPerStep} up to the trace's duration. */
    public int steps() {
        return steps;
    }

    /** Trace time of replay step {@code step}, seconds. */
    public double time(int step) {
        return Math.min(step * secondsPerStep, trace.duration());
    }

    /** Tells every lender its demand at replay step {@code step}. */
    public void apply(int step) {
        long nanos = Math.round(time(step) * 1e9);
        for (int p = 0; p < demands.size(); p++) {
            sink.demand(p, demands.get(p).demandBytes(nanos));
        }
    }

    /** The peers driven, in lender order. */
    public List<String> peers() {
        return trace.peers().subList(0, demands.size());
    }
}
