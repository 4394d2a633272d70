package dev.strata.memory.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.memory.Allocator;
import dev.strata.memory.Sizes;
import dev.strata.testing.Property;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class PoolAllocatorTest {
    static final long CHUNK = 4096;

    /** Tables of a small pool on the heap, shared by allocators of several process slots. */
    static final class Tables {
        final long chunks;
        final ChunkTable chunkTable;
        final ObjectDescriptorTable descriptors;
        final MemorySegment data;
        final AllocationCounters counters = AllocationCounters.onHeap();

        Tables(long chunks) {
            this.chunks = chunks;
            chunkTable = new ChunkTable(MemorySegment.ofArray(new long[(int) chunks]), 0, chunks);
            descriptors = new ObjectDescriptorTable(MemorySegment.ofArray(new long[(int) chunks * 4]), 0, chunks);
            data = MemorySegment.ofArray(new byte[(int) (chunks * CHUNK)]);
        }

        PoolAllocator allocator(int slot) {
            return new PoolAllocator("prop", chunkTable, descriptors, counters, CHUNK, slot);
        }
    }

    @Test
    void allocationsNeverOverlapAndAccountingBalances() {
        Property.forAll("pool allocator invariants", 40, random -> {
            Tables t = new Tables(8 + random.nextInt(120));
            List<PoolAllocator> allocators = List.of(t.allocator(0), t.allocator(1), t.allocator(2));
            TreeMap<Long, Long> live = new TreeMap<>(); // handle -> bytes reserved
            for (int step = 0; step < 300; step++) {
                PoolAllocator a = allocators.get(random.nextInt(allocators.size()));
                if (live.isEmpty() || random.nextInt(5) < 3) {
                    long size = 1 + random.nextLong(CHUNK * 12);
                    long h = a.allocate(size);
                    if (h == Allocator.FULL) {
                        assertThat(longestFreeRun(live, t.chunks)).as("FULL although a run fits, step " + step)
                                .isLessThan((size + CHUNK - 1) / CHUNK);
                    } else {
                        assertThat(h % CHUNK).isZero();
                        assertThat(a.sizeOf(h)).isEqualTo(Sizes.alignUp(size, CHUNK));
                        live.put(h, a.sizeOf(h));
                    }
                } else {
                    List<Long> handles = new ArrayList<>(live.keySet());
                    long h = handles.get(random.nextInt(handles.size()));
                    a.free(h); // any process may free
                    live.remove(h);
                }
                checkInvariants(t, allocators.getFirst(), live);
            }
            for (long h : new ArrayList<>(live.keySet())) {
                allocators.get(random.nextInt(3)).free(h);
                live.remove(h);
                checkInvariants(t, allocators.getFirst(), live);
            }
            assertThat(allocators.getFirst().used()).isZero();
        });
    }

    static long longestFreeRun(TreeMap<Long, Long> live, long chunks) {
        long best = 0;
        long at = 0;
        for (Map.Entry<Long, Long> e : live.entrySet()) {
            best = Math.max(best, (e.getKey() - at) / CHUNK);
            at = e.getKey() + e.getValue();
        }
        return Math.max(best, chunks - at / CHUNK);
    }

    static void checkInvariants(Tables t, PoolAllocator a, TreeMap<Long, Long> live) {
        long end = 0;
        long sum = 0;
        for (Map.Entry<Long, Long> e : live.entrySet()) {
            assertThat(e.getKey()).as("allocations overlap").isGreaterThanOrEqualTo(end);
            end = e.getKey() + e.getValue();
            assertThat(end).isLessThanOrEqualTo(a.capacity());
            sum += e.getValue();
            assertThat(a.sizeIfAllocated(e.getKey())).isEqualTo(e.getValue());
            if (e.getValue() > CHUNK) {
                assertThat(a.sizeIfAllocated(e.getKey() + CHUNK)).as("inside an allocation").isEqualTo(Allocator.NOT_ALLOCATED);
            }
            long head = e.getKey() / CHUNK;
            for (long c = head; c < end / CHUNK; c++) {
                assertThat(ChunkTable.head(t.chunkTable.get(c))).as("chunk " + c + " belongs to its allocation").isEqualTo(head);
            }
        }
        assertThat(a.used()).as("counted used bytes").isEqualTo(sum);
        assertThat(a.usedByScan()).as("scanned used bytes").isEqualTo(sum);
        assertThat(a.allocationCount()).as("counted allocations").isEqualTo(live.size());
        assertThat(a.allocationCountByScan()).as("scanned allocations").isEqualTo(live.size());
    }

    @Test
    void reclaimFreesOnlyTheUnpublishedAllocationsOfADeadSlot() {
        Property.forAll("pool reclaim", 30, random -> {
            Tables t = new Tables(64);
            PoolAllocator survivor = t.allocator(0);
            PoolAllocator dead = t.allocator(1);
            PublishProtocol deadWriter = new PublishProtocol("prop", t.descriptors, t.data, dead);
            long kept = survivor.allocate(1 + random.nextInt(20_000));
            long published = 0;
            List<Long> publishedHandles = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                int size = 1 + random.nextInt(12_000);
                long h = dead.allocate(size);
                if (h == Allocator.FULL) {
                    break;
                }
                if (random.nextBoolean()) {
                    byte[] payload = new byte[size];
                    random.nextBytes(payload);
                    payload[0] |= 1;
                    deadWriter.write(h, List.of(MemorySegment.ofArray(payload)));
                    published += dead.sizeOf(h);
                    publishedHandles.add(h);
                }
            }
            // a claim cut short: chunks labelled by the dead slot whose descriptor never left FREE
            long stale = freeRunStart(t, 3);
            if (stale >= 0) {
                for (long c = stale; c < stale + (random.nextBoolean() ? 3 : 1); c++) {
                    assertThat(t.chunkTable.compareAndSet(c, 0, ChunkTable.word(1, stale))).isTrue();
                }
            }
            // a free cut short: the dead slot had begun freeing one of its published objects
            if (publishedHandles.size() > 1 && random.nextBoolean()) {
                long h = publishedHandles.removeLast();
                long head = h / CHUNK;
                long w = t.descriptors.stateAcquire(head);
                published -= dead.sizeOf(h);
                assertThat(t.descriptors.compareAndSetState(head, w, ObjectDescriptorTable.word(
                        ObjectDescriptorTable.FREEING, 1, ObjectDescriptorTable.generation(w) + 1))).isTrue();
            }
            // a claim whose descriptor CAS succeeded but whose counter update never ran
            long uncounted = freeRunStart(t, 2);
            if (uncounted >= 0 && random.nextBoolean()) {
                for (long c = uncounted; c < uncounted + 2; c++) {
                    assertThat(t.chunkTable.compareAndSet(c, 0, ChunkTable.word(1, uncounted))).isTrue();
                }
                long free = t.descriptors.stateAcquire(uncounted);
                t.descriptors.setRunChunks(uncounted, 2);
                assertThat(t.descriptors.compareAndSetState(uncounted, free, ObjectDescriptorTable.word(
                        ObjectDescriptorTable.WRITING, 1, ObjectDescriptorTable.generation(free) + 1))).isTrue();
            }
            survivor.reclaimSlot(1);
            assertThat(survivor.usedByScan()).isEqualTo(survivor.sizeOf(kept) + published);
            assertThat(survivor.allocationCountByScan()).isEqualTo(1 + publishedHandles.size());
            assertThat(survivor.recount()).as("recount with no concurrent operation").isTrue();
            assertThat(survivor.used()).as("counters repaired after reclaim").isEqualTo(survivor.sizeOf(kept) + published);
            assertThat(survivor.allocationCount()).isEqualTo(1 + publishedHandles.size());
            for (long h : publishedHandles) {
                byte[] back = new byte[(int) t.descriptors.length(h / CHUNK)];
                assertThat(new PublishProtocol("prop", t.descriptors, t.data, survivor)
                        .read(h, List.of(MemorySegment.ofArray(back)))).isTrue();
                survivor.free(h);
            }
            survivor.free(kept);
            assertThat(survivor.used()).isZero();
            assertThat(survivor.allocationCount()).isZero();
        });
    }

    private static long freeRunStart(Tables t, long n) {
        for (long i = 0; i + n <= t.chunks; i++) {
            boolean free = true;
            for (long k = 0; k < n && free; k++) {
                free = t.chunkTable.get(i + k) == 0;
            }
            if (free) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void concurrentThreadsWithSeparateSlotsNeverShareChunks() throws Exception {
        Tables t = new Tables(256);
        int threads = 3;
        List<Thread> workers = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int s = 0; s < threads; s++) {
            PoolAllocator a = t.allocator(s);
            PublishProtocol p = new PublishProtocol("threads", t.descriptors, t.data, a);
            long seed = 1000 + s;
            workers.add(Thread.ofPlatform().start(() -> {
                try {
                    SplittableRandom random = new SplittableRandom(seed);
                    for (int i = 0; i < 3000; i++) {
                        int size = 1 + random.nextInt(40_000);
                        long h = a.allocate(size);
                        if (h == Allocator.FULL) {
                            continue;
                        }
                        byte[] payload = new byte[size];
                        random.nextBytes(payload);
                        payload[0] |= 1;
                        p.write(h, List.of(MemorySegment.ofArray(payload)));
                        byte[] back = new byte[size];
                        assertThat(p.read(h, List.of(MemorySegment.ofArray(back)))).isTrue();
                        assertThat(back).isEqualTo(payload);
                        a.free(h);
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread w : workers) {
            w.join();
        }
        assertThat(failures).isEmpty();
        assertThat(t.allocator(0).used()).isZero();
        assertThat(t.allocator(0).allocationCount()).isZero();
    }
}
