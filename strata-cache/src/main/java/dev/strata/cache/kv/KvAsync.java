package dev.strata.cache.kv;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.concurrent.locks.LockSupport;

/**
 * The asynchronous side of a {@link KvBlockManager}: its single I/O thread (store calls and
 * shared-pool copies, run in submission order), the count of work in flight (I/O tasks and the
 * transfers they start), and the lock-free queue that hands completions back to the scheduler
 * thread, which applies them in {@link #poll()}. So the manager's state only ever changes on the
 * scheduler thread.
 *
 * <p>Protocol: whoever starts work calls {@link #begin()} first; the work ends with exactly one
 * {@link #hand} (its completion is queued, then the count drops) or {@link #end()} (nothing to
 * apply). {@link #idle()} is therefore true only when nothing is in flight and nothing queued.
 *
 * <p>Threads: {@link #begin}, {@link #execute}, {@link #poll}, {@link #awaitIdle},
 * {@link #awaitCompletion} and {@link #shutdown} on the scheduler thread; {@link #hand},
 * {@link #end} and {@link #post} on any thread. A scheduler thread parked in
 * {@link #awaitCompletion} registers itself first, then looks at the queue; a completion is queued
 * first, then the registered thread is woken: so a completion queued while it parks is never missed.
 */
final class KvAsync {
    private final ConcurrentLinkedQueue<Runnable> completions = new ConcurrentLinkedQueue<>(); // to run on the scheduler
    private final AtomicInteger outstanding = new AtomicInteger(); // tasks and transfers whose completion is not yet queued
    private final ExecutorService io; // the single I/O thread
    private volatile Thread waiter; // the scheduler thread while it waits in awaitCompletion; null otherwise

    KvAsync() {
        this.io = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "strata-kv-io");
            t.setDaemon(true);
            return t;
        });
    }

    /** Counts one piece of work as in flight. */
    void begin() {
        outstanding.incrementAndGet();
    }

    /** Runs {@code task} on the I/O thread, after every task submitted before it. */
    void execute(Runnable task) {
        io.execute(task);
    }

    /** Ends a piece of work: queues {@code apply} for the scheduler thread, then stops counting it. */
    void hand(Runnable apply) {
        completions.add(apply);
        outstanding.decrementAndGet();
        wake();
    }

    /** Ends a piece of work that has nothing to apply. */
    void end() {
        outstanding.decrementAndGet();
        wake();
    }

    /** Queues {@code apply} for the scheduler thread (not counted work: e.g. a store drop). */
    void post(Runnable apply) {
        completions.add(apply);
        wake();
    }

    /** Wakes the scheduler thread if it waits in {@link #awaitCompletion}: it looks at its condition again. Any thread. */
    void wake() {
        Thread t = waiter;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /** Work in flight now. */
    int inFlight() {
        return outstanding.get();
    }

    /** True when nothing is in flight and nothing is queued. */
    boolean idle() {
        return outstanding.get() == 0 && completions.isEmpty();
    }

    /** Applies the queued completions on the calling (scheduler) thread; never waits. */
    int poll() {
        int n = 0;
        Runnable r;
        while ((r = completions.poll()) != null) {
            r.run();
            n++;
        }
        return n;
    }

    /** Applies completions as they arrive until {@link #idle()}; false if the timeout passed first. Waits. */
    boolean awaitIdle(long timeout, TimeUnit unit) {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        while (true) {
            poll();
            if (idle()) {
                return true;
            }
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            LockSupport.parkNanos(20_000);
        }
    }

    /**
     * Waits until a completion is queued or a piece of work ends, {@code nanos} pass, or
     * {@code enough} is true (checked after every {@link #wake}), whichever comes first; returns at
     * once when one is queued already or nothing is in flight. Then applies the queued completions
     * ({@link #poll}) and returns how many. Waits, parked.
     */
    int awaitCompletion(long nanos, BooleanSupplier enough) {
        int before = outstanding.get();
        if (completions.isEmpty() && before > 0) {
            long deadline = System.nanoTime() + nanos;
            waiter = Thread.currentThread();
            try {
                while (completions.isEmpty() && outstanding.get() == before && !enough.getAsBoolean()) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        break;
                    }
                    LockSupport.parkNanos(this, left); // a spurious return looks again
                }
            } finally {
                waiter = null;
            }
        }
        return poll();
    }

    /** Stops the I/O thread after its queued tasks; false if they did not finish in a minute. Waits. */
    boolean shutdown() {
        io.shutdown();
        try {
            return io.awaitTermination(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
