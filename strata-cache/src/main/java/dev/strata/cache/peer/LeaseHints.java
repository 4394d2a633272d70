package dev.strata.cache.peer;

import dev.strata.cache.Durability;

/**
 * What a client asks of the memory it borrows.
 *
 * <p>Immutable value; any thread.
 *
 * @param durability      BACKED: an authoritative copy lives elsewhere and revocation falls back
 *                        to it; LOSSY: revocation loses the bytes and the owner is told once
 * @param preferredPeer   a peer id to try first, or {@link #ANY_PEER}
 * @param maxDistance     the farthest topology distance accepted (0 = same device, 1 = a direct
 *                        link such as NVLink, 2 = through the host bridge ...), or
 *                        {@link Integer#MAX_VALUE} for any
 * @param latencyBoundNanos the slowest first-byte latency accepted for a fetch, in nanoseconds, or
 *                        {@link Long#MAX_VALUE} for any
 */
public record LeaseHints(Durability durability, int preferredPeer, int maxDistance, long latencyBoundNanos) {
    public static final int ANY_PEER = -1;

    public LeaseHints {
        if (durability == null) {
            throw new IllegalArgumentException("lease hints need a durability");
        }
        if (preferredPeer < ANY_PEER || maxDistance < 0 || latencyBoundNanos <= 0) {
            throw new IllegalArgumentException("lease hints: preferred peer " + preferredPeer + " must be >= -1, max distance "
                    + maxDistance + " >= 0 and latency bound " + latencyBoundNanos + " ns > 0");
        }
    }

    /** Any peer, any distance, any latency. */
    public static LeaseHints of(Durability durability) {
        return new LeaseHints(durability, ANY_PEER, Integer.MAX_VALUE, Long.MAX_VALUE);
    }

    public LeaseHints preferring(int peer) {
        return new LeaseHints(durability, peer, maxDistance, latencyBoundNanos);
    }

    public LeaseHints within(int distance) {
        return new LeaseHints(durability, preferredPeer, distance, latencyBoundNanos);
    }

    public LeaseHints latencyBound(long nanos) {
        return new LeaseHints(durability, preferredPeer, maxDistance, nanos);
    }
}
