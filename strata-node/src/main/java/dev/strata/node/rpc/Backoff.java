package dev.strata.node.rpc;

import java.util.concurrent.locks.LockSupport;

/**
 * Adaptive waiting for a flag another process will set: spin with {@link Thread#onSpinWait}
 * first (the answer usually comes within a microsecond), then {@link Thread#yield} (give the
 * core to the other side when cores are scarce), then {@link LockSupport#parkNanos} with a bound
 * that doubles from {@code minParkNanos} up to {@code maxParkNanos} (an idle waiter costs almost
 * nothing). {@link #reset} after progress starts over with spinning.
 *
 * <p>Design note: a waiter in the park phase sees a flag late by at most the current park bound,
 * so the maximum bound trades idle CPU against the latency of the first request after a pause.
 *
 * <p>Not thread-safe: one instance per waiting thread.
 */
public final class Backoff {
    private final int spins;
    private final int yields;
    private final long minParkNanos;
    private final long maxParkNanos;
    private int spun;
    private int yielded;
    private long parkNanos;

    /**
     * @param spins        spin iterations before yielding
     * @param yields       yields before parking
     * @param minParkNanos first park bound, ns
     * @param maxParkNanos largest park bound, ns
     */
    public Backoff(int spins, int yields, long minParkNanos, long maxParkNanos) {
        if (spins < 0 || yields < 0 || minParkNanos < 1 || maxParkNanos < minParkNanos) {
            throw new IllegalArgumentException("backoff spins " + spins + ", yields " + yields + ", park "
                    + minParkNanos + ".." + maxParkNanos + " ns: counts must be >= 0 and 1 <= min <= max");
        }
        this.spins = spins;
        this.yields = yields;
        this.minParkNanos = minParkNanos;
        this.maxParkNanos = maxParkNanos;
        reset();
    }

    /** Starts over with spinning (after progress). */
    public void reset() {
        spun = 0;
        yielded = 0;
        parkNanos = minParkNanos;
    }

    /** Waits once, a little longer each call. */
    public void idle() {
        if (spun < spins) {
            spun++;
            Thread.onSpinWait();
        } else if (yielded < yields) {
            yielded++;
            Thread.yield();
        } else {
            LockSupport.parkNanos(parkNanos);
            parkNanos = Math.min(maxParkNanos, parkNanos << 1);
        }
    }

    /** True once spinning is over (yield or park phase): time for slower checks. */
    public boolean pastSpinning() {
        return spun >= spins;
    }
}
