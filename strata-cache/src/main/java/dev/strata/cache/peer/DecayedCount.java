package dev.strata.cache.peer;

/**
 * A count of events that decays exponentially with a half-life: each event adds 1, and the value
 * halves every {@code halfLifeNanos} without events.
 *
 * <p>Threads: not thread-safe; its owner ({@link PeerClient}) calls it under its lock.
 */
final class DecayedCount {
    private final double halfLifeNanos; // ns
    private double value;               // decayed events as of lastNanos
    private long lastNanos;             // clock reading of the last update

    DecayedCount(long halfLifeNanos, long nowNanos) {
        this.halfLifeNanos = halfLifeNanos;
        this.lastNanos = nowNanos;
    }

    void add(long nowNanos) {
        value = valueAt(nowNanos) + 1;
        lastNanos = Math.max(lastNanos, nowNanos);
    }

    double valueAt(long nowNanos) {
        long elapsed = nowNanos - lastNanos;
        return elapsed <= 0 ? value : value * Math.pow(0.5, elapsed / halfLifeNanos);
    }
}
