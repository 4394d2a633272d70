package dev.strata.cache.peer;

/**
 * What one consumer of a {@link PeerClient} (a named user such as {@code kv} or {@code experts})
 * may borrow: a cap on the bytes it holds and a token bucket on how fast it allocates.
 *
 * <p>Immutable value; any thread.
 *
 * @param maxBytes             most bytes the consumer may hold on all peers together (lease sizes), {@code > 0}
 * @param allocationsPerSecond token refill rate: allocations per second in the long run, {@code > 0}
 *                             ({@link Double#POSITIVE_INFINITY} for no rate limit)
 * @param burst                bucket size: allocations allowed back to back, {@code >= 1}
 */
public record ConsumerLimits(long maxBytes, double allocationsPerSecond, double burst) {
    /** No cap and no rate limit. */
    public static final ConsumerLimits UNLIMITED = new ConsumerLimits(Long.MAX_VALUE, Double.POSITIVE_INFINITY, 1);

    public ConsumerLimits {
        if (maxBytes <= 0 || !(allocationsPerSecond > 0) || !(burst >= 1) || Double.isInfinite(burst)) {
            throw new IllegalArgumentException("consumer limits: max bytes " + maxBytes + " must be > 0, allocations per second "
                    + allocationsPerSecond + " > 0 and burst " + burst + " a finite number >= 1");
        }
    }

    /** A byte cap without a rate limit. */
    public static ConsumerLimits bytes(long maxBytes) {
        return new ConsumerLimits(maxBytes, Double.POSITIVE_INFINITY, 1);
    }

    /** True when this has a finite allocation rate. */
    public boolean rateLimited() {
        return !Double.isInfinite(allocationsPerSecond);
    }
}
