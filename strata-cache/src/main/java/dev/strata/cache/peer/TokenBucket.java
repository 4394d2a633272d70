package dev.strata.cache.peer;

/**
 * A token bucket: {@code rate} tokens per second up to {@code capacity}, full at start.
 *
 * <p>Threads: not thread-safe; its owner ({@link PeerClient}) calls it under its lock.
 */
final class TokenBucket {
    private final double ratePerNano;   // tokens per nanosecond
    private final double capacity;      // tokens
    private double tokens;              // tokens now
    private long lastNanos;             // clock reading at the last refill

    TokenBucket(double perSecond, double capacity, long nowNanos) {
        this.ratePerNano = perSecond / 1e9;
        this.capacity = capacity;
        this.tokens = capacity;
        this.lastNanos = nowNanos;
    }

    /** Takes one token if there is one. */
    boolean tryTake(long nowNanos) {
        refill(nowNanos);
        if (tokens >= 1) {
            tokens -= 1;
            return true;
        }
        return false;
    }

    /** Returns a token taken for an allocation that then failed. */
    void giveBack() {
        tokens = Math.min(capacity, tokens + 1);
    }

    double tokens(long nowNanos) {
        refill(nowNanos);
        return tokens;
    }

    private void refill(long nowNanos) {
        long elapsed = nowNanos - lastNanos;
        if (elapsed > 0) {
            tokens = Math.min(capacity, tokens + elapsed * ratePerNano);
            lastNanos = nowNanos;
        }
    }
}
