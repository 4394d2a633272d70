package dev.strata.node.peer;

import dev.strata.cache.peer.trace.AvailabilityTrace;
import dev.strata.memory.Sizes;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Replays one peer of an availability trace ({@code dev.strata.cache.peer.trace}): at trace time
 * {@code t} the peer has {@code freeAt(peer, t)} bytes free, so the agent lends at most that much
 * of its budget and needs the rest for itself: {@code demand = budget - min(free, budget)}.
 * Before the peer's first sample nothing is free (the trace's rule); after the last sample its
 * last value holds, or with {@code loop} the trace starts over.
 *
 * <p>Trace time runs at {@code speed} trace seconds per wall second from the agent's start (a
 * speed of 60 replays an hour in a minute).
 *
 * <p>Threads: the agent's tick thread only (the trace itself is immutable).
 *
 * @param trace  the availability trace
 * @param peer   the peer of the trace this agent plays
 * @param budget the agent's budget in bytes
 * @param speed  trace seconds per wall second, positive
 * @param loop   whether to start over after the trace's last sample
 */
public record TraceDemand(AvailabilityTrace trace, String peer, long budget, double speed, boolean loop)
        implements DemandSignal {

    public TraceDemand {
        Objects.requireNonNull(trace, "trace");
        if (peer == null || !trace.hasPeer(peer)) {
            throw new IllegalArgumentException("availability trace has no peer '" + peer + "' (its peers: " + trace.peers() + ")");
        }
        if (budget < 0 || !(speed > 0) || Double.isInfinite(speed)) {
            throw new IllegalArgumentException("trace demand: budget " + budget + " must be >= 0 and speed " + speed
                    + " positive and finite");
        }
    }

    /**
     * Parses {@code PATH[,peer=NAME][,speed=X][,loop]}; the peer defaults to the trace's first.
     *
     * @throws IllegalArgumentException naming the spec and what is wrong (an unreadable trace's
     *         error names the file, line, field and value)
     */
    static TraceDemand parse(String text, long budget) {
        String[] parts = text.split(",");
        if (parts[0].isBlank()) {
            throw new IllegalArgumentException("demand spec 'trace:" + text + "' names no trace file (expected trace:PATH[,peer=NAME][,speed=X][,loop])");
        }
        String peer = null;
        double speed = 1;
        boolean loop = false;
        for (int i = 1; i < parts.length; i++) {
            String p = parts[i].strip();
            if (p.startsWith("peer=")) {
                peer = p.substring(5);
            } else if (p.startsWith("speed=")) {
                try {
                    speed = Double.parseDouble(p.substring(6));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("demand spec 'trace:" + text + "': speed '" + p.substring(6)
                            + "' is not a number", e);
                }
            } else if (p.equals("loop")) {
                loop = true;
            } else {
                throw new IllegalArgumentException("demand spec 'trace:" + text + "': unknown option '" + p
                        + "' (expected peer=NAME, speed=X or loop)");
            }
        }
        AvailabilityTrace trace = AvailabilityTrace.read(Path.of(parts[0]));
        if (trace.peers().isEmpty()) {
            throw new IllegalArgumentException("availability trace " + parts[0] + " has no samples");
        }
        return new TraceDemand(trace, peer == null ? trace.peers().getFirst() : peer, budget, speed, loop);
    }

    /** Trace seconds at {@code elapsedNanos} of wall time. */
    public double traceTime(long elapsedNanos) {
        double t = elapsedNanos / 1e9 * speed;
        double d = trace.duration();
        return loop && d > 0 && t > d ? t % d : t;
    }

    @Override
    public long demandBytes(long elapsedNanos) {
        long free = trace.freeAt(peer, traceTime(elapsedNanos));
        return budget - Math.min(free, budget);
    }

    @Override
    public String describe() {
        return "replay of peer '" + peer + "' of an availability trace (" + trace.duration() + " s at " + speed + "x"
                + (loop ? ", looping" : "") + ") against a budget of " + Sizes.format(budget);
    }
}
