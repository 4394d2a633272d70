package dev.strata.memory.transfer;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A {@link CompletableFuture} whose blocking waits ({@link #join()}, {@link #get()},
 * {@link #get(long, TimeUnit)}) first spin for up to {@link #SPIN_NANOS} before parking.
 *
 * <p>Design: a transfer of a few tens of KiB finishes in microseconds; a waiter that parks at once
 * makes the link worker pay a wake-up (a system call) on completion, which costs as much as the
 * copy itself. Spinning briefly first lets most waits end without either side entering the kernel.
 *
 * <p>Threads: any, as {@link CompletableFuture}.
 */
class SpinningFuture<T> extends CompletableFuture<T> {

    /** Longest spin of a waiter before it parks, ns. */
    static final long SPIN_NANOS = 20_000;

    private void spinBriefly() {
        if (isDone()) {
            return;
        }
        long deadline = System.nanoTime() + SPIN_NANOS;
        do {
            Thread.onSpinWait();
        } while (!isDone() && System.nanoTime() < deadline);
    }

    @Override
    public T join() {
        spinBriefly();
        return super.join();
    }

    @Override
    public T get() throws InterruptedException, ExecutionException {
        spinBriefly();
        return super.get();
    }

    @Override
    public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        spinBriefly();
        return super.get(timeout, unit);
    }
}
