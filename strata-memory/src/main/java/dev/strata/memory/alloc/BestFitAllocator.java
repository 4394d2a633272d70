package dev.strata.memory.alloc;

import dev.strata.memory.Allocator;
import dev.strata.memory.Sizes;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.locks.StampedLock;

/**
 * Hands out variable-size ranges of {@code [0, capacity)}, each rounded up to a power-of-two
 * alignment, choosing the best fit.
 *
 * <p>Design (policy): best fit is the smallest free range that holds the rounded request; among
 * equal sizes the lowest offset wins, which keeps allocations packed towards the start. The
 * allocation takes the front of that range and the remainder stays free. On free, the range is
 * merged with a free neighbour on either side, so no two free ranges ever touch. Free ranges are
 * indexed twice: by offset (a {@link TreeMap}, for finding neighbours) and by (size, offset) (a
 * {@link TreeSet}, for the best fit); live allocations are in a hash map offset → size. Allocate
 * and free are O(log n) in the number of free ranges; sizeOf is O(1).
 *
 * <p>Threads: any thread may call any method; one {@link StampedLock} guards all state. Changes and
 * listings hold it exclusively (for a few tree operations, never across a call out of this
 * class); {@link #sizeOf} and {@link #isAllocated}, on every data access of a tier, read
 * optimistically without writing shared memory and fall back to the lock when a change raced.
 *
 * <p>Invariants (checked by {@link #checkInvariants()}): free and live ranges are disjoint, aligned
 * at their start, and together cover {@code [0, capacity)} exactly; no two free ranges are
 * adjacent; both free indexes hold the same ranges; {@code used()} is the sum of live sizes.
 */
public final class BestFitAllocator implements Allocator {

    private static final Comparator<FreeRange> BY_SIZE_THEN_OFFSET =
            Comparator.comparingLong(FreeRange::size).thenComparingLong(FreeRange::offset);

    private final long capacity;   // bytes of address space
    private final long alignment;  // bytes, power of two; every offset and size is a multiple (the last free range may end at capacity)
    private final StampedLock lock = new StampedLock(); // write mode for every change and listing; optimistic reads for sizeOf
    private final TreeMap<Long, Long> freeByOffset = new TreeMap<>();                 // offset -> size, free ranges
    private final TreeSet<FreeRange> freeBySize = new TreeSet<>(BY_SIZE_THEN_OFFSET);  // same ranges, by (size, offset)
    private final LongLongMap live = new LongLongMap();                               // offset -> rounded size, live allocations
    private long used;             // bytes, sum of live sizes

    /**
     * @param capacity  bytes of address space, {@code > 0}
     * @param alignment power of two; offsets are multiples of it and sizes are rounded up to it
     */
    public BestFitAllocator(long capacity, long alignment) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be positive, got " + capacity);
        }
        if (!Sizes.isPowerOfTwo(alignment)) {
            throw new IllegalArgumentException("alignment must be a power of two, got " + alignment);
        }
        this.capacity = capacity;
        this.alignment = alignment;
        addFree(0, capacity);
    }

    @Override
    public long allocate(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("allocation size must be positive, got " + size);
        }
        if (size > capacity) {
            return FULL;
        }
        long rounded = Sizes.alignUp(size, alignment);
        long stamp = lock.writeLock();
        try {
            FreeRange fit = freeBySize.ceiling(new FreeRange(-1, rounded));
            if (fit == null) {
                return FULL;
            }
            removeFree(fit);
            if (fit.size() > rounded) {
                addFree(fit.offset() + rounded, fit.size() - rounded);
            }
            live.put(fit.offset(), rounded);
            used += rounded;
            return fit.offset();
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    @Override
    public void free(long offset) {
        long stamp = lock.writeLock();
        try {
            long size = offset < 0 ? LongLongMap.MISSING : live.remove(offset);
            if (size == LongLongMap.MISSING) {
                throw notAllocated(offset);
            }
            used -= size;
            long start = offset;
            long end = offset + size;
            Map.Entry<Long, Long> before = freeByOffset.floorEntry(offset);
            if (before != null && before.getKey() + before.getValue() == offset) {
                removeFree(new FreeRange(before.getKey(), before.getValue()));
                start = before.getKey();
            }
            Map.Entry<Long, Long> after = freeByOffset.ceilingEntry(end);
            if (after != null && after.getKey() == end) {
                removeFree(new FreeRange(after.getKey(), after.getValue()));
                end = after.getKey() + after.getValue();
            }
            addFree(start, end - start);
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    @Override
    public long sizeIfAllocated(long offset) {
        long size = lookup(offset);
        return size == LongLongMap.MISSING ? NOT_ALLOCATED : size;
    }

    @Override
    public long sizeOf(long offset) {
        long size = lookup(offset);
        if (size == LongLongMap.MISSING) {
            throw notAllocated(offset);
        }
        return size;
    }

    /** True if {@code offset} is the start of a live allocation. */
    public boolean isAllocated(long offset) {
        return lookup(offset) != LongLongMap.MISSING;
    }

    /** The live size at {@code offset} or MISSING: an optimistic read, validated, else under the lock. */
    private long lookup(long offset) {
        if (offset < 0) {
            return LongLongMap.MISSING;
        }
        long stamp = lock.tryOptimisticRead();
        if (stamp != 0) {
            long size = live.getOptimistic(offset);
            if (lock.validate(stamp)) {
                return size;
            }
        }
        stamp = lock.readLock();
        try {
            return live.get(offset);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    private IllegalArgumentException notAllocated(long offset) {
        if (offset < 0 || offset >= capacity) {
            return new IllegalArgumentException("offset " + offset + " is outside [0, " + capacity + ")");
        }
        return new IllegalArgumentException("offset " + offset + " is not allocated (double free, or not the start of an allocation)");
    }

    @Override
    public long capacity() {
        return capacity;
    }

    @Override
    public long used() {
        long stamp = lock.writeLock();
        try {
            return used;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    @Override
    public long alignment() {
        return alignment;
    }

    @Override
    public long allocationCount() {
        long stamp = lock.writeLock();
        try {
            return live.size();
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Size of the largest free range: the largest request (rounded) that can succeed now. */
    public long largestFree() {
        long stamp = lock.writeLock();
        try {
            return freeBySize.isEmpty() ? 0 : freeBySize.last().size();
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** The free ranges, by offset. */
    public List<FreeRange> freeRanges() {
        long stamp = lock.writeLock();
        try {
            List<FreeRange> out = new ArrayList<>(freeByOffset.size());
            freeByOffset.forEach((o, s) -> out.add(new FreeRange(o, s)));
            return out;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** The live allocations, by offset. */
    public List<FreeRange> liveRanges() {
        long stamp = lock.writeLock();
        try {
            return liveRangesLocked();
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    private List<FreeRange> liveRangesLocked() {
        List<FreeRange> out = new ArrayList<>(live.size());
        live.forEach((o, sz) -> out.add(new FreeRange(o, sz)));
        out.sort(Comparator.comparingLong(FreeRange::offset));
        return out;
    }

    /**
     * Verifies the invariants listed in the class comment.
     *
     * @throws IllegalStateException naming the first violation and the ranges involved
     */
    public void checkInvariants() {
        long stamp = lock.writeLock();
        try {
            if (freeByOffset.size() != freeBySize.size()) {
                throw new IllegalStateException("free indexes disagree: " + freeByOffset.size() + " by offset, "
                        + freeBySize.size() + " by size");
            }
            TreeMap<Long, long[]> all = new TreeMap<>(); // offset -> {size, 1 if free}
            long liveSum = 0;
            for (Map.Entry<Long, Long> e : freeByOffset.entrySet()) {
                if (!freeBySize.contains(new FreeRange(e.getKey(), e.getValue()))) {
                    throw new IllegalStateException("free range at " + e.getKey() + " size " + e.getValue() + " missing from size index");
                }
                all.put(e.getKey(), new long[] {e.getValue(), 1});
            }
            for (FreeRange r : liveRangesLocked()) {
                if (r.size() <= 0 || r.size() % alignment != 0) {
                    throw new IllegalStateException("live range at " + r.offset() + " has size " + r.size()
                            + ", not a positive multiple of alignment " + alignment);
                }
                if (all.put(r.offset(), new long[] {r.size(), 0}) != null) {
                    throw new IllegalStateException("offset " + r.offset() + " is both free and live");
                }
                liveSum += r.size();
            }
            if (liveSum != used) {
                throw new IllegalStateException("used " + used + " differs from sum of live sizes " + liveSum);
            }
            long cursor = 0;
            boolean previousFree = false;
            for (Map.Entry<Long, long[]> e : all.entrySet()) {
                long offset = e.getKey();
                long size = e.getValue()[0];
                boolean isFree = e.getValue()[1] == 1;
                if (offset != cursor) {
                    throw new IllegalStateException((offset > cursor ? "gap" : "overlap") + " at " + cursor
                            + ": next range starts at " + offset);
                }
                if (offset % alignment != 0) {
                    throw new IllegalStateException("range at " + offset + " is not aligned to " + alignment);
                }
                if (size <= 0) {
                    throw new IllegalStateException("range at " + offset + " has size " + size);
                }
                if (isFree && previousFree) {
                    throw new IllegalStateException("free range at " + offset + " touches the free range before it (not coalesced)");
                }
                previousFree = isFree;
                cursor = offset + size;
            }
            if (cursor != capacity) {
                throw new IllegalStateException("ranges end at " + cursor + ", capacity is " + capacity);
            }
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    private void addFree(long offset, long size) {
        freeByOffset.put(offset, size);
        freeBySize.add(new FreeRange(offset, size));
    }

    private void removeFree(FreeRange range) {
        freeByOffset.remove(range.offset());
        freeBySize.remove(range);
    }
}
