package dev.strata.memory.transfer;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A bounded lock-free multi-producer multi-consumer queue over a ring of slots, allocation-free
 * per element.
 *
 * <p>Design: each slot carries a sequence number. A producer claims position {@code p} by a CAS
 * on the tail when the slot's sequence equals {@code p}, stores the element, then release-stores
 * sequence {@code p + 1}; a consumer claims position {@code p} by a CAS on the head when the
 * slot's sequence equals {@code p + 1}, takes the element, then release-stores
 * {@code p + capacity}, handing the slot to the producer one lap later. The volatile sequence
 * store and load order the plain element store and load.
 *
 * <p>Threads: any number of producers and consumers.
 */
final class MpmcQueue<E> {

    private final Object[] slots;           // [capacity] elements
    private final AtomicLongArray sequence; // [capacity] per-slot sequence numbers
    private final int mask;                 // capacity - 1
    // positions: [TAIL] next position to produce, [HEAD] next position to consume; 128 bytes apart
    // so that producers and consumers do not share a cache line
    private final AtomicLongArray positions = new AtomicLongArray(32);
    private static final int TAIL = 8;
    private static final int HEAD = 24;

    /** @param capacity a power of two, at least 2 */
    MpmcQueue(int capacity) {
        if (capacity < 2 || Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("queue capacity must be a power of two >= 2, got " + capacity);
        }
        slots = new Object[capacity];
        sequence = new AtomicLongArray(capacity);
        for (int i = 0; i < capacity; i++) {
            sequence.set(i, i);
        }
        mask = capacity - 1;
    }

    /** Adds {@code e}; false if the queue is full (would block). */
    boolean offer(E e) {
        return offerAt(e) >= 0;
    }

    /** Adds {@code e}; returns the position it took, or -1 if the queue is full (would block). */
    long offerAt(E e) {
        long pos = positions.get(TAIL);
        while (true) {
            int index = (int) pos & mask;
            long diff = sequence.get(index) - pos;
            if (diff == 0) {
                if (positions.compareAndSet(TAIL, pos, pos + 1)) {
                    slots[index] = e;
                    sequence.set(index, pos + 1);
                    return pos;
                }
                pos = positions.get(TAIL);
            } else if (diff < 0) {
                return -1;
            } else {
                pos = positions.get(TAIL);
            }
        }
    }

    /** Takes the oldest element, or null if none is ready. */
    @SuppressWarnings("unchecked")
    E poll() {
        long pos = positions.get(HEAD);
        while (true) {
            int index = (int) pos & mask;
            long diff = sequence.get(index) - (pos + 1);
            if (diff == 0) {
                if (positions.compareAndSet(HEAD, pos, pos + 1)) {
                    E e = (E) slots[index];
                    slots[index] = null;
                    sequence.set(index, pos + mask + 1);
                    return e;
                }
                pos = positions.get(HEAD);
            } else if (diff < 0) {
                return null;
            } else {
                pos = positions.get(HEAD);
            }
        }
    }

    /** The next position a consumer will take (positions count every element ever offered). */
    long headPosition() {
        return positions.get(HEAD);
    }

    /** Elements queued or being queued now (a racy estimate when producers or consumers are active). */
    int size() {
        long head = positions.get(HEAD);
        return (int) Math.max(0, positions.get(TAIL) - head);
    }

    /** True if an element is ready at the head (a volatile read). */
    boolean hasReady() {
        long pos = positions.get(HEAD);
        return sequence.get((int) pos & mask) == pos + 1;
    }
}
