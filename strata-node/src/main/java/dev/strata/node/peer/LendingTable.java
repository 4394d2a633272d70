package dev.strata.node.peer;

import static dev.strata.node.peer.LendingFileLayout.*;

import java.lang.foreign.MemorySegment;

/**
 * The region table of a lending file ({@link LendingFileLayout}) and every transition of it, for
 * both sides: borrowers claim, enter, exit, give back and acknowledge; the agent holds, revokes,
 * fences, finishes fences and reaps.
 *
 * <p>Design note (the lease guard: a Dekker handshake plus a gate, over volatile accesses, which
 * Java orders totally):
 * <ul>
 *   <li><b>Enter</b> (borrower, lease {@code (head, E)}): CAS the head's access word from
 *       {@code (E, c)} to {@code (E, c + 1)} (fails if the word names another epoch or the gate is
 *       shut), then volatile-read the state word: still {@code LENT(E)} means the access may touch
 *       the memory until its {@link #exit}; anything else undoes the increment and fails.</li>
 *   <li><b>Revoke</b> (agent): CAS the state word {@code LENT(E)} to {@code REVOKING(E)}. Either
 *       the borrower's re-read follows the CAS (it sees REVOKING and fails) or its increment
 *       precedes the borrower's drain check (the drain waits for it): a new access never begins
 *       after the revocation is visible and is never missed by the drain.</li>
 *   <li><b>Release</b> (borrower giving back or acknowledging, agent finishing a fence): shut the
 *       gate with one CAS {@code (E, 0)} to {@code (E, CLOSED)}. It succeeds only when no access
 *       is under way, and afterwards no increment under {@code E} can succeed, so the memory is
 *       reused only after every access of the lending has exited. A dead borrower's gate is shut
 *       by a plain store: the only process that could hold the lease is gone.</li>
 * </ul>
 * Fencing advances the state word's epoch ({@code REVOKING(E)} to {@code FENCED(E + 1)}), so
 * every later enter under {@code E} fails at its re-read even before the gate is shut.
 * {@code LendingTableStress} checks enter against revoke and against fence under JCStress.
 *
 * <p>Threads: any, in any process; every change is a CAS or a volatile/release store on the
 * shared segment. Instances are cheap views over a mapping owned by someone else.
 */
final class LendingTable {
    /** A claimed run: the lease's head region and epoch. */
    record Claim(long head, long epoch) {
    }

    private final MemorySegment file;
    private final Geometry geometry;

    LendingTable(MemorySegment file, Geometry geometry) {
        this.file = file;
        this.geometry = geometry;
    }

    Geometry geometry() {
        return geometry;
    }

    MemorySegment file() {
        return file;
    }

    long regionCount() {
        return geometry.regionCount();
    }

    /** The data of the run {@code [head, head + regions)}, {@code bytes} long. */
    MemorySegment data(long head, long bytes) {
        return file.asSlice(geometry.data(head), bytes);
    }

    long stateWord(long r) {
        return (long) LONG.getVolatile(file, geometry.record(r) + R_STATE);
    }

    long accessWord(long r) {
        return (long) LONG.getVolatile(file, geometry.record(r) + R_ACCESS);
    }

    long field(long r, long field) {
        return (long) LONG.getVolatile(file, geometry.record(r) + field);
    }

    private void setField(long r, long field, long value) {
        LONG.setVolatile(file, geometry.record(r) + field, value);
    }

    private boolean casState(long r, long expected, long next) {
        return LONG.compareAndSet(file, geometry.record(r) + R_STATE, expected, next);
    }

    // ---------------------------------------------------------------- borrower side

    /**
     * Claims the first run of {@code regions} FREE regions for {@code pid} (first fit, one CAS per
     * region, rolled back on conflict) and publishes it as one lease.
     *
     * @return the claim, or null when no run of that many FREE regions could be claimed
     */
    Claim claim(long regions, long pid, long startMillis, long leaseBytes, long nowMillis) {
        long n = geometry.regionCount();
        long r = 0;
        outer:
        while (r + regions <= n) {
            for (long j = 0; j < regions; j++) {
                if (state(stateWord(r + j)) != FREE) {
                    r = r + j + 1;
                    continue outer;
                }
            }
            for (long j = 0; j < regions; j++) {
                long w = stateWord(r + j);
                if (state(w) != FREE || !casState(r + j, w, word(CLAIMING, pid, epoch(w)))) {
                    for (long u = 0; u < j; u++) {
                        long c = stateWord(r + u);
                        LONG.setVolatile(file, geometry.record(r + u) + R_STATE, word(FREE, 0, epoch(c)));
                    }
                    r = r + j + 1;
                    continue outer;
                }
            }
            for (long j = 1; j < regions; j++) {
                long c = stateWord(r + j);
                setField(r + j, R_HEAD, r);
                LONG.setRelease(file, geometry.record(r + j) + R_STATE, word(MEMBER, pid, epoch(c) + 1));
            }
            long e = epoch(stateWord(r)) + 1;
            setField(r, R_BORROWER_START, startMillis);
            setField(r, R_RUN_LENGTH, regions);
            setField(r, R_HEAD, r);
            setField(r, R_LEASE_BYTES, leaseBytes);
            setField(r, R_DEADLINE, 0L);
            setField(r, R_LENT_AT, nowMillis);
            LONG.setVolatile(file, geometry.record(r) + R_ACCESS, access(e, 0));
            LONG.setRelease(file, geometry.record(r) + R_STATE, word(LENT, pid, e));
            return new Claim(r, e);
        }
        return null;
    }

    /**
     * Begins an access under lease {@code (head, epoch)} whose LENT state word is {@code lentWord}.
     *
     * @return true if the access may touch the memory until {@link #exit}
     */
    boolean enter(long head, long epoch, long lentWord) {
        long at = geometry.record(head) + R_ACCESS;
        long e = epoch & EPOCH_MASK;
        while (true) {
            long a = (long) LONG.getVolatile(file, at);
            long count = accessCount(a);
            if (accessEpoch(a) != e || count >= CLOSED - 1) {
                return false;
            }
            if (LONG.compareAndSet(file, at, a, a + 1)) {
                break;
            }
        }
        if ((long) LONG.getVolatile(file, geometry.record(head) + R_STATE) == lentWord) {
            return true;
        }
        exit(head, epoch);
        return false;
    }

    /** Ends an access begun under {@code epoch} (a no-op if the count was taken over by a later lending). */
    void exit(long head, long epoch) {
        long at = geometry.record(head) + R_ACCESS;
        long e = epoch & EPOCH_MASK;
        while (true) {
            long a = (long) LONG.getVolatile(file, at);
            long count = accessCount(a);
            if (accessEpoch(a) != e || count == 0 || count == CLOSED) {
                return;
            }
            if (LONG.compareAndSet(file, at, a, a - 1)) {
                return;
            }
        }
    }

    /** Accesses under way under {@code epoch} (0 if the gate is shut or names another epoch). */
    long inFlight(long head, long epoch) {
        long a = accessWord(head);
        long count = accessCount(a);
        return accessEpoch(a) != (epoch & EPOCH_MASK) || count == CLOSED ? 0 : count;
    }

    /** Shuts the gate of lending {@code epoch} if no access is under way; true if it is shut now. */
    boolean shutGate(long head, long epoch) {
        long at = geometry.record(head) + R_ACCESS;
        long shut = access(epoch, CLOSED);
        long a = (long) LONG.getVolatile(file, at);
        if (a == shut) {
            return true;
        }
        if (accessEpoch(a) != (epoch & EPOCH_MASK)) {
            return true; // a later lending owns the word: this one's accesses are long over
        }
        return LONG.compareAndSet(file, at, access(epoch, 0), shut);
    }

    /**
     * Shuts the gate of every lending {@code pid} still has in the table (LENT, REVOKING, or FENCED
     * and not yet finished) where no access is under way. Used when a borrower leaves a file for
     * good (its agent is gone): once this returns true, no access of {@code pid} is under way in
     * the file and none can begin.
     *
     * @return true if every such gate is shut now; false while an access of {@code pid} is under way
     */
    boolean shutGatesOf(long pid) {
        boolean all = true;
        for (long r = 0, n = geometry.regionCount(); r < n; r++) {
            long w = stateWord(r);
            int s = state(w);
            if (pid(w) != (pid & MAX_PID) || (s != LENT && s != REVOKING && s != FENCED)) {
                continue;
            }
            long lending = s == FENCED ? epoch(w) - 1 : epoch(w);
            if (!shutGate(r, lending)) {
                all = false;
            }
        }
        return all;
    }

    /** Shuts the gate whatever the count: only for a lending whose borrower is dead. */
    void forceShutGate(long head, long epoch) {
        LONG.setVolatile(file, geometry.record(head) + R_ACCESS, access(epoch, CLOSED));
    }

    /**
     * Borrower: returns lease {@code (head, epoch)} of {@code pid}, its gate already shut: the run
     * becomes FREE if still LENT, or HELD (an acknowledgement) if the agent is revoking it.
     *
     * @return the state the head had: LENT (given back), REVOKING (acknowledged), or another state
     *         (fenced or reaped meanwhile: nothing was changed)
     */
    int release(long head, long epoch, long pid) {
        long lent = word(LENT, pid, epoch);
        long revoking = word(REVOKING, pid, epoch);
        long w = stateWord(head);
        if (w != lent && w != revoking) {
            return state(w);
        }
        long runLength = field(head, R_RUN_LENGTH);
        int target = w == lent ? FREE : HELD;
        // Members first: once the head leaves LENT/REVOKING the agent may finish with the run itself.
        releaseMembers(head, runLength, pid, target);
        if (casState(head, w, word(target, 0, epoch))) {
            return state(w);
        }
        // The agent revoked (LENT -> REVOKING) between our read and our CAS: acknowledge instead.
        if (w == lent && casState(head, revoking, word(HELD, 0, epoch))) {
            return REVOKING;
        }
        return state(stateWord(head));
    }

    /** Moves the MEMBERs of {@code pid}'s run at {@code head} to {@code target}; returns how many moved. */
    int releaseMembers(long head, long runLength, long pid, int target) {
        int moved = 0;
        long end = Math.min(head + runLength, geometry.regionCount());
        for (long r = head + 1; r < end; r++) {
            long w = stateWord(r);
            if (state(w) == MEMBER && pid(w) == pid && field(r, R_HEAD) == head
                    && casState(r, w, word(target, 0, epoch(w)))) {
                moved++;
            }
        }
        return moved;
    }

    // ---------------------------------------------------------------- agent side

    /** FREE to HELD (the agent takes a free region for its own demand). */
    boolean hold(long r, long freeWord) {
        return state(freeWord) == FREE && casState(r, freeWord, word(HELD, 0, epoch(freeWord)));
    }

    /** HELD to FREE (the agent's demand fell). */
    boolean unhold(long r, long heldWord) {
        return state(heldWord) == HELD && casState(r, heldWord, word(FREE, 0, epoch(heldWord)));
    }

    /**
     * LENT to REVOKING with the acknowledgement deadline {@code deadlineMillis} (epoch ms), stamped
     * {@code nowNanos} ({@link System#nanoTime}) in the revocation stamps before the state changes,
     * so a borrower that sees REVOKING finds the stamp (the CAS orders the stores before it).
     */
    boolean revoke(long head, long lentWord, long deadlineMillis, long nowNanos) {
        if (state(lentWord) != LENT) {
            return false;
        }
        setField(head, R_DEADLINE, deadlineMillis);
        stampRevocation(head, epoch(lentWord), nowNanos);
        return casState(head, lentWord, word(REVOKING, pid(lentWord), epoch(lentWord)));
    }

    /**
     * Agent only: records that the lending {@code (head, epoch)} was revoked at {@code nanos}. The
     * slot's key is cleared first and set last, so a reader that finds its key before and after
     * reading the time read this entry's time (keys are never reused: epochs only advance).
     */
    void stampRevocation(long head, long epoch, long nanos) {
        long key = stampKey(head, epoch);
        long at = stampSlot(key);
        LONG.setVolatile(file, at, 0L);
        LONG.setVolatile(file, at + 8, nanos);
        LONG.setVolatile(file, at, key);
    }

    /**
     * Borrower side: when the agent revoked the lending {@code (head, epoch)}, as it stamped it
     * ({@link System#nanoTime} scale); 0 when there is no stamp (an agent of minor 1, or a later
     * revocation took the slot).
     */
    long revocationStamp(long head, long epoch) {
        long key = stampKey(head, epoch);
        long at = stampSlot(key);
        if ((long) LONG.getVolatile(file, at) != key) {
            return 0;
        }
        long nanos = (long) LONG.getVolatile(file, at + 8);
        return (long) LONG.getVolatile(file, at) == key ? nanos : 0;
    }

    /** LENT or REVOKING at {@code E} to FENCED at {@code E + 1}: every later enter under {@code E} fails. */
    boolean fence(long head, long word) {
        int s = state(word);
        return (s == REVOKING || s == LENT) && casState(head, word, word(FENCED, pid(word), epoch(word) + 1));
    }

    /**
     * Finishes a fence once the fenced lending's gate is shut (or by force when its borrower is
     * dead): the run's members and then its head become HELD.
     *
     * @return true if the run is the agent's now; false while an access of the fenced lending is under way
     */
    boolean finishFence(long head, long fencedWord, boolean borrowerDead) {
        if (state(fencedWord) != FENCED) {
            return false;
        }
        long lendingEpoch = epoch(fencedWord) - 1;
        if (borrowerDead) {
            forceShutGate(head, lendingEpoch);
        } else if (!shutGate(head, lendingEpoch)) {
            return false;
        }
        releaseMembers(head, field(head, R_RUN_LENGTH), pid(fencedWord), HELD);
        return casState(head, fencedWord, word(HELD, 0, epoch(fencedWord)));
    }

    /** A CLAIMING or MEMBER region of a dead process, outside any live lease: FREE at the next epoch. */
    boolean clearOrphan(long r, long word) {
        int s = state(word);
        return (s == CLAIMING || s == MEMBER) && casState(r, word, word(FREE, 0, epoch(word) + 1));
    }

    /**
     * Checks the table's structure at a quiescent moment (no claim, release or agent tick under
     * way): every state valid; every LENT or REVOKING head's run lies inside the table and its
     * other regions are MEMBERs of the same borrower naming it; every MEMBER belongs to such a run
     * (or a FENCED one); the gate of every LENT or REVOKING head is open under its epoch; no
     * region is CLAIMING.
     *
     * @throws IllegalStateException naming the region, its state word and what is wrong
     */
    void checkInvariants() {
        long n = geometry.regionCount();
        for (long r = 0; r < n; r++) {
            long w = stateWord(r);
            int s = state(w);
            if (s > HELD) {
                throw new IllegalStateException("region " + r + ": state word 0x" + Long.toHexString(w) + " has state " + s);
            }
            if (s == CLAIMING) {
                throw new IllegalStateException("region " + r + " is CLAIMING at a quiescent moment (pid " + pid(w) + ")");
            }
            if ((s == FREE || s == HELD) && pid(w) != 0) {
                throw new IllegalStateException("region " + r + " is " + stateName(s) + " but names pid " + pid(w));
            }
            if (s == LENT || s == REVOKING) {
                long k = field(r, R_RUN_LENGTH);
                if (k < 1 || r + k > n || field(r, R_HEAD) != r) {
                    throw new IllegalStateException("head " + r + " (" + stateName(s) + "): run length " + k + ", head field "
                            + field(r, R_HEAD) + " in a table of " + n + " regions");
                }
                long a = accessWord(r);
                if (accessEpoch(a) != (epoch(w) & EPOCH_MASK) || accessCount(a) == CLOSED) {
                    throw new IllegalStateException("head " + r + " (" + stateName(s) + " at epoch " + epoch(w)
                            + "): gate word has epoch " + accessEpoch(a) + " and count " + accessCount(a));
                }
                for (long m = r + 1; m < r + k; m++) {
                    long mw = stateWord(m);
                    if (state(mw) != MEMBER || pid(mw) != pid(w) || field(m, R_HEAD) != r) {
                        throw new IllegalStateException("region " + m + " in the run of head " + r + " (pid " + pid(w) + ") is "
                                + stateName(state(mw)) + " of pid " + pid(mw) + " naming head " + field(m, R_HEAD));
                    }
                }
            }
            if (s == MEMBER) {
                long h = field(r, R_HEAD);
                long hw = h >= 0 && h < r ? stateWord(h) : 0;
                int hs = state(hw);
                if (h < 0 || h >= r || !(hs == LENT || hs == REVOKING || hs == FENCED) || pid(hw) != pid(w)
                        || h + field(h, R_RUN_LENGTH) <= r) {
                    throw new IllegalStateException("member " + r + " of pid " + pid(w) + " names head " + h + ", which is "
                            + (h >= 0 && h < r ? stateName(hs) + " of pid " + pid(hw) : "out of range"));
                }
            }
        }
    }

    /** Adds one to a header counter (any process). */
    void count(long offset) {
        LONG.getAndAdd(file, offset, 1L);
    }
}
