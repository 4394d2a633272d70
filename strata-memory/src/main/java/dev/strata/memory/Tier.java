package dev.strata.memory;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * One tier of memory: a capacity of bytes that holds objects, with measured performance.
 *
 * <p>An object in a tier lives in an allocation obtained from {@link #allocate}; the returned
 * handle (a {@code long}, an offset in the tier's own address space) names it in
 * {@link #write}, {@link #read} and {@link #free}. Tiers that frame their objects (POOL: publish
 * state and checksum; DISK: checksum) hide the framing: the caller sees only payload bytes.
 *
 * <p>Data paths:
 * <ul>
 *   <li>{@link #write}/{@link #gatherWrite} store an object's bytes (whole, starting at the
 *       allocation) and make them readable; on framed tiers this computes and stores the checksum
 *       and publishes the object (release semantics).</li>
 *   <li>{@link #read}/{@link #scatterRead} copy an object's bytes out; on framed tiers this checks
 *       publication (acquire) and the checksum. A missing or unpublished object is an expected
 *       outcome ({@code false}); a checksum mismatch throws {@link CorruptObjectException}.</li>
 *   <li>{@link #segment} gives a zero-copy view where {@link #isAddressable()}; if also
 *       {@link #isPlainMemory()} the view may be read and written directly (HOST, DEVICE on the CPU
 *       backend) and reads/writes through it are equivalent to {@code read}/{@code write}.</li>
 * </ul>
 *
 * <p>"Full" is an expected outcome: {@link #allocate} returns {@link Allocator#FULL}.
 *
 * <p>Threads: every method may be called from any thread; implementations state their own
 * locking. Writes to one allocation must not race with reads or writes of the same allocation
 * unless the tier's publish protocol says otherwise (POOL).
 */
public interface Tier extends AutoCloseable {

    /** A name unique among the tiers of one process, e.g. {@code host}, {@code pool0}. */
    String name();

    TierKind kind();

    /** Bytes this tier may hold in all. */
    long capacity();

    /** Bytes currently allocated, framing and rounding included. */
    long used();

    /** {@code capacity() - used()}. */
    default long available() {
        return capacity() - used();
    }

    /** True if several processes see the same bytes (POOL). */
    boolean sharedAcrossProcesses();

    /** True if the memory can be taken back by its owner (PEER). */
    boolean revocable();

    /** True if {@link #segment} returns a view of the payload bytes. */
    boolean isAddressable();

    /** True if the view from {@link #segment} may be read and written directly (no framing). */
    boolean isPlainMemory();

    /**
     * Allocates room for an object of {@code size} payload bytes.
     *
     * @return the handle of the allocation, or {@link Allocator#FULL}
     */
    long allocate(long size);

    /** Frees the allocation {@code handle}; its bytes may be reused at once. */
    void free(long handle);

    /** Payload bytes that fit in the allocation {@code handle} (at least the size asked for). */
    long allocationSize(long handle);

    /**
     * The size of every allocation when each is one fixed-size block whatever was asked (up to
     * it), so that a live allocation may be kept and reused for any object that fits; 0 otherwise
     * (allocations sized to their requests, or framed).
     */
    default long uniformAllocationBytes() {
        return 0;
    }

    /** Stores {@code src} as the object in allocation {@code handle} and makes it readable. */
    void write(long handle, MemorySegment src);

    /** Stores the concatenation of {@code parts} as the object in allocation {@code handle}. */
    void gatherWrite(long handle, List<MemorySegment> parts);

    /**
     * Copies the object in allocation {@code handle} into {@code dst} ({@code dst.byteSize()} must
     * equal the object's length on framed tiers).
     *
     * @return false if no readable object is there (not published, or freed)
     * @throws CorruptObjectException if the bytes fail their checksum
     */
    boolean read(long handle, MemorySegment dst);

    /** Like {@link #read}, splitting the object's bytes over {@code parts} in order. */
    boolean scatterRead(long handle, List<MemorySegment> parts);

    /**
     * A zero-copy view of {@code length} payload bytes of allocation {@code handle}, starting at
     * {@code offset} within it.
     *
     * @throws UnsupportedOperationException if not {@link #isAddressable()}
     */
    MemorySegment segment(long handle, long offset, long length);

    /** Capacity, occupancy and measured performance, as of now. */
    TierStats stats();

    /** Releases the tier's memory and files; every later call fails. */
    @Override
    void close();
}
