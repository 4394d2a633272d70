package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import java.lang.foreign.MemorySegment;

/**
 * One block of a preempted sequence staged toward the device ahead of its resume: the first stage
 * of a two-stage load ({@link KvLoadPipeline}), started before the block has a DEVICE slot. The
 * store's top copy is read into a HOST staging buffer; the resume then claims the staged block for
 * the slot it gives it, and the second stage (buffer to slot) runs at once if the read has landed,
 * or when it lands.
 *
 * <p>Protocol (design note): the staging buffer has exactly one owner at any time, and exactly one
 * party gives it back.
 * <ul>
 *   <li>{@code READING}: the read is in flight; the read owns the buffer.</li>
 *   <li>{@code STAGED}: the read landed; the block owns the buffer until it is claimed or
 *       cancelled, and whoever does that (the scheduler thread) copies and gives it back.</li>
 *   <li>{@code FAILED}: the read failed; its completion gave the buffer back. A claim is refused
 *       (the resume loads the block the normal way).</li>
 *   <li>{@code CLAIMED}: a resume took the block for {@link #target}: if the read was in flight,
 *       its completion copies into the target's slot, gives the buffer back and lands the target's
 *       load; else the claimer did that.</li>
 *   <li>{@code CANCELLED}: the sequence resumed without it or was released: a landed buffer was
 *       given back by the canceller, an in-flight one is given back by the read's completion.</li>
 * </ul>
 * Every transition happens under the object's monitor, so the read's completion (a transfer
 * thread) and the claim or cancel (the scheduler thread) see one order.
 *
 * <p>Threads: created, claimed and cancelled on the manager's scheduler thread; {@link #landed} on
 * a transfer or I/O thread.
 */
final class StagedBlock {
    /** Where the staging is. */
    enum State {
        READING,
        STAGED,
        FAILED,
        CLAIMED,
        CANCELLED
    }

    /** What {@link #claim} found. */
    enum Claim {
        /** The bytes are in the buffer: the claimer copies them now and gives the buffer back. */
        LANDED,
        /** The read is in flight: its completion will fill the target's slot and land its load. */
        IN_FLIGHT,
        /** Nothing to claim (the read failed or was cancelled): load the block the normal way. */
        REFUSED
    }

    final ObjectKey key; // the block's chained key
    final BlockLocation source; // where the store's top copy was when staging began (HOST or DISK)
    final MemorySegment buffer; // [block bytes] the HOST staging buffer, borrowed from the pipeline's resume staging pool
    private State state = State.READING;
    private DeviceBlock target; // the block claimed for, once CLAIMED while READING

    StagedBlock(ObjectKey key, BlockLocation source, MemorySegment buffer) {
        this.key = key;
        this.source = source;
        this.buffer = buffer;
    }

    synchronized State state() {
        return state;
    }

    /** True while a claim could take the block (the read is in flight or landed). */
    synchronized boolean claimable() {
        return state == State.READING || state == State.STAGED;
    }

    /**
     * Takes the block for {@code b} (a loading block in its slot). Scheduler thread.
     */
    synchronized Claim claim(DeviceBlock b) {
        switch (state) {
            case STAGED -> {
                state = State.CLAIMED;
                return Claim.LANDED;
            }
            case READING -> {
                state = State.CLAIMED;
                target = b;
                return Claim.IN_FLIGHT;
            }
            default -> {
                return Claim.REFUSED;
            }
        }
    }

    /**
     * Gives the block up. Scheduler thread.
     *
     * @return true if the caller must give the buffer back now (the read had landed)
     */
    synchronized boolean cancel() {
        State was = state;
        if (was == State.READING || was == State.STAGED) {
            state = State.CANCELLED;
        }
        return was == State.STAGED;
    }

    /** What the read's completion must do with the buffer ({@link #landed}). */
    enum Landed {
        /** Keep it: the bytes wait for a claim ({@code STAGED}). */
        KEEP,
        /** Give it back: the read failed or the block was cancelled. */
        GIVE_BACK,
        /** Copy it into {@link #target()}'s slot (when the read succeeded), give it back and land the target's load. */
        FILL_TARGET
    }

    /**
     * The read ended ({@code ok}: the bytes are in the buffer). Transfer or I/O thread.
     */
    synchronized Landed landed(boolean ok) {
        return switch (state) {
            case READING -> {
                state = ok ? State.STAGED : State.FAILED;
                yield ok ? Landed.KEEP : Landed.GIVE_BACK;
            }
            case CLAIMED -> Landed.FILL_TARGET;
            default -> Landed.GIVE_BACK; // CANCELLED while reading
        };
    }

    /** The block claimed while the read was in flight (set once, by {@link #claim}). */
    synchronized DeviceBlock target() {
        return target;
    }

    @Override
    public synchronized String toString() {
        return "StagedBlock[" + key + " from " + source + ", " + state + "]";
    }
}
