package dev.strata.memory.transfer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.host.MemoryAudit;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The one pool of bounce buffers: fixed, aligned, bounded, blocking or failing fast, audited. */
class StagingPoolTest {

    @Test
    void lendsDistinctAlignedBuffersOfTheAskedLength() throws Exception {
        try (StagingPool pool = new StagingPool("staging-test-aligned", 3, 10_000, 8192, StagingPool.Reserve.AT_CREATION)) {
            assertThat(pool.isReserved()).isTrue();
            List<MemorySegment> lent = new ArrayList<>();
            Set<Long> addresses = new HashSet<>();
            for (int i = 0; i < 3; i++) {
                MemorySegment b = pool.borrow(1000 + i);
                assertThat(b.byteSize()).isEqualTo(1000 + i);
                assertThat(b.address() % 8192).as("buffer %d aligned", i).isZero();
                assertThat(addresses.add(b.address())).as("buffer %d distinct", i).isTrue();
                lent.add(b);
            }
            lent.forEach(pool::giveBack);
            lent.clear();
            for (int i = 0; i < 3; i++) { // whole buffers do not overlap: each keeps its own bytes
                MemorySegment whole = pool.borrow();
                assertThat(whole.byteSize()).isEqualTo(10_000);
                whole.fill((byte) (i + 1));
                lent.add(whole);
            }
            for (int i = 0; i < 3; i++) {
                assertThat(lent.get(i).get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) (i + 1));
                assertThat(lent.get(i).get(ValueLayout.JAVA_BYTE, 9_999)).isEqualTo((byte) (i + 1));
            }
            assertThat(pool.lent()).isEqualTo(3);
            assertThat(pool.tryBorrow(1)).as("all lent: fails fast").isNull();
            lent.forEach(pool::giveBack);
            assertThat(pool.lent()).isZero();
        }
    }

    @Test
    void aBorrowWaitsForAGiveBack() throws Exception {
        try (StagingPool pool = new StagingPool("staging-test-wait", 1, 4096, 4096, StagingPool.Reserve.ON_FIRST_BORROW)) {
            MemorySegment only = pool.borrow(4096);
            CompletableFuture<MemorySegment> waiter = new CompletableFuture<>();
            Thread t = Thread.ofPlatform().start(() -> {
                try {
                    waiter.complete(pool.borrow(100));
                } catch (Throwable e) {
                    waiter.completeExceptionally(e);
                }
            });
            Thread.sleep(50);
            assertThat(waiter).as("waits while the only buffer is lent").isNotDone();
            pool.giveBack(only);
            MemorySegment got = waiter.get(10, TimeUnit.SECONDS);
            assertThat(got.address()).isEqualTo(only.address());
            t.join();
            pool.giveBack(got);
        }
    }

    @Test
    void onlyTheWaitIsInterruptible() throws Exception {
        try (StagingPool pool = new StagingPool("staging-test-interrupt", 1, 4096, 4096, StagingPool.Reserve.AT_CREATION)) {
            Thread.currentThread().interrupt();
            MemorySegment b = pool.borrow(10); // a free buffer is lent whatever the flag says
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
            assertThatThrownBy(() -> pool.borrow(10)).isInstanceOf(InterruptedException.class);
            assertThat(Thread.interrupted()).isFalse();
            pool.giveBack(b);
        }
    }

    @Test
    void closeWakesWaitersAndFreesTheRegionOnce() throws Exception {
        StagingPool pool = new StagingPool("staging-test-close", 1, 4096, 4096, StagingPool.Reserve.ON_FIRST_BORROW);
        assertThat(pool.isReserved()).as("reserved on first borrow").isFalse();
        assertThat(MemoryAudit.liveRegions()).noneMatch(r -> r.name().equals("staging-test-close"));
        MemorySegment b = pool.borrow(4096);
        assertThat(MemoryAudit.liveRegions()).anyMatch(r -> r.name().equals("staging-test-close") && r.bytes() >= 4096);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                pool.borrow(1);
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        Thread.sleep(50);
        pool.close();
        t.join(10_000);
        assertThat(failure.get()).isInstanceOf(IllegalStateException.class).hasMessageContaining("staging-test-close");
        assertThat(MemoryAudit.liveRegions()).noneMatch(r -> r.name().equals("staging-test-close"));
        pool.giveBack(b); // after close: ignored
        pool.close();
        assertThatThrownBy(() -> pool.tryBorrow(1)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void misuseNamesTheValues() throws Exception {
        assertThatThrownBy(() -> new StagingPool("bad", 0, 4096, 4096, StagingPool.Reserve.AT_CREATION))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 0");
        assertThatThrownBy(() -> new StagingPool("bad", 1, -5, 4096, StagingPool.Reserve.AT_CREATION))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got -5");
        assertThatThrownBy(() -> new StagingPool("bad", 1, 4096, 3000, StagingPool.Reserve.AT_CREATION))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 3000");
        try (StagingPool pool = new StagingPool("staging-test-misuse", 2, 4096, 4096, StagingPool.Reserve.AT_CREATION)) {
            assertThatThrownBy(() -> pool.borrow(4097)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("4097").hasMessageContaining("4096");
            assertThatThrownBy(() -> pool.tryBorrow(0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(" 0 bytes");
            MemorySegment b = pool.borrow(100);
            pool.giveBack(b);
            assertThatThrownBy(() -> pool.giveBack(b)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("given back twice");
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                MemorySegment stranger = arena.allocate(100);
                assertThatThrownBy(() -> pool.giveBack(stranger)).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("not lent by this pool");
            }
        }
    }

    @Test
    void manyThreadsNeverShareABuffer() throws Exception {
        try (StagingPool pool = new StagingPool("staging-test-threads", 3, 4096, 4096, StagingPool.Reserve.AT_CREATION)) {
            List<CompletableFuture<Void>> workers = new ArrayList<>();
            for (int w = 0; w < 6; w++) {
                byte mark = (byte) (w + 1);
                workers.add(CompletableFuture.runAsync(() -> {
                    for (int i = 0; i < 2000; i++) {
                        MemorySegment b;
                        try {
                            b = pool.borrow(4096);
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                        b.fill(mark);
                        Thread.onSpinWait();
                        if (b.get(ValueLayout.JAVA_BYTE, 0) != mark || b.get(ValueLayout.JAVA_BYTE, 4095) != mark) {
                            throw new AssertionError("buffer shared by two borrowers");
                        }
                        pool.giveBack(b);
                    }
                }, command -> Thread.ofPlatform().start(command)));
            }
            for (CompletableFuture<Void> f : workers) {
                try {
                    f.get(60, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    throw new AssertionError(e.getCause());
                }
            }
            assertThat(pool.lent()).isZero();
        }
    }
}
