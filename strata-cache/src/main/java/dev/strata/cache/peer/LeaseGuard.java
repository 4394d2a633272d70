package dev.strata.cache.peer;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * The client-side guard of one lease: counts the accesses under way and, once closed, refuses new
 * ones, so that a revocation or a free can wait for the accesses already begun (drain).
 *
 * <p>Design note: one word holds both the closed flag (bit 62) and the in-flight count (the low
 * bits). {@link #enter} is a compare-and-set that increments the count only while the flag is
 * clear; {@link #close} sets the flag with one atomic or. All changes are atomic read-modify-writes
 * of the same word, so they are totally ordered: once {@code close} has returned, no enter can
 * succeed, and the count it leaves can only fall. A drain is "wait until the count is 0". A
 * JCStress test ({@code PeerGuardStress}) checks that an access that entered is always seen by a
 * closer that then waits.
 *
 * <p>Waking a drainer: a thread that waits for a closed guard to drain registers itself
 * ({@link #wakeWhenDrained}) and then reads the count; the exit that takes a closed guard's count
 * to 0 reads the registration after its atomic decrement and unparks that thread. The
 * registration and the count are both volatile, so either the drainer's read sees 0 or the exit's
 * read sees the drainer: no wake-up is lost (a drainer still bounds its park, as a safeguard).
 *
 * <p>Threads: any thread may enter, exit and close, concurrently; each successful {@code enter}
 * must be matched by one {@code exit}.
 */
final class LeaseGuard {
    static final long CLOSED = 1L << 62;   // flag bit
    static final long COUNT = CLOSED - 1;  // mask of the in-flight count

    private static final VarHandle WORD;

    static {
        try {
            WORD = MethodHandles.lookup().findVarHandle(LeaseGuard.class, "word", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // accessed through WORD
    private volatile long word;   // CLOSED flag | accesses in flight
    private volatile Thread drainer; // unparked by the exit that leaves the closed guard empty; null: none

    /** Begins an access; false once closed. */
    boolean enter() {
        while (true) {
            long w = (long) WORD.getVolatile(this);
            if ((w & CLOSED) != 0) {
                return false;
            }
            if (WORD.compareAndSet(this, w, w + 1)) {
                return true;
            }
        }
    }

    /** Ends an access begun by a successful {@link #enter}. */
    void exit() {
        long before = (long) WORD.getAndAdd(this, -1L);
        if ((before & COUNT) == 0) {
            WORD.getAndAdd(this, 1L);
            throw new IllegalStateException("lease guard: exit without a matching enter");
        }
        if (before == (CLOSED | 1)) { // the last access of a closed guard: it has drained
            Thread t = drainer;
            if (t != null) {
                LockSupport.unpark(t);
            }
        }
    }

    /**
     * Has {@code thread} unparked by the exit that leaves this guard closed and empty. Call it
     * before reading {@link #inFlight} to decide whether to wait (see the class note).
     */
    void wakeWhenDrained(Thread thread) {
        drainer = thread;
    }

    /** Refuses every later enter; true if this call closed it. */
    boolean close() {
        long before = (long) WORD.getAndBitwiseOr(this, CLOSED);
        return (before & CLOSED) == 0;
    }

    boolean isOpen() {
        return ((long) WORD.getVolatile(this) & CLOSED) == 0;
    }

    /** Accesses under way now. */
    long inFlight() {
        return (long) WORD.getVolatile(this) & COUNT;
    }
}
