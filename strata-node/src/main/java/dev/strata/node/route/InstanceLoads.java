package dev.strata.node.route;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The outstanding load of each engine instance, in tokens: what routers balance. A router books a
 * request's cost on the instance it picks ({@link #book}); whoever sees the request finish
 * returns it ({@link #complete}).
 *
 * <p>Invariant: every load is the sum of the costs booked and not yet completed, never negative
 * (a completion larger than the load is refused).
 *
 * <p>Threads: any; each update is one atomic operation per instance.
 */
public final class InstanceLoads {
    private final AtomicLongArray tokens; // [instance] outstanding tokens

    public InstanceLoads(int instances) {
        if (instances < 1) {
            throw new IllegalArgumentException("instance count " + instances + " must be at least 1");
        }
        this.tokens = new AtomicLongArray(instances);
    }

    public int instances() {
        return tokens.length();
    }

    /** Outstanding tokens of {@code instance}. */
    public long load(int instance) {
        return tokens.get(instance);
    }

    /** Adds {@code cost} tokens to {@code instance}'s load. */
    public void book(int instance, long cost) {
        checkCost(cost);
        tokens.addAndGet(instance, cost);
    }

    /** Adds {@code cost} if the load is still {@code expected}; false if it changed meanwhile. */
    boolean tryBook(int instance, long expected, long cost) {
        return tokens.compareAndSet(instance, expected, expected + cost);
    }

    /**
     * Removes {@code cost} tokens of a finished request from {@code instance}'s load.
     *
     * @throws IllegalStateException if the load is smaller than {@code cost} (a completion without booking)
     */
    public void complete(int instance, long cost) {
        checkCost(cost);
        while (true) {
            long now = tokens.get(instance);
            if (now < cost) {
                throw new IllegalStateException("instance " + instance + " has " + now + " outstanding tokens; cannot complete "
                        + cost + " (completed twice, or never booked)");
            }
            if (tokens.compareAndSet(instance, now, now - cost)) {
                return;
            }
        }
    }

    /** Sum of all loads (a moment's snapshot, not atomic across instances). */
    public long total() {
        long sum = 0;
        for (int i = 0; i < tokens.length(); i++) {
            sum += tokens.get(i);
        }
        return sum;
    }

    /** A snapshot of every load. */
    public long[] snapshot() {
        long[] out = new long[tokens.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = tokens.get(i);
        }
        return out;
    }

    private static void checkCost(long cost) {
        if (cost < 0) {
            throw new IllegalArgumentException("cost " + cost + " tokens must be >= 0");
        }
    }
}
