package dev.strata.memory;

/**
 * Hands out byte ranges of a fixed address space {@code [0, capacity)}.
 *
 * <p>An allocation is identified by its start offset. "Full" is an expected outcome and is
 * reported by returning {@link #FULL}, never by an exception; misuse (a non-positive size, freeing
 * an offset that is not allocated, a double free) throws {@link IllegalArgumentException} or
 * {@link IllegalStateException} naming the offending value.
 *
 * <p>Invariants every implementation keeps: allocated ranges never overlap and lie inside
 * {@code [0, capacity)}; {@code used()} equals the sum of {@link #sizeOf} over live allocations;
 * freeing every allocation restores {@code used() == 0}.
 *
 * <p>Implementations document which threads may call them.
 */
public interface Allocator {

    /** Returned by {@link #allocate} when no range of the requested size is free. */
    long FULL = -1L;

    /**
     * Allocates at least {@code size} bytes.
     *
     * @param size bytes wanted, {@code > 0}
     * @return the offset of the range, aligned to {@link #alignment()}, or {@link #FULL}
     */
    long allocate(long size);

    /** Releases the allocation that starts at {@code offset}. */
    void free(long offset);

    /** Returned by {@link #sizeIfAllocated} for an offset where no allocation starts. */
    long NOT_ALLOCATED = -1L;

    /**
     * Bytes actually reserved for the allocation at {@code offset} (the request rounded up).
     *
     * @throws IllegalArgumentException naming the offset if no allocation starts there
     */
    long sizeOf(long offset);

    /**
     * Like {@link #sizeOf}, for callers to whom a missing allocation is an expected outcome (a read
     * of an object that is not there): returns {@link #NOT_ALLOCATED} instead of throwing, for any
     * offset, inside the address space or not.
     */
    long sizeIfAllocated(long offset);

    /** Total bytes managed. */
    long capacity();

    /** Bytes currently reserved, rounding included. */
    long used();

    /** Bytes not reserved (fragmentation may keep a large request from fitting). */
    default long available() {
        return capacity() - used();
    }

    /** Alignment of every returned offset, a power of two. */
    long alignment();

    /** Number of live allocations. */
    long allocationCount();

    /**
     * The size of every allocation when this allocator hands out one fixed-size block per request
     * (any size up to it), so that an allocation can stand in for any other: 0 when allocations
     * are sized to their requests.
     */
    default long uniformBlockBytes() {
        return 0;
    }
}
