package dev.strata.cache.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The client's lease guard: counting, closing, and waking the thread that waits for a closed
 * guard to drain from the exit that empties it.
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
     * Many rounds of a drainer that registers, looks and parks against an access that exits at a
     * random moment around the look: the drainer is always woken by the exit, never left to its
     * park's bound (a minute here, so a lost wake-up fails the round).
     */
    @Test
    void theExitThatEmptiesAClosedGuardWakesTheDrainerInEveryInterleaving() throws Exception {
        SplittableRandom random = new SplittableRandom(0x6EA5E);
        long bound = TimeUnit.MINUTES.toNanos(1);
        for (int round = 0; round < 300; round++) {
            LeaseGuard guard = new LeaseGuard();
            assertThat(guard.enter()).isTrue();
            guard.close();
            CountDownLatch registered = new CountDownLatch(1);
            AtomicLong waited = new AtomicLong(-1);
            Thread drainer = Thread.ofPlatform().start(() -> {
                guard.wakeWhenDrained(Thread.currentThread());
                registered.countDown();
                long start = System.nanoTime();
                while (guard.inFlight() != 0) {
                    LockSupport.parkNanos(bound);
                    if (System.nanoTime() - start >= bound) {
                        break;
                    }
                }
                waited.set(System.nanoTime() - start);
            });
            if (random.nextBoolean()) {
                registered.await();
            }
            long spin = random.nextLong(20_000);
            for (long t = System.nanoTime(); System.nanoTime() - t < spin; ) {
                Thread.onSpinWait();
            }
            guard.exit();
            drainer.join(TimeUnit.MINUTES.toMillis(2));
            assertThat(guard.inFlight()).isZero();
            assertThat(waited.get()).as("round %d: the drainer was woken by the exit, not by its park's bound", round)
                    .isBetween(0L, bound / 2);
        }
    }
}
