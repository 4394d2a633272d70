package dev.strata.memory.shm;

import static dev.strata.memory.posix.Libc.CALL_STATE;
import static dev.strata.memory.posix.Libc.FUTEX_WAIT;
import static dev.strata.memory.posix.Libc.FUTEX_WAKE;
import static dev.strata.memory.posix.Libc.SYSCALL;
import static dev.strata.memory.posix.Libc.SYS_FUTEX;
import static dev.strata.memory.posix.Libc.describe;
import static dev.strata.memory.posix.Libc.errno;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * A doorbell on one 32-bit word of a shared mapping: the one way a Strata process wakes a thread
 * of another process that sleeps until something in a shared file changes (a Linux {@code futex}
 * on the word, called through the FFM API).
 *
 * <p>Protocol (a sequence word): the waker changes the shared state it wants seen first, then
 * {@link #ring}s: it increments the word and wakes every thread sleeping on it. The waiter reads
 * the word ({@link #sequence}), re-checks its condition, and only if there is nothing to do calls
 * {@link #await} with the value it read: the kernel sleeps only while the word still holds that
 * value, so a ring between the read and the sleep makes the wait return at once (no lost
 * wake-up). Every wait has a timeout, so a lost ring, a dead waker or a peer that never rings
 * (an older file layout) costs at most one timeout: the waiter degrades to polling at that
 * interval and never hangs.
 *
 * <p>The futex is shared, keyed by the file's page and offset (no {@code FUTEX_PRIVATE_FLAG}), so
 * the word must lie in a {@code MAP_SHARED} mapping of a file (a lending file, the RPC region) for
 * rings to cross processes; in private memory it still works between threads of one process.
 * Where futex cannot be called (not Linux, no {@code syscall} in the C library, no native access)
 * {@link #available()} is false, one log line says why, rings only increment the word and
 * {@link #await} parks for its timeout: callers keep their polling.
 *
 * <p>Threads: any number of wakers and waiters, in any processes. Instances are cheap views over
 * a mapping someone else owns; the word must stay mapped while a call is under way.
 */
@SuppressWarnings("restricted") // syscall(SYS_futex, ...) on a checked, 4-byte aligned native word
public final class Doorbell {
    private static final System.Logger LOG = System.getLogger(Doorbell.class.getName());
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    /** Why futex cannot be used here, or null where it can. */
    private static final String UNAVAILABLE = probe();
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final MemorySegment word; // 4 bytes, 4-byte aligned, native

    private Doorbell(MemorySegment word) {
        this.word = word;
    }

    /**
     * The doorbell on the 32-bit word at {@code offset} of {@code mapping}.
     *
     * @throws IllegalArgumentException if the mapping is not native, or the word does not lie
     *                                  inside it on a 4-byte boundary
     */
    public static Doorbell at(MemorySegment mapping, long offset) {
        if (!mapping.isNative() || mapping.isReadOnly()) {
            throw new IllegalArgumentException("doorbell: the mapping must be a writable native segment, got " + mapping);
        }
        if (offset < 0 || offset > mapping.byteSize() - 4 || ((mapping.address() + offset) & 3) != 0) {
            throw new IllegalArgumentException("doorbell word at offset " + offset + " of a " + mapping.byteSize()
                    + "-byte mapping at 0x" + Long.toHexString(mapping.address()) + ": must lie inside it, 4-byte aligned");
        }
        return new Doorbell(mapping.asSlice(offset, 4));
    }

    /** True where rings wake sleepers at once (futex); false where {@link #await} only sleeps out its timeout. */
    public static boolean available() {
        return UNAVAILABLE == null;
    }

    /** Why {@link #available()} is false, or null when it is true. */
    public static String unavailableReason() {
        return UNAVAILABLE;
    }

    /** The word's value now (volatile read): pass it to {@link #await} after re-checking the condition. */
    public int sequence() {
        return (int) INT.getVolatile(word, 0L);
    }

    /**
     * Increments the word and wakes every thread sleeping on it, in any process. Call after the
     * change the waiters should see is visible (the increment is volatile and orders it).
     */
    public void ring() {
        INT.getAndAdd(word, 0L, 1);
        if (UNAVAILABLE == null) {
            try {
                long ignored = (long) SYSCALL.invokeExact(SCRATCH.get().state, SYS_FUTEX, word, FUTEX_WAKE,
                        (long) Integer.MAX_VALUE, MemorySegment.NULL, MemorySegment.NULL, 0L);
                // a wake has nothing to report: it wakes zero or more sleepers
            } catch (Throwable t) {
                throw new IllegalStateException("futex wake failed", t);
            }
        }
    }

    /**
     * Sleeps until the word differs from {@code seen} (a ring), the timeout passes, or a spurious
     * wake-up (a signal); returns at once if it differs already.
     *
     * @param seen         the value {@link #sequence} returned before the caller re-checked its condition
     * @param timeoutNanos the longest sleep, ns, at least 1
     * @return true if the word differs from {@code seen} on return (rung since it was read)
     * @throws IllegalArgumentException if the timeout is not positive
     */
    public boolean await(int seen, long timeoutNanos) {
        if (timeoutNanos < 1) {
            throw new IllegalArgumentException("doorbell wait timeout " + timeoutNanos + " ns: must be positive");
        }
        if (sequence() != seen) {
            return true;
        }
        if (UNAVAILABLE != null) {
            LockSupport.parkNanos(timeoutNanos);
            return sequence() != seen;
        }
        Scratch s = SCRATCH.get();
        s.timespec.set(ValueLayout.JAVA_LONG, 0, timeoutNanos / 1_000_000_000L);
        s.timespec.set(ValueLayout.JAVA_LONG, 8, timeoutNanos % 1_000_000_000L);
        long r;
        try {
            r = (long) SYSCALL.invokeExact(s.state, SYS_FUTEX, word, FUTEX_WAIT, seen & 0xFFFF_FFFFL, s.timespec,
                    MemorySegment.NULL, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException("futex wait failed", t);
        }
        // r == -1: EAGAIN (the word changed before the sleep), ETIMEDOUT or EINTR; all answered by the re-read
        return sequence() != seen;
    }

    @Override
    public String toString() {
        return "doorbell at 0x" + Long.toHexString(word.address()) + " (sequence " + sequence() + ")";
    }

    /** Per-thread native scratch: the errno capture and the {@code struct timespec} of a wait. */
    private static final class Scratch {
        final MemorySegment state = Arena.ofAuto().allocate(CALL_STATE);
        final MemorySegment timespec = Arena.ofAuto().allocate(16, 8); // { long tv_sec; long tv_nsec; }
    }

    /** Null if a futex wake on a private word succeeds here; otherwise why not (logged once). */
    private static String probe() {
        String why = null;
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            why = "not Linux (" + System.getProperty("os.name") + ")";
        } else {
            try (Arena arena = Arena.ofConfined()) {
                if (SYS_FUTEX < 0) {
                    why = "no futex system call number known for " + System.getProperty("os.arch");
                } else if (SYSCALL == null) {
                    why = "the C library has no syscall function";
                } else {
                    MemorySegment state = arena.allocate(CALL_STATE);
                    MemorySegment w = arena.allocate(4, 4);
                    long r = (long) SYSCALL.invokeExact(state, SYS_FUTEX, w, FUTEX_WAKE, 1L, MemorySegment.NULL,
                            MemorySegment.NULL, 0L);
                    if (r < 0) {
                        why = "futex wake failed: " + describe(errno(state));
                    }
                }
            } catch (Throwable t) { // IllegalCallerException without native access, a linkage error
                why = "futex cannot be called: " + t;
            }
        }
        if (why != null) {
            LOG.log(System.Logger.Level.INFO, "shared-memory doorbells unavailable (" + why + "): waiters poll at their timeouts");
        }
        return why;
    }
}
