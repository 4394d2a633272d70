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
