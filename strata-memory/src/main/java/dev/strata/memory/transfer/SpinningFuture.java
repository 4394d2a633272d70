package dev.strata.memory.transfer;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * A {@link CompletableFuture} whose blocking waits ({@link #join()}, {@link #get()},
 * {@link #get(long, TimeUnit)}) avoid making the link worker wake them: they first spin for up to
 * {@link #SPIN_NANOS}, then, when the submitter stated when the work should be done
 * ({@link #expectDoneAt}), sleep on their own timer until shortly before that time and spin across
 * it; only then do they park to be woken as any {@code CompletableFuture} waiter is.
 *
 * <p>Design: a transfer of a few tens of KiB finishes in microseconds; a waiter that parks at once
 * makes the link worker pay a wake-up (a system call) on completion, which costs as much as the
 * copy itself. Spinning briefly first lets most waits end without either side entering the kernel.
 * A batch of megabytes takes hundreds of microseconds, too long to spin, and the wake-up of a
 * parked waiter costs the worker tens of microseconds of its own time on a virtual machine (the
 * wake goes through the hypervisor): about 9% of a worker copying 4 MiB batches of 16 KiB objects.
 * A waiter that knows when to expect the end sleeps in naps of at most {@link #MAX_NAP_NANOS} or an
 * eighth of the wait (so work that ends early is seen within one nap, and a long wait costs the
 * waiter about eight timer wake-ups) until {@link #WAKE_EARLY_NANOS} before it, and
 * is awake when the worker completes the future: the worker then wakes nobody. The estimate is only
 * a hint: a wait past it falls back to parking, and a nap never outlasts a {@code get} timeout.
 * An interrupted waiter does not nap (its naps would return at once); it parks as before.
 *
 * <p>Threads: any, as {@link CompletableFuture}; {@link #expectDoneAt} by the submitter, before
 * the future is handed to a waiter.
 */
class SpinningFuture<T> extends CompletableFuture<T> {

    /** Longest spin of a waiter before it parks (or naps), and past the expected end, ns. */
    static final long SPIN_NANOS = 20_000;
    /** A waiter wakes from its naps this long before the expected end (covers the timer's slack), ns. */
    static final long WAKE_EARLY_NANOS = 40_000;
    /**
     * Longest single nap, ns, or an eighth of the expected wait if longer: work that ends before its
     * estimate is seen within about this long, and a long wait takes about eight naps.
     */
    static final long MAX_NAP_NANOS = 200_000;

    private volatile long expectedDoneAt; // System.nanoTime() by which the work should be done; 0: unknown

    /** States when the work should be done ({@link System#nanoTime()}); 0 for unknown. */
    void expectDoneAt(long nanoTime) {
        expectedDoneAt = nanoTime;
    }

    /** The stated time the work should be done by, or 0 (for tests). */
    long expectedDoneAt() {
        return expectedDoneAt;
    }

    /**
     * Waits, without asking to be woken, until done, or until the expected end (plus a spin) has
     * passed, or {@code budget} ns from now, whichever comes first.
     */
    private void awaitUnwoken(long budget) {
        if (isDone()) {
            return;
        }
        long start = System.nanoTime();
        while (!isDone() && System.nanoTime() - start < Math.min(SPIN_NANOS, budget)) {
            Thread.onSpinWait();
        }
        long due = expectedDoneAt;
        if (isDone() || due == 0) {
            return;
        }
        boolean napped = false;
        long longestNap = Math.max(MAX_NAP_NANOS, (due - start) / 8);
        while (!isDone() && !Thread.currentThread().isInterrupted()) {
            long now = System.nanoTime();
            long nap = Math.min(Math.min(due - WAKE_EARLY_NANOS - now, longestNap), budget - (now - start));
            if (nap <= 0) {
                break;
            }
            LockSupport.parkNanos(this, nap);
            napped = true;
        }
        if (!napped && due - System.nanoTime() > WAKE_EARLY_NANOS) {
            return; // interrupted, or out of time, before any nap: no spin to the expected end either
        }
        long now;
        while (!isDone() && (now = System.nanoTime()) - due < SPIN_NANOS && now - start < budget) {
            Thread.onSpinWait();
        }
    }

    @Override
    public T join() {
        awaitUnwoken(Long.MAX_VALUE);
        return super.join();
    }

    @Override
    public T get() throws InterruptedException, ExecutionException {
        awaitUnwoken(Long.MAX_VALUE);
        return super.get();
    }

    @Override
    public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        long start = System.nanoTime();
        long budget = unit.toNanos(timeout);
        awaitUnwoken(budget);
        return super.get(Math.max(0, budget - (System.nanoTime() - start)), TimeUnit.NANOSECONDS);
    }
}
