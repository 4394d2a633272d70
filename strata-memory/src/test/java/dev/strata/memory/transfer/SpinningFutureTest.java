package dev.strata.memory.transfer;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A waiter that knows when the work should end sleeps on its own timer and is awake at the end, so
 * the completing thread (a link worker) has nobody to wake; without an estimate, past it, or
 * interrupted, it parks to be woken as any waiter. Whether a waiter asked to be woken is read from
 * {@link CompletableFuture#getNumberOfDependents()}, which counts parked waiters.
 */
class SpinningFutureTest {

    private static final long MS = 1_000_000;

    /** Starts a thread that joins {@code f} and records its value; returns once it is about to wait. */
    private static Thread joiner(SpinningFuture<String> f, AtomicReference<String> got) throws InterruptedException {
        CountDownLatch started = new CountDownLatch(1);
        Thread t = Thread.ofPlatform().start(() -> {
            started.countDown();
            got.set(f.join());
        });
        started.await();
        return t;
    }

    /** Lets {@code t} wait {@code ms} more, and checks it still does. */
    private static void letItWait(Thread t, long ms) throws InterruptedException {
        Thread.sleep(ms);
        assertThat(t.isAlive()).as("the waiter is still waiting").isTrue();
    }

    /** Waits (up to 10 s) until a waiter of {@code f} has asked to be woken. */
    private static void awaitRegisteredWaiter(CompletableFuture<?> f) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000 * MS;
        while (f.getNumberOfDependents() == 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(f.getNumberOfDependents()).as("a waiter parked to be woken").isEqualTo(1);
    }

    /** Completes {@code f} with {@code value} and checks that {@code waiter} returns it. */
    private static void completeAndSee(SpinningFuture<String> f, String value, Thread waiter, AtomicReference<String> got)
            throws InterruptedException {
        f.complete(value);
        waiter.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(waiter.isAlive()).as("the waiter returned").isFalse();
        assertThat(got.get()).isEqualTo(value);
    }

    @Test
    void aWaiterWithAnExpectedEndSleepsOnItsOwnTimerAndLeavesNobodyToWake() throws Exception {
        SpinningFuture<String> f = new SpinningFuture<>();
        f.expectDoneAt(System.nanoTime() + 2_000 * MS);
        AtomicReference<String> got = new AtomicReference<>();
        Thread waiter = joiner(f, got);
        letItWait(waiter, 100);
        assertThat(f.getNumberOfDependents()).as("no waiter registered to be woken").isZero();
        completeAndSee(f, "done", waiter, got); // seen within a nap, long before the estimate
    }

    @Test
    void withoutAnEstimateAWaiterParksToBeWokenAfterItsSpin() throws Exception {
        SpinningFuture<String> f = new SpinningFuture<>();
        AtomicReference<String> got = new AtomicReference<>();
        Thread waiter = joiner(f, got);
        awaitRegisteredWaiter(f);
        completeAndSee(f, "done", waiter, got);
    }

    @Test
    void aWaitPastItsEstimateFallsBackToParking() throws Exception {
        SpinningFuture<String> f = new SpinningFuture<>();
        f.expectDoneAt(System.nanoTime() + 20 * MS);
        AtomicReference<String> got = new AtomicReference<>();
        Thread waiter = joiner(f, got);
        letItWait(waiter, 100);
        awaitRegisteredWaiter(f); // past the estimate the waiter asks to be woken
        completeAndSee(f, "late", waiter, got);
    }

    @Test
    void aTimedGetNeverNapsPastItsTimeout() throws Exception {
        SpinningFuture<String> f = new SpinningFuture<>();
        f.expectDoneAt(System.nanoTime() + 60_000 * MS);
        long start = System.nanoTime();
        assertThatThrownBy(() -> f.get(50, TimeUnit.MILLISECONDS)).isInstanceOf(TimeoutException.class);
        assertThat(System.nanoTime() - start).as("the timeout, not the estimate, ends the wait").isLessThan(30_000 * MS);
        f.complete("x");
        assertThat(f.get(1, TimeUnit.SECONDS)).isEqualTo("x");
    }

    @Test
    void anInterruptedWaiterParksInsteadOfNappingAndKeepsItsInterrupt() throws Exception {
        SpinningFuture<String> f = new SpinningFuture<>();
        f.expectDoneAt(System.nanoTime() + 60_000 * MS);
        AtomicReference<String> got = new AtomicReference<>();
        AtomicBoolean stillInterrupted = new AtomicBoolean();
        Thread waiter = Thread.ofPlatform().start(() -> {
            Thread.currentThread().interrupt();
            got.set(f.join());
            stillInterrupted.set(Thread.currentThread().isInterrupted());
        });
        awaitRegisteredWaiter(f);
        completeAndSee(f, "done", waiter, got);
        assertThat(stillInterrupted).isTrue();
    }

    @Test
    void anExceptionalCompletionReachesANappingWaiter() throws Exception {
        SpinningFuture<String> f = new SpinningFuture<>();
        f.expectDoneAt(System.nanoTime() + 2_000 * MS);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1);
        Thread waiter = Thread.ofPlatform().start(() -> {
            started.countDown();
            try {
                f.get();
            } catch (ExecutionException | InterruptedException e) {
                thrown.set(e);
            }
        });
        started.await();
        letItWait(waiter, 50);
        f.completeExceptionally(new IllegalStateException("injected"));
        waiter.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(thrown.get()).isInstanceOf(ExecutionException.class).cause().hasMessage("injected");
    }
}
