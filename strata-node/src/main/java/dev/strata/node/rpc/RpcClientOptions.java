package dev.strata.node.rpc;

import java.time.Duration;

/**
 * How a client attaches and waits.
 *
 * <p>Immutable; any thread.
 *
 * @param attachTimeout          how long attach waits for a free channel (and for a region that
 *                               is still initialising)
 * @param serverCheckInterval    while waiting past the spin phase, how often the client checks
 *                               that the server lives: the delay before a dead server is reported
 * @param serverHeartbeatTimeout a live server whose heartbeat is older than this is reported
 *                               {@link RpcStatus#SERVER_UNRESPONSIVE}
 * @param spins                  spin iterations before yielding while waiting for a response
 * @param maxPark                the longest park while waiting for a response
 */
public record RpcClientOptions(Duration attachTimeout, Duration serverCheckInterval, Duration serverHeartbeatTimeout,
                               int spins, Duration maxPark) {

    public RpcClientOptions {
        if (attachTimeout.isNegative() || serverCheckInterval.isNegative() || serverCheckInterval.isZero()
                || serverHeartbeatTimeout.isNegative() || serverHeartbeatTimeout.isZero() || spins < 0
                || maxPark.isNegative() || maxPark.isZero()) {
            throw new IllegalArgumentException("rpc client options: attach timeout " + attachTimeout
                    + ", server check interval " + serverCheckInterval + ", heartbeat timeout " + serverHeartbeatTimeout
                    + ", spins " + spins + ", max park " + maxPark
                    + ": durations must be positive (attach timeout may be 0) and spins >= 0");
        }
    }

    /** Attach within 2 s, check the server every 2 ms of waiting, unresponsive after 5 s, park at most 1 ms. */
    public static RpcClientOptions defaults() {
        return new RpcClientOptions(Duration.ofSeconds(2), Duration.ofMillis(2), Duration.ofSeconds(5), 4000,
                Duration.ofMillis(1));
    }

    public RpcClientOptions withServerHeartbeatTimeout(Duration d) {
        return new RpcClientOptions(attachTimeout, serverCheckInterval, d, spins, maxPark);
    }

    public RpcClientOptions withAttachTimeout(Duration d) {
        return new RpcClientOptions(d, serverCheckInterval, serverHeartbeatTimeout, spins, maxPark);
    }
}
