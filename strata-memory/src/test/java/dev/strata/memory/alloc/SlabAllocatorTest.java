package dev.strata.memory.alloc;

import dev.strata.memory.Allocator;
import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SlabAllocatorTest {

    @Test
    void randomSequencesKeepInvariantsAfterEveryStep() {
        Property.forAll("slab random ops", 40, random -> randomSequence(random, random.nextLong(1, 5000)));
    }

    @Test
    void randomSequencesWithPowerOfTwoBlocksKeepInvariantsAfterEveryStep() {
        Property.forAll("slab random ops, power-of-two blocks", 20, random -> {
            long blockSize = 1L << random.nextInt(0, 14);
            randomSequence(random, blockSize);
            SlabAllocator a = new SlabAllocator(8 * blockSize, blockSize);
            long x = a.allocate(blockSize);
            assertThat(a.sizeOf(x)).isEqualTo(blockSize);
            if (blockSize > 1) {
                assertThatThrownBy(() -> a.free(x + blockSize / 2)).as("not a block start")
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(String.valueOf(x + blockSize / 2));
            }
            assertThatThrownBy(() -> a.free(8 * blockSize)).as("out of range").hasMessageContaining(String.valueOf(8 * blockSize));
        });
    }

    /** Random allocate/free steps on a fresh allocator with {@code blockSize}, checked against the model after each. */
    private static void randomSequence(SplittableRandom random, long blockSize) {
        int blocks = random.nextInt(1, 80);
        long capacity = blocks * blockSize + random.nextLong(0, blockSize); // odd tail stays unused
        SlabAllocator allocator = new SlabAllocator(capacity, blockSize);
        assertThat(allocator.capacity()).isEqualTo(blocks * blockSize);
        AllocatorModel model = new AllocatorModel();
        List<Long> offsets = new ArrayList<>();
        for (int step = 0; step < 300; step++) {
            if (offsets.isEmpty() || random.nextInt(100) < 55) {
                long size = random.nextLong(1, blockSize + 1);
                long offset = allocator.allocate(size);
                if (offset == Allocator.FULL) {
                    assertThat(offsets).hasSize(blocks);
                } else {
                    model.allocated(offset, size, blockSize);
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
        }
        allocator.checkInvariants();
        model.check(allocator, allocator.freeRanges(), allocator.liveRanges());
        assertThat(allocator.used()).isZero();
        assertThat(allocator.freeRanges()).containsExactly(new FreeRange(0, allocator.capacity()));
    }

    @Test
    void fullIsReturnedNotThrown() {
        SlabAllocator a = new SlabAllocator(3 * 1000, 1000);
        long x = a.allocate(1);
        a.allocate(1000);
        a.allocate(999);
        assertThat(a.allocate(1)).isEqualTo(Allocator.FULL);
        a.free(x);
        assertThat(a.allocate(7)).isEqualTo(x);
    }

    @Test
    void misuseNamesTheValues() {
        SlabAllocator a = new SlabAllocator(64 * 1024, 4096);
        assertThatThrownBy(() -> a.allocate(4097)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4097").hasMessageContaining("4096");
        assertThatThrownBy(() -> a.allocate(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0");
        long x = a.allocate(10);
        a.free(x);
        assertThatThrownBy(() -> a.free(x)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("offset " + x).hasMessageContaining("double free");
        assertThatThrownBy(() -> a.free(8192)).as("never allocated").isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("8192");
        assertThatThrownBy(() -> a.free(100)).as("not a block start").isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("100");
        assertThatThrownBy(() -> a.free(64 * 1024)).as("out of range").hasMessageContaining(String.valueOf(64 * 1024));
        assertThatThrownBy(() -> a.sizeOf(4096)).hasMessageContaining("4096");
        assertThatThrownBy(() -> new SlabAllocator(100, 200)).hasMessageContaining("100").hasMessageContaining("200");
        a.checkInvariants();
    }

    @Test
    void concurrentAllocateAndFreeNeverHandsOutABlockTwice() throws Exception {
        SlabAllocator a = new SlabAllocator(64 * 512, 512);
        Set<Long> held = ConcurrentHashMap.newKeySet();
        int threads = 4;
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long seed = 77 + t;
            Thread th = new Thread(() -> {
                SplittableRandom random = new SplittableRandom(seed);
                List<Long> mine = new ArrayList<>();
                try {
                    start.await();
                    for (int i = 0; i < 100_000; i++) {
                        if (mine.isEmpty() || (mine.size() < 24 && random.nextBoolean())) {
                            long off = a.allocate(random.nextLong(1, 513));
                            if (off != Allocator.FULL) {
                                if (!held.add(off)) {
                                    throw new AssertionError("block " + off + " handed out twice");
                                }
                                mine.add(off);
                            }
                        } else {
                            long off = mine.remove(random.nextInt(mine.size()));
                            held.remove(off);
                            a.free(off);
                        }
                    }
                    for (long off : mine) {
                        held.remove(off);
                        a.free(off);
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
        Set<Long> all = new HashSet<>();
        for (int i = 0; i < 64; i++) {
            all.add(a.allocate(512));
        }
        assertThat(all).hasSize(64).doesNotContain(Allocator.FULL);
    }
}
