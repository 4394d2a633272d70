package dev.strata.memory.transfer;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicIntegerArray;

import static org.assertj.core.api.Assertions.assertThat;

class MpmcQueueTest {

    @Test
    void fifoAndFullAndEmpty() {
        MpmcQueue<Integer> q = new MpmcQueue<>(4);
        assertThat(q.poll()).isNull();
        assertThat(q.hasReady()).isFalse();
        for (int i = 0; i < 4; i++) {
            assertThat(q.offer(i)).isTrue();
        }
        assertThat(q.offer(99)).as("full is a return value").isFalse();
        assertThat(q.hasReady()).isTrue();
        for (int lap = 0; lap < 3; lap++) {
            for (int i = 0; i < 4; i++) {
                assertThat(q.poll()).isEqualTo(lap * 4 + i);
                assertThat(q.offer((lap + 1) * 4 + i)).isTrue();
            }
        }
    }

    @Test
    void everyElementIsTakenExactlyOnceUnderConcurrency() throws Exception {
        MpmcQueue<Integer> q = new MpmcQueue<>(64);
        int producers = 3;
        int consumers = 3;
        int perProducer = 50_000;
        AtomicIntegerArray seen = new AtomicIntegerArray(producers * perProducer);
        AtomicLong taken = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int base = p * perProducer;
            threads.add(new Thread(() -> {
                for (int i = 0; i < perProducer; i++) {
                    while (!q.offer(base + i)) {
                        Thread.onSpinWait();
                    }
                }
            }));
        }
        for (int c = 0; c < consumers; c++) {
            threads.add(new Thread(() -> {
                while (taken.get() < (long) producers * perProducer) {
                    Integer v = q.poll();
                    if (v == null) {
                        Thread.onSpinWait();
                        continue;
                    }
                    if (seen.getAndIncrement(v) != 0) {
                        failure.compareAndSet(null, new AssertionError("element " + v + " taken twice"));
                    }
                    taken.incrementAndGet();
                }
            }));
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        assertThat(failure.get()).isNull();
        for (int i = 0; i < seen.length(); i++) {
            assertThat(seen.get(i)).as("element %d", i).isEqualTo(1);
        }
    }
}
