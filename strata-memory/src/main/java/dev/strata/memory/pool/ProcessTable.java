package dev.strata.memory.pool;

import dev.strata.memory.shm.ProcessLiveness;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.function.LongSupplier;

/**
 * The table of processes that have the pool open, in the pool itself, so that any process can
 * tell whether the owner of an allocation is still alive.
 *
 * <pre>
 * Slot i at processTableOffset + i * SLOT_SIZE (64 bytes):
 * offset size field
 *      0    8 stateWord   bits 0-7 state (FREE 0, CLAIMING 1, ACTIVE 2, RECLAIMING 3),
 *                         bits 8-63: the pid (CLAIMING, ACTIVE) or the reclaiming slot (RECLAIMING)
 *      8    8 pid         copy of the pid, for inspection
 *     16    8 startMillis the process's start instant, epoch ms (0 unknown)
 *     24    8 heartbeat   epoch ms, refreshed by the process's heartbeat thread
 *     32    8 incarnation bumped at every claim of the slot
 *     40   24 reserved
 * </pre>
 *
 * <p>Protocol: a process claims a FREE slot with one CAS to {@code pid|CLAIMING}, writes its start
 * time and heartbeat, then release-stores {@code pid|ACTIVE}. A process that finds a slot whose
 * process is dead CASes it to {@code me|RECLAIMING}, returns the dead process's unpublished
 * allocations ({@link PoolAllocator#reclaimSlot}), then release-stores FREE. A RECLAIMING slot
 * whose reclaimer died is taken over the same way. Because a slot is only FREE again after its
 * reclaim, an owner number found in the chunk table always belongs to one incarnation.
 *
 * <p>Liveness: {@link ProcessLiveness} (pid and recorded start time, a zombie counts as dead; this
 * survives pid reuse). Only where a start time is unknown does a heartbeat older than the timeout
 * count as death: a live but paused process must not lose an allocation it is still writing into,
 * so a stale heartbeat alone never condemns a process whose identity is verified.
 *
 * <p>Threads: any; every change is a CAS or an ordered store on the shared segment.
 */
final class ProcessTable {
    static final long SLOT_SIZE = 64;
    static final long STATE_OFFSET = 0;
    static final long PID_OFFSET = 8;
    static final long START_OFFSET = 16;
    static final long HEARTBEAT_OFFSET = 24;
    static final long INCARNATION_OFFSET = 32;

    static final int FREE = 0;
    static final int CLAIMING = 1;
    static final int ACTIVE = 2;
    static final int RECLAIMING = 3;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment pool;
    private final long base; // processTableOffset, bytes
    private final int slots;
    private final LongSupplier clockMillis;
    private final long heartbeatTimeoutMillis; // 0 = never judge by heartbeat

    ProcessTable(MemorySegment pool, long base, int slots, LongSupplier clockMillis, long heartbeatTimeoutMillis) {
        this.pool = pool;
        this.base = base;
        this.slots = slots;
        this.clockMillis = clockMillis;
        this.heartbeatTimeoutMillis = heartbeatTimeoutMillis;
    }

    int slots() {
        return slots;
    }

    static int state(long word) {
        return (int) (word & 0xFF);
    }

    static long payload(long word) {
        return word >>> 8;
    }

    private static long word(long payload, int state) {
        return (payload << 8) | state;
    }

    long stateWord(int slot) {
        return (long) LONG.getAcquire(pool, at(slot, STATE_OFFSET));
    }

    /**
     * Claims a free slot for the process {@code pid} started at {@code startMillis}.
     *
     * @return the slot, or -1 if every slot is taken
     */
    int claim(long pid, long startMillis) {
        for (int s = 0; s < slots; s++) {
            if (LONG.compareAndSet(pool, at(s, STATE_OFFSET), 0L, word(pid, CLAIMING))) {
                LONG.set(pool, at(s, PID_OFFSET), pid);
                LONG.set(pool, at(s, START_OFFSET), startMillis);
                LONG.set(pool, at(s, HEARTBEAT_OFFSET), clockMillis.getAsLong());
                LONG.getAndAdd(pool, at(s, INCARNATION_OFFSET), 1L);
                LONG.setRelease(pool, at(s, STATE_OFFSET), word(pid, ACTIVE));
                return s;
            }
        }
        return -1;
    }

    long incarnation(int slot) {
        return (long) LONG.getAcquire(pool, at(slot, INCARNATION_OFFSET));
    }

    /** Refreshes the heartbeat of {@code slot} (the caller's own). */
    void beat(int slot) {
        LONG.setOpaque(pool, at(slot, HEARTBEAT_OFFSET), clockMillis.getAsLong());
    }

    long heartbeat(int slot) {
        return (long) LONG.getOpaque(pool, at(slot, HEARTBEAT_OFFSET));
    }

    /** Releases the caller's own slot (its allocations must have been dealt with). */
    void release(int slot, long pid) {
        long expected = word(pid, ACTIVE);
        if (!LONG.compareAndSet(pool, at(slot, STATE_OFFSET), expected, 0L)) {
            throw new IllegalStateException("process slot " + slot + " is not held by pid " + pid
                    + " (state word 0x" + Long.toHexString(stateWord(slot)) + ")");
        }
    }

    /** Number of slots not FREE. */
    int occupied() {
        int n = 0;
        for (int s = 0; s < slots; s++) {
            if (state(stateWord(s)) != FREE) {
                n++;
            }
        }
        return n;
    }

    /**
     * If {@code slot} belongs to a dead process (or is being reclaimed by one), takes it over for
     * reclaiming by {@code mySlot}.
     *
     * @return true if the caller now reclaims {@code slot} and must {@link #finishReclaim} it
     */
    boolean tryStartReclaim(int slot, int mySlot) {
        if (slot == mySlot) {
            return false;
        }
        long w = stateWord(slot);
        boolean dead = switch (state(w)) {
            case CLAIMING -> !ProcessLiveness.isAlive(payload(w), 0);
            case ACTIVE -> !isAlive(slot, payload(w));
            case RECLAIMING -> {
                int reclaimer = (int) payload(w);
                long rw = stateWord(reclaimer);
                yield reclaimer != mySlot && (state(rw) != ACTIVE || !isAlive(reclaimer, payload(rw)));
            }
            default -> false;
        };
        return dead && LONG.compareAndSet(pool, at(slot, STATE_OFFSET), w, word(mySlot, RECLAIMING));
    }

    /** Marks a slot reclaimed by {@code mySlot} FREE again. */
    void finishReclaim(int slot, int mySlot) {
        if (!LONG.compareAndSet(pool, at(slot, STATE_OFFSET), word(mySlot, RECLAIMING), 0L)) {
            throw new IllegalStateException("process slot " + slot + " is not being reclaimed by slot " + mySlot);
        }
    }

    /** True if the process recorded in ACTIVE {@code slot} with {@code pid} is alive. */
    boolean isAlive(int slot, long pid) {
        long recordedStart = (long) LONG.get(pool, at(slot, START_OFFSET));
        return switch (ProcessLiveness.check(pid, recordedStart)) {
            case DEAD -> false;
            case SAME_PROCESS -> true;
            case PID_RUNNING -> heartbeatTimeoutMillis == 0
                    || clockMillis.getAsLong() - heartbeat(slot) <= heartbeatTimeoutMillis;
        };
    }

    private long at(int slot, long field) {
        return base + slot * SLOT_SIZE + field;
    }
}
