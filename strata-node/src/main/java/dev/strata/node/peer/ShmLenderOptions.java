package dev.strata.node.peer;

import java.time.Duration;

/**
 * How a {@link ShmPeerLender} watches its agent and its regions.
 *
 * <p>Immutable value; any thread.
 *
 * @param name             the peer's name as clients see it (null: the lending file's name)
 * @param distance         topology distance from this client (0 same device, 1 direct link, 2 via
 *                         the host; a lending file in host memory is 2)
 * @param pollInterval     how often the event thread reads the states of the regions held and the
 *                         agent's heartbeat
 * @param heartbeatTimeout an agent whose heartbeat is older than this is lost (it may be alive but
 *                         stuck: its regions are given back and never entered again)
 * @param livenessInterval how often the agent's pid and start time are checked
 * @param drainTimeout     how long {@link ShmPeerLender#giveBack} waits for accesses under way
 *                         before refusing (a region given back while in use is a caller's bug)
 * @param reattachInterval how often the lending file's path is looked at: a file put there by a
 *                         new agent (the old one restarted) is mapped in place of the old one, and a
 *                         lost agent that lends again is taken back; at most one look per interval
 */
public record ShmLenderOptions(String name, int distance, Duration pollInterval, Duration heartbeatTimeout,
                               Duration livenessInterval, Duration drainTimeout, Duration reattachInterval) {

    public ShmLenderOptions {
        if (distance < 0 || positive(pollInterval) || positive(heartbeatTimeout) || positive(livenessInterval)
                || positive(drainTimeout) || positive(reattachInterval)) {
            throw new IllegalArgumentException("lender options: distance " + distance + " must be >= 0 and poll interval "
                    + pollInterval + ", heartbeat timeout " + heartbeatTimeout + ", liveness interval " + livenessInterval
                    + ", drain timeout " + drainTimeout + ", re-attach interval " + reattachInterval + " positive");
        }
    }

    private static boolean positive(Duration d) {
        return d == null || d.isNegative() || d.isZero();
    }

    /** The re-attach interval of {@link #defaults()}: one look at the lending file's path a second. */
    public static final Duration DEFAULT_REATTACH_INTERVAL = Duration.ofSeconds(1);

    /**
     * Distance 2, polling every millisecond, a 2 s heartbeat timeout, pid checks every 100 ms, 30 s
     * drains, the path looked at every second.
     */
    public static ShmLenderOptions defaults() {
        return new ShmLenderOptions(null, 2, Duration.ofMillis(1), Duration.ofSeconds(2), Duration.ofMillis(100),
                Duration.ofSeconds(30), DEFAULT_REATTACH_INTERVAL);
    }

    public ShmLenderOptions withName(String n) {
        return new ShmLenderOptions(n, distance, pollInterval, heartbeatTimeout, livenessInterval, drainTimeout, reattachInterval);
    }

    public ShmLenderOptions withDistance(int d) {
        return new ShmLenderOptions(name, d, pollInterval, heartbeatTimeout, livenessInterval, drainTimeout, reattachInterval);
    }

    public ShmLenderOptions withPollInterval(Duration d) {
        return new ShmLenderOptions(name, distance, d, heartbeatTimeout, livenessInterval, drainTimeout, reattachInterval);
    }

    public ShmLenderOptions withHeartbeatTimeout(Duration d) {
        return new ShmLenderOptions(name, distance, pollInterval, d, livenessInterval, drainTimeout, reattachInterval);
    }

    public ShmLenderOptions withLivenessInterval(Duration d) {
        return new ShmLenderOptions(name, distance, pollInterval, heartbeatTimeout, d, drainTimeout, reattachInterval);
    }

    public ShmLenderOptions withDrainTimeout(Duration d) {
        return new ShmLenderOptions(name, distance, pollInterval, heartbeatTimeout, livenessInterval, d, reattachInterval);
    }

    public ShmLenderOptions withReattachInterval(Duration d) {
        return new ShmLenderOptions(name, distance, pollInterval, heartbeatTimeout, livenessInterval, drainTimeout, d);
    }
}
