package dev.strata.memory.pool;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.lang.foreign.ValueLayout;

/**
 * The pool's shared accounting words, in the {@link PoolHeader}: chunks held by allocations and
 * allocations that are WRITING or PUBLISHED, so that {@code used()} and {@code allocationCount()}
 * are one load instead of a table scan. The update rules and the repair after a process death
 * are in {@link PoolAllocator}'s design note.
 *
 * <pre>
 * at base (PoolHeader.ALLOCATED_CHUNKS_OFFSET in a pool):
 * offset size field
 *      0    8 allocatedChunks   chunks of allocations counted as live (signed; see PoolAllocator)
 *      8    8 liveAllocations   allocations counted as live (signed)
 * </pre>
 *
 * <p>Threads: any, in any process; every change is a {@code getAndAdd} or a CAS.
 */
final class AllocationCounters {
    static final long SIZE = 16;
    static final long ALLOCATED_CHUNKS = 0;
    static final long LIVE_ALLOCATIONS = 8;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment segment;
    private final long base; // byte offset of allocatedChunks in segment, 8-byte aligned

    AllocationCounters(MemorySegment segment, long base) {
        this.segment = segment;
        this.base = base;
    }

    /** Counters over their own small heap segment, for tables that live on the heap (tests). */
    static AllocationCounters onHeap() {
        return new AllocationCounters(MemorySegment.ofArray(new long[2]), 0);
    }

    long allocatedChunks() {
        return (long) LONG.getAcquire(segment, base + ALLOCATED_CHUNKS);
    }

    long liveAllocations() {
        return (long) LONG.getAcquire(segment, base + LIVE_ALLOCATIONS);
    }

    /** Adds {@code chunks} chunks and {@code allocations} allocations (either may be negative). */
    void add(long chunks, long allocations) {
        if (chunks != 0) {
            LONG.getAndAdd(segment, base + ALLOCATED_CHUNKS, chunks);
        }
        if (allocations != 0) {
            LONG.getAndAdd(segment, base + LIVE_ALLOCATIONS, allocations);
        }
    }

    /** Replaces the chunk count if it still holds {@code expected}. */
    boolean compareAndSetChunks(long expected, long value) {
        return LONG.compareAndSet(segment, base + ALLOCATED_CHUNKS, expected, value);
    }

    /** Replaces the allocation count if it still holds {@code expected}. */
    boolean compareAndSetAllocations(long expected, long value) {
        return LONG.compareAndSet(segment, base + LIVE_ALLOCATIONS, expected, value);
    }
}
