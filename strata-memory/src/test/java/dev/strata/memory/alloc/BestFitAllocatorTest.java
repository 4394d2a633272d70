package dev.strata.memory.alloc;

import dev.strata.memory.Allocator;
import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BestFitAllocatorTest {

    @Test
    void randomSequencesKeepInvariantsAfterEveryStep() {
        Property.forAll("best-fit random ops", 40, random -> {
            long alignment = 1L << random.nextInt(0, 8);
            long capacity = random.nextLong(1, 64) * alignment * random.nextLong(1, 5) + random.nextLong(0, alignment);
            BestFitAllocator allocator = new BestFitAllocator(capacity, alignment);
            AllocatorModel model = new AllocatorModel();
            List<Long> offsets = new ArrayList<>();
            for (int step = 0; step < 400; step++) {
                if (offsets.isEmpty() || random.nextInt(100) < 55) {
                    long size = random.nextLong(1, Math.max(2, capacity / 6));
                    long largestBefore = allocator.largestFree();
                    long offset = allocator.allocate(size);
                    long rounded = (size + alignment - 1) / alignment * alignment;
                    if (offset == Allocator.FULL) {
                        assertThat(largestBefore).as("FULL only when nothing fits %d", rounded).isLessThan(rounded);
                    } else {
                        model.allocated(offset, size, allocator.sizeOf(offset));
                        assertThat(allocator.sizeOf(offset)).isEqualTo(rounded);
                        offsets.add(offset);
                    }
                } else {
                    long offset = offsets.remove(random.nextInt(offsets.size()));
                    allocator.free(offset);
                    model.freed(offset);
                }
                allocator.checkInvariants();
                model.check(allocator, allocator.freeRanges(), allocator.liveRanges());
            }
            for (long offset : offsets) {
                allocator.free(offset);
                model.freed(offset);
                allocator.checkInvariants();
                model.check(allocator, allocator.freeRanges(), allocator.liveRanges());
            }
            assertThat(allocator.used()).isZero();
            assertThat(allocator.freeRanges()).containsExactly(new FreeRange(0, capacity));
        });
    }

    @Test
    void picksSmallestFittingRangeAndLowestOffsetOnTies() {
        BestFitAllocator a = new BestFitAllocator(1000, 1);
        long x = a.allocate(100);  // [0,100)
        long h1 = a.allocate(50);  // [100,150) becomes a 50 hole
        long y = a.allocate(100);  // [150,250)
        long h2 = a.allocate(30);  // [250,280) becomes a 30 hole
        long z = a.allocate(100);  // [280,380)
        long h3 = a.allocate(30);  // [380,410) becomes a 30 hole
        long w = a.allocate(10);   // [410,420), rest [420,1000) free
        a.free(h1);
        a.free(h2);
        a.free(h3);
        assertThat(a.allocate(25)).as("smallest fit, lowest offset on ties").isEqualTo(250);
        assertThat(a.allocate(30)).isEqualTo(380);
        assertThat(a.allocate(40)).isEqualTo(100);
        assertThat(a.allocate(10)).as("remainder of the 50 hole").isEqualTo(140);
        assertThat(a.allocate(10)).as("no hole left; the tail").isEqualTo(420);
        assertThat(x).isZero();
        assertThat(y).isEqualTo(150);
        assertThat(z).isEqualTo(280);
        assertThat(w).isEqualTo(410);
        a.checkInvariants();
    }

    @Test
    void coalescesWithBothNeighbours() {
        BestFitAllocator a = new BestFitAllocator(4096 * 3, 4096);
        long p = a.allocate(1);
        long q = a.allocate(4096);
        long r = a.allocate(4000);
        assertThat(a.allocate(1)).isEqualTo(Allocator.FULL);
        a.free(p);
        a.free(r);
        assertThat(a.freeRanges()).containsExactly(new FreeRange(0, 4096), new FreeRange(8192, 4096));
        a.free(q);
        assertThat(a.freeRanges()).containsExactly(new FreeRange(0, 4096 * 3));
        assertThat(a.allocate(4096 * 3)).isZero();
    }

    @Test
    void fullIsReturnedNotThrown() {
        BestFitAllocator a = new BestFitAllocator(10_000, 8);
        assertThat(a.allocate(10_001)).isEqualTo(Allocator.FULL);
        assertThat(a.allocate(Long.MAX_VALUE)).isEqualTo(Allocator.FULL);
        long x = a.allocate(9_990);
        assertThat(a.allocate(17)).isEqualTo(Allocator.FULL);
        a.free(x);
        assertThat(a.used()).isZero();
    }

    @Test
    void misuseNamesTheValues() {
        BestFitAllocator a = new BestFitAllocator(1 << 20, 64);
        assertThatThrownBy(() -> a.allocate(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0");
        assertThatThrownBy(() -> a.allocate(-5)).hasMessageContaining("-5");
        long x = a.allocate(100);
        a.free(x);
        assertThatThrownBy(() -> a.free(x)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("offset " + x).hasMessageContaining("not allocated");
        assertThatThrownBy(() -> a.free(12_345)).hasMessageContaining("12345");
        assertThatThrownBy(() -> a.sizeOf(1 << 21)).hasMessageContaining(String.valueOf(1 << 21));
        assertThatThrownBy(() -> new BestFitAllocator(4096, 48)).hasMessageContaining("48");
        assertThatThrownBy(() -> new BestFitAllocator(-1, 64)).hasMessageContaining("-1");
    }

    @Test
    void concurrentAllocateAndFreeKeepsInvariants() throws Exception {
        BestFitAllocator a = new BestFitAllocator(1 << 22, 256);
        int threads = 4;
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long seed = 1000 + t;
            Thread th = new Thread(() -> {
                SplittableRandom random = new SplittableRandom(seed);
                List<long[]> mine = new ArrayList<>(); // {offset, size}
                try {
                    start.await();
                    for (int i = 0; i < 20_000; i++) {
                        if (mine.isEmpty() || random.nextBoolean()) {
                            long size = random.nextLong(1, 20_000);
                            long off = a.allocate(size);
                            if (off != Allocator.FULL) {
                                mine.add(new long[] {off, a.sizeOf(off)});
                            }
                        } else {
                            long[] x = mine.remove(random.nextInt(mine.size()));
                            assertThat(a.sizeOf(x[0])).isEqualTo(x[1]);
                            a.free(x[0]);
                        }
                    }
                    for (long[] x : mine) {
                        a.free(x[0]);
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            workers.add(th);
            th.start();
        }
        start.countDown();
        for (Thread th : workers) {
            th.join();
        }
        assertThat(failure.get()).isNull();
        a.checkInvariants();
        assertThat(a.used()).isZero();
        assertThat(a.allocationCount()).isZero();
        assertThat(a.freeRanges()).containsExactly(new FreeRange(0, 1 << 22));
    }
}
