package dev.strata.engine.kernel;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicIntegerArray;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KernelPoolTest {

    @Test
    void everyIndexRunsExactlyOnceInContiguousParts() {
        for (int threads = 1; threads <= 4; threads++) {
            try (KernelPool pool = new KernelPool(threads)) {
                for (int count : new int[] {0, 1, 2, 3, 7, 100, 1001}) {
                    AtomicIntegerArray hits = new AtomicIntegerArray(count);
                    java.util.concurrent.atomic.AtomicInteger parts = new java.util.concurrent.atomic.AtomicInteger();
                    pool.parallelFor(count, (from, to) -> {
                        assertThat(from).isLessThan(to);
                        parts.incrementAndGet();
                        for (int i = from; i < to; i++) {
                            hits.incrementAndGet(i);
                        }
                    });
                    for (int i = 0; i < count; i++) {
                        assertThat(hits.get(i)).as("index %d of %d at %d threads", i, count, threads).isEqualTo(1);
                    }
                    assertThat(parts.get()).isEqualTo(Math.min(threads, count));
                }
            }
        }
    }

    @Test
    void theCallerRunsPartsNoWorkerHasClaimed() throws Exception {
        try (KernelPool pool = new KernelPool(2)) {
            java.util.concurrent.CountDownLatch workerBusy = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
            Thread caller = Thread.currentThread();
            // another call occupies the pool's only worker until released
            java.util.concurrent.CompletableFuture<Void> blocking = java.util.concurrent.CompletableFuture.runAsync(() ->
                    pool.parallelFor(2, (from, to) -> {
                        try {
                            if (Thread.currentThread().getName().startsWith("strata-kernel-")) {
                                workerBusy.countDown();
                                release.await();
                            } else {
                                workerBusy.await();
                            }
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                    }));
            assertThat(workerBusy.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            try {
                AtomicIntegerArray hits = new AtomicIntegerArray(101);
                java.util.concurrent.atomic.AtomicInteger onCaller = new java.util.concurrent.atomic.AtomicInteger();
                pool.parallelFor(101, (from, to) -> {
                    if (Thread.currentThread() == caller) {
                        onCaller.incrementAndGet();
                    }
                    for (int i = from; i < to; i++) {
                        hits.incrementAndGet(i);
                    }
                });
                assertThat(onCaller.get()).as("parts the caller ran while the worker was busy").isEqualTo(2);
                for (int i = 0; i < 101; i++) {
                    assertThat(hits.get(i)).as("index %d", i).isEqualTo(1);
                }
                assertThat(blocking).isNotDone();
            } finally {
                release.countDown();
            }
            blocking.get(30, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    @Test
    void aFailingPartIsRethrownAfterAllParts() {
        try (KernelPool pool = new KernelPool(3)) {
            assertThatThrownBy(() -> pool.parallelFor(9, (from, to) -> {
                if (from > 0) {
                    throw new IllegalStateException("part at " + from);
                }
            })).isInstanceOf(IllegalStateException.class).hasMessageStartingWith("part at ");
            AtomicIntegerArray hits = new AtomicIntegerArray(9);
            pool.parallelFor(9, (from, to) -> {
                for (int i = from; i < to; i++) {
                    hits.incrementAndGet(i);
                }
            });
            assertThat(hits.toString()).isEqualTo("[1, 1, 1, 1, 1, 1, 1, 1, 1]");
        }
    }

    @Test
    void threadCountMustBePositive() {
        assertThatThrownBy(() -> new KernelPool(0)).hasMessageContaining("got 0");
    }
}
