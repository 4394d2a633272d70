package dev.strata.cache.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The client's lease guard: counting, closing, and the action taken once when a closed guard
 * drains, by its last exit or by the registrant.
 */
class LeaseGuardTest {

    @Test
    void countsAccessesAndRefusesThemOnceClosed() {
        LeaseGuard guard = new LeaseGuard();
        assertThat(guard.enter()).isTrue();
        assertThat(guard.enter()).isTrue();
        assertThat(guard.inFlight()).isEqualTo(2);
        assertThat(guard.close()).as("this call closed it").isTrue();
        assertThat(guard.close()).as("already closed").isFalse();
        assertThat(guard.enter()).isFalse();
        guard.exit();
        guard.exit();
        assertThat(guard.inFlight()).isZero();
        assertThatThrownBy(guard::exit).isInstanceOf(IllegalStateException.class).hasMessageContaining("without a matching enter");
        assertThat(guard.inFlight()).as("a wrong exit leaves the count as it was").isZero();
    }

    /**
     * Many rounds of a registrant against the last exit of a closed guard, the exit at a random
     * moment around the registration: in every round exactly one of them acts, the exit by running
     * the action or the registrant because it was told the guard had drained.
     */
    @Test
    void exactlyOneOfTheRegistrantAndTheLastExitActsOnTheDrain() throws Exception {
        SplittableRandom random = new SplittableRandom(0x6EA5E);
        int byExit = 0;
        int byRegistrant = 0;
        for (int round = 0; round < 2000; round++) {
            LeaseGuard guard = new LeaseGuard();
            assertThat(guard.enter()).isTrue();
            guard.close();
            AtomicInteger ran = new AtomicInteger();
            AtomicInteger willRun = new AtomicInteger(-1);
            CountDownLatch start = new CountDownLatch(1);
            long spin = random.nextLong(5_000);
            Thread registrant = Thread.ofPlatform().start(() -> {
                await(start);
                for (long t = System.nanoTime(); System.nanoTime() - t < spin; ) {
                    Thread.onSpinWait();
                }
                willRun.set(guard.runWhenDrained(ran::incrementAndGet) ? 1 : 0);
            });
            start.countDown();
            guard.exit();
            registrant.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(guard.inFlight()).isZero();
            assertThat(ran.get() + (willRun.get() == 0 ? 1 : 0)).as("round %d: acted once (ran %d, told to run itself: %s)",
                    round, ran.get(), willRun.get() == 0).isEqualTo(1);
            if (willRun.get() == 1) {
                byExit++;
            } else {
                byRegistrant++;
            }
        }
        assertThat(byExit + byRegistrant).isEqualTo(2000);
    }

    @Test
    void anOpenOrEmptyGuardTellsTheRegistrantToActItself() {
        LeaseGuard guard = new LeaseGuard();
        guard.close();
        AtomicInteger ran = new AtomicInteger();
        assertThat(guard.runWhenDrained(ran::incrementAndGet)).as("closed and empty: drained").isFalse();
        assertThat(ran.get()).isZero();
        LeaseGuard busy = new LeaseGuard();
        assertThat(busy.enter()).isTrue();
        assertThat(busy.enter()).isTrue();
        busy.close();
        assertThat(busy.runWhenDrained(ran::incrementAndGet)).isTrue();
        busy.exit();
        assertThat(ran.get()).as("not the last exit").isZero();
        busy.exit();
        assertThat(ran.get()).as("the last exit runs it, once").isEqualTo(1);
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
