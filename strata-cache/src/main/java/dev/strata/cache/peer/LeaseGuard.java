package dev.strata.cache.peer;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

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
 * <p>Acting on the drain: whoever waits for a closed guard to drain registers an action
 * ({@link #runWhenDrained}), then reads the count; the exit that takes a closed guard's count to 0
 * reads the registration after its atomic decrement. The registration and the count are both
 * volatile, so either the registrant's read sees 0 or the exit's read sees the action: it is never
 * lost. Both sides then take the action with one compare-and-set, so exactly one of them runs it:
 * the exit (on the accessing thread) or the registrant (who was told the guard had drained).
 *
 * <p>Threads: any thread may enter, exit and close, concurrently; each successful {@code enter}
 * must be matched by one {@code exit}.
 */
final class LeaseGuard {
    static final long CLOSED = 1L << 62;   // flag bit
    static final long COUNT = CLOSED - 1;  // mask of the in-flight count

    private static final VarHandle WORD;
    private static final VarHandle ON_DRAINED;

    static {
        try {
            WORD = MethodHandles.lookup().findVarHandle(LeaseGuard.class, "word", long.class);
            ON_DRAINED = MethodHandles.lookup().findVarHandle(LeaseGuard.class, "onDrained", Runnable.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // accessed through WORD
    private volatile long word;   // CLOSED flag | accesses in flight
    @SuppressWarnings("unused") // accessed through ON_DRAINED
    private volatile Runnable onDrained; // run by the exit that leaves the closed guard empty; null: none

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
            Runnable action = (Runnable) ON_DRAINED.getVolatile(this);
            if (action != null && ON_DRAINED.compareAndSet(this, action, null)) {
                action.run();
            }
        }
    }

    /**
     * On a closed guard: has {@code action} run by the exit that leaves it empty, on that exit's
     * thread, unless it is empty already (see the class note). The action must be short and must
     * not block: it runs at the end of an access.
     *
     * @return true if the last exit will run {@code action}; false if the guard has drained and the
     *         caller must act itself ({@code action} will not run)
     */
    boolean runWhenDrained(Runnable action) {
        ON_DRAINED.setVolatile(this, action);
        if (inFlight() != 0) {
            return true;
        }
        return !ON_DRAINED.compareAndSet(this, action, null); // lost to the exit: it runs the action
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
