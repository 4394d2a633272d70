package dev.strata.cache.kv;

import dev.strata.memory.metrics.PrometheusText;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Whether the shared pool behind a {@link SharedBlockStore} is in the KV chain: the one place
 * that records it leaving the chain and coming back, read by the block manager's store (to skip
 * it), by {@code /health} and by {@code /metrics}.
 *
 * <p>Design note (states):
 * <pre>
 *   OK ──infrastructure lost──▶ UNAVAILABLE ──probe succeeds──▶ OK
 *    │                              │ (one probe per retry interval)
 *    └──────mapping faulted─────────┴──────────▶ FAILED (until the process restarts)
 * </pre>
 * {@code UNAVAILABLE} is a loss that may end by itself (the node daemon died and may be started
 * again): while in it the store answers "not in the pool" without calling the pool, except for
 * one caller per retry interval that {@link #mayProbe() probes} whether it is back.
 * {@code FAILED} is a loss that does not (the pool's mapping faulted): nothing touches the pool
 * again. Requests never fail for either; they go on from the other tiers or recompute.
 *
 * <p>Threads: any; state changes are atomic (a lock-free word and a lock for the reason).
 */
public final class SharedPoolHealth {
    /** Where the pool stands. */
    public enum State {
        /** In the chain. */
        OK,
        /** Out of the chain for now; probed again after the retry interval. */
        UNAVAILABLE,
        /** Out of the chain for the life of the process. */
        FAILED
    }

    /**
     * One reading.
     *
     * @param state     where the pool stands
     * @param tier      the pool tier's name (the {@code tier} label of {@code strata_tier_*})
     * @param reason    why it left the chain (null when OK)
     * @param failures  times it left the chain since start
     * @param reattached times it came back
     */
    public record Status(State state, String tier, String reason, long failures, long reattached) {
        public Status {
            Objects.requireNonNull(state, "state");
            Objects.requireNonNull(tier, "tier");
        }

        /** A pool in the chain that never left it. */
        public static Status ok(String tier) {
            return new Status(State.OK, tier, null, 0, 0);
        }

        /** True while the pool is in the chain. */
        public boolean ok() {
            return state == State.OK;
        }

        /**
         * Writes {@code strata_tier_failed} (1 while the pool is out of the chain),
         * {@code strata_tier_failures_total} and {@code strata_tier_reattached_total}, labelled
         * {@code tier} and {@code kind="pool"} as the other {@code strata_tier_*} families.
         */
        public void writeTo(PrometheusText out) {
            out.family("strata_tier_failed", PrometheusText.Type.GAUGE,
                    "1 while the tier is out of the chain (failed, or unreachable until it comes back), else 0");
            out.sample("strata_tier_failed", ok() ? 0 : 1, "tier", tier, "kind", "pool");
            out.family("strata_tier_failures_total", PrometheusText.Type.COUNTER, "Times the tier left the chain");
            out.sample("strata_tier_failures_total", failures, "tier", tier, "kind", "pool");
            out.family("strata_tier_reattached_total", PrometheusText.Type.COUNTER,
                    "Times the tier came back into the chain after being unreachable");
            out.sample("strata_tier_reattached_total", reattached, "tier", tier, "kind", "pool");
        }
    }

    private final String tier;
    private final long retryNanos; // between probes while UNAVAILABLE
    private final LongSupplier nanoTime;
    private volatile Status status;
    private final AtomicLong nextProbe = new AtomicLong(); // System.nanoTime() from which a probe may run

    /**
     * @param tier          the pool tier's name
     * @param retryInterval nanoseconds between probes while the pool is unavailable
     * @param nanoTime      the clock ({@link System#nanoTime} outside tests)
     */
    public SharedPoolHealth(String tier, long retryInterval, LongSupplier nanoTime) {
        if (retryInterval <= 0) {
            throw new IllegalArgumentException("retry interval " + retryInterval + " ns must be positive");
        }
        this.tier = Objects.requireNonNull(tier, "tier");
        this.retryNanos = retryInterval;
        this.nanoTime = nanoTime;
        this.status = Status.ok(tier);
    }

    /** The current reading. */
    public Status status() {
        return status;
    }

    /** True while the pool is in the chain: a caller may use it. */
    public boolean ok() {
        return status.state() == State.OK;
    }

    /**
     * While {@link State#UNAVAILABLE}: true for one caller once per retry interval, who then tries
     * the pool and reports {@link #reattached} or {@link #unavailable} again. False otherwise.
     */
    public boolean mayProbe() {
        if (status.state() != State.UNAVAILABLE) {
            return false;
        }
        long at = nextProbe.get();
        long now = nanoTime.getAsLong();
        return now - at >= 0 && nextProbe.compareAndSet(at, now + retryNanos);
    }

    /** The pool cannot be reached for now ({@code reason} says why); probed again after the retry interval. */
    public synchronized void unavailable(String reason) {
        Status s = status;
        if (s.state() == State.FAILED) {
            return;
        }
        nextProbe.set(nanoTime.getAsLong() + retryNanos);
        status = new Status(State.UNAVAILABLE, tier, reason, s.failures() + (s.ok() ? 1 : 0), s.reattached());
    }

    /** The pool is out for the life of this process ({@code reason} says why). */
    public synchronized void failed(String reason) {
        Status s = status;
        if (s.state() == State.FAILED) {
            return;
        }
        status = new Status(State.FAILED, tier, reason, s.failures() + (s.ok() ? 1 : 0), s.reattached());
    }

    /** A probe reached the pool again: it is back in the chain. */
    public synchronized void reattached() {
        Status s = status;
        if (s.state() != State.UNAVAILABLE) {
            return;
        }
        status = new Status(State.OK, tier, null, s.failures(), s.reattached() + 1);
    }
}
