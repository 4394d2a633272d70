package dev.strata.memory.transfer;

import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Tier;
import dev.strata.memory.TierIoException;
import dev.strata.memory.host.PlainMemoryTier;
import dev.strata.memory.pool.PoolTier;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The one way Strata copies a whole object from an allocation in one tier to an allocation in
 * another: the transfer engine's links, the object store's moves between tiers and the expert
 * pager's direct fetches all call it.
 *
 * <p>Design (routing, see {@link Route}): a tier is <em>plain</em> when its views may be read and
 * written directly ({@link Tier#isPlainMemory()}: HOST, DEVICE on the CPU backend); the others
 * (POOL and DISK frame each object with a checksum, PEER guards every access) are reached only
 * through {@link Tier#read} and {@link Tier#write}. Plain to plain is one
 * {@link MemorySegment#copy} between the two views (a {@link PlainMemoryTier} source is looked
 * up without a second copy; another plain source reads into the destination's view); into plain
 * memory the source reads straight into the destination's view; out of plain memory the
 * destination writes straight from the source's view; between two non-plain tiers the object
 * passes through one bounce buffer borrowed from a {@link StagingPool} (waiting while all are
 * lent). Checksums: the framed source's {@code read} verifies the frame (publication and
 * checksum) and throws {@link CorruptObjectException} on a mismatch, before a framed destination
 * is written; the framed destination's {@code write} computes and stores a new frame. A copy of
 * a missing or unpublished object (a freed allocation of a plain tier included) returns
 * {@link #NOT_FOUND} and writes nothing into a framed destination.
 *
 * <p>Metering: framed tiers meter their own reads and writes. The side of a copy that went
 * through a plain tier's view is recorded in that tier's meter, by {@link #copy} per copy, or by
 * the caller with {@link #meterViews} once per run of copies after {@link #copyUnmetered} (a
 * link meters a batch of 16 KiB copies that way: per-copy metering costs several percent there).
 * Counters of the caller's own (a link's statistics, the store's moved bytes) use the returned
 * byte count.
 *
 * <p>Threads: any thread; an instance keeps no state but its staging pool, which is thread-safe.
 * Callers must not race a copy into an allocation with another access to it (the {@link Tier}
 * contract).
 */
public final class TierCopy {

    /** Returned by the copy methods when the source has no readable object at the handle. */
    public static final long NOT_FOUND = -1;

    private static final TierCopy DIRECT = new TierCopy();

    /** How one copy moves its bytes, by whether each side is plain memory. */
    public enum Route {
        /** Both plain: one copy between the two views. */
        PLAIN_TO_PLAIN,
        /** Non-plain source: it reads (and verifies) straight into the destination's view. */
        FRAMED_TO_PLAIN,
        /** Non-plain destination: it writes (and frames) straight from the source's view. */
        PLAIN_TO_FRAMED,
        /** Neither plain: the source reads into a bounce buffer, the destination writes from it. */
        FRAMED_TO_FRAMED;

        /** The route of a copy from {@code src} to {@code dst}. */
        public static Route of(Tier src, Tier dst) {
            if (dst.isPlainMemory()) {
                return src.isPlainMemory() ? PLAIN_TO_PLAIN : FRAMED_TO_PLAIN;
            }
            return src.isPlainMemory() ? PLAIN_TO_FRAMED : FRAMED_TO_FRAMED;
        }
    }

    private final StagingPool staging; // bounce buffers for FRAMED_TO_FRAMED; null: that route is refused

    /**
     * @param staging bounce buffers for copies between two non-plain tiers; its buffer size is the
     *                largest object such a copy may move
     */
    public TierCopy(StagingPool staging) {
        this.staging = Objects.requireNonNull(staging, "staging pool");
    }

    private TierCopy() {
        this.staging = null;
    }

    /**
     * The copy path without bounce buffers, for callers whose copies always have a plain side (the
     * expert pager's fetch from plain masters into plain slots); a copy between two non-plain tiers
     * is refused with {@link IllegalArgumentException}.
     */
    public static TierCopy direct() {
        return DIRECT;
    }

    /** The bounce buffers of this path, or null for {@link #direct()}. */
    public StagingPool staging() {
        return staging;
    }

    /**
     * Copies the object of {@code length} bytes in allocation {@code srcHandle} of {@code src} into
     * allocation {@code dstHandle} of {@code dst}, and records the plain sides in their meters.
     *
     * @return {@code length}, or {@link #NOT_FOUND} if the source has no readable object there
     * @throws CorruptObjectException   if a framed source fails its checksum
     * @throws IllegalArgumentException if {@code length} does not fit an allocation, or exceeds the
     *                                  bounce buffers of a copy between two non-plain tiers
     * @throws IllegalStateException    if interrupted while waiting for a bounce buffer (the flag is kept)
     */
    public long copy(Tier src, long srcHandle, Tier dst, long dstHandle, long length) {
        long start = System.nanoTime();
        long moved = copyUnmetered(src, srcHandle, dst, dstHandle, length);
        if (moved > 0) {
            meterViews(src, dst, 1, moved, System.nanoTime() - start);
        }
        return moved;
    }

    /**
     * Like {@link #copy}, but leaves the plain sides unmetered: the caller records them with
     * {@link #meterViews} (once for a run of like copies).
     */
    public long copyUnmetered(Tier src, long srcHandle, Tier dst, long dstHandle, long length) {
        requirePositive(length, src, srcHandle, dst, dstHandle);
        switch (Route.of(src, dst)) {
            case PLAIN_TO_PLAIN -> {
                if (src instanceof PlainMemoryTier plainSource) {
                    MemorySegment from = plainSource.viewIfAllocated(srcHandle, length);
                    if (from == null) {
                        return NOT_FOUND;
                    }
                    NonTemporalCopy.copy(from, 0, dst.segment(dstHandle, 0, length), 0, length);
                } else if (!src.read(srcHandle, dst.segment(dstHandle, 0, length))) {
                    return NOT_FOUND;
                }
            }
            case FRAMED_TO_PLAIN -> {
                if (!src.read(srcHandle, dst.segment(dstHandle, 0, length))) {
                    return NOT_FOUND;
                }
            }
            case PLAIN_TO_FRAMED -> {
                MemorySegment from = src instanceof PlainMemoryTier plainSource
                        ? plainSource.viewIfAllocated(srcHandle, length) : src.segment(srcHandle, 0, length);
                if (from == null) {
                    return NOT_FOUND;
                }
                dst.write(dstHandle, from);
            }
            case FRAMED_TO_FRAMED -> {
                if (!bounce(src, srcHandle, dst, dstHandle, length)) {
                    return NOT_FOUND;
                }
            }
        }
        return length;
    }

    /**
     * Whether copies from {@code src} to {@code dst} can run many to a call
     * ({@link #copyRunUnmetered}): a plain-memory source whose views are checked for allocation,
     * into plain memory or a POOL; or out of a POOL into plain memory.
     */
    public static boolean copiesInRuns(Tier src, Tier dst) {
        return switch (Route.of(src, dst)) {
            case PLAIN_TO_PLAIN -> src instanceof PlainMemoryTier;
            case PLAIN_TO_FRAMED -> src instanceof PlainMemoryTier && dst instanceof PoolTier;
            case FRAMED_TO_PLAIN -> src instanceof PoolTier;
            case FRAMED_TO_FRAMED -> false;
        };
    }

    /**
     * Copies {@code count} objects from {@code src} to {@code dst} ({@link #copiesInRuns} holds),
     * object {@code i} of {@code lengths[i]} bytes from allocation {@code srcHandles[i]} into
     * {@code dstHandles[i]}, with the result {@link #copyUnmetered} gives each, and leaves the
     * plain sides unmetered as it does; the bytes of all of them move in one call of the streaming
     * loop (one downcall and one fence for the run where a copy each pays one of each: with the
     * per-copy bookkeeping, about a quarter of a 16 KiB copy's time where a raw copy moves 13–17
     * GB/s): {@link NonTemporalCopy#copyPairs} between plain tiers; a POOL's
     * {@link PoolTier#writeRun} or {@link PoolTier#readRun}, which frame and publish, or verify,
     * each object as its {@code write} or {@code read} does. Sets {@code moved[i]} to the length,
     * or to {@link #NOT_FOUND} where the source has no object, and {@code failures[i]} to the error
     * object {@code i} met (an invalid length or handle, a POOL object that failed its checksum or
     * has another length; its {@code moved[i]} is then 0), else null. When the call itself throws,
     * {@code moved[i]} holds the length of every object whose copy was under way (the caller fails
     * those with the exception), {@link #NOT_FOUND} or 0 with its failure for the others.
     *
     * @throws IllegalArgumentException if copies between these tiers do not run many to a call (nothing is copied)
     * @throws TierIoException          if a POOL's file no longer backs a page (every object under way failed)
     */
    public void copyRunUnmetered(Tier src, long[] srcHandles, Tier dst, long[] dstHandles, long[] lengths, int count,
                                 long[] moved, Throwable[] failures) {
        if (!copiesInRuns(src, dst)) {
            throw new IllegalArgumentException("a run of copies from tier '" + src.name() + "' to tier '" + dst.name()
                    + "': only copies from plain memory into plain memory or a POOL, and from a POOL into plain memory,"
                    + " run many to a call");
        }
        MemorySegment[] from = new MemorySegment[count];
        MemorySegment[] to = new MemorySegment[count];
        int[] objects = new int[count]; // the objects whose views were found, in order
        long[] handles = new long[count]; // their handles in the POOL, where one side is a POOL
        int pairs = 0;
        for (int i = 0; i < count; i++) {
            long length = lengths[i];
            moved[i] = 0;
            failures[i] = null;
            try {
                requirePositive(length, src, srcHandles[i], dst, dstHandles[i]);
                if (src instanceof PlainMemoryTier plainSource) {
                    MemorySegment view = plainSource.viewIfAllocated(srcHandles[i], length);
                    if (view == null) {
                        moved[i] = NOT_FOUND;
                        continue;
                    }
                    from[pairs] = view;
                }
                if (dst.isPlainMemory()) {
                    to[pairs] = dst.segment(dstHandles[i], 0, length);
                }
                handles[pairs] = src instanceof PoolTier ? srcHandles[i] : dstHandles[i];
                objects[pairs++] = i;
                moved[i] = length; // under way: if the call below throws, the caller fails this copy with it
            } catch (RuntimeException e) {
                failures[i] = e;
            }
        }
        Throwable[] met = new Throwable[pairs];
        boolean[] found = new boolean[pairs];
        if (dst instanceof PoolTier pool) {
            pool.writeRun(handles, from, pairs, met);
            Arrays.fill(found, true);
        } else if (src instanceof PoolTier pool) {
            pool.readRun(handles, to, pairs, found, met);
        } else {
            NonTemporalCopy.copyPairs(from, to, pairs);
            Arrays.fill(found, true);
        }
        for (int k = 0; k < pairs; k++) {
            int i = objects[k];
            failures[i] = met[k];
            moved[i] = met[k] != null ? 0 : found[k] ? lengths[i] : NOT_FOUND;
        }
    }

    private static void requirePositive(long length, Tier src, long srcHandle, Tier dst, long dstHandle) {
        if (length <= 0) {
            throw new IllegalArgumentException("copy length must be positive, got " + length + " (from handle " + srcHandle
                    + " in tier '" + src.name() + "' to handle " + dstHandle + " in tier '" + dst.name() + "')");
        }
    }

    /** Reads the source into a bounce buffer (verifying it), then writes the destination from it. */
    private boolean bounce(Tier src, long srcHandle, Tier dst, long dstHandle, long length) {
        if (staging == null) {
            throw new IllegalArgumentException("copy of " + length + " bytes from tier '" + src.name() + "' to tier '"
                    + dst.name() + "': neither side is plain memory and this copy path has no bounce buffers");
        }
        MemorySegment buffer;
        try {
            buffer = staging.borrow(length);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a bounce buffer of staging pool '"
                    + staging.name() + "' for a copy of " + length + " bytes from tier '" + src.name() + "' to tier '"
                    + dst.name() + "'", e);
        }
        try {
            if (!src.read(srcHandle, buffer)) {
                return false;
            }
            dst.write(dstHandle, buffer);
            return true;
        } finally {
            staging.giveBack(buffer);
        }
    }

    /**
     * Copies the concatenation of {@code parts} into {@code into} (plain memory on both sides; the
     * gather of a transfer into a plain tier's view), and returns the bytes copied; with streaming
     * stores where {@link NonTemporalCopy} allows them.
     */
    public static long gatherView(List<MemorySegment> parts, MemorySegment into) {
        return NonTemporalCopy.gather(parts, into);
    }

    /**
     * Spreads the bytes of {@code from}, in order, over {@code parts} (plain memory on both sides;
     * the scatter of a transfer out of a plain tier's view or a bounce buffer), and returns the
     * bytes copied; with streaming stores where {@link NonTemporalCopy} allows them.
     */
    public static long scatterView(MemorySegment from, List<MemorySegment> parts) {
        return NonTemporalCopy.scatter(from, parts);
    }

    /**
     * Records, in the meters of plain-memory tiers, the sides of {@code copies} copies from
     * {@code src} to {@code dst} ({@code bytes} in all, {@code nanos} spent) that went through
     * their views rather than their own read or write methods (those meter themselves).
     */
    public static void meterViews(Tier src, Tier dst, long copies, long bytes, long nanos) {
        Route route = Route.of(src, dst);
        if (route == Route.PLAIN_TO_PLAIN || route == Route.FRAMED_TO_PLAIN) {
            meterViewWrite(dst, copies, bytes, nanos);
        }
        if (route == Route.PLAIN_TO_PLAIN || route == Route.PLAIN_TO_FRAMED) {
            meterViewRead(src, copies, bytes, nanos); // only a PlainMemoryTier source is read through its view
        }
    }

    /** Records {@code ops} reads of {@code bytes} through the view of {@code tier}, if it is a {@link PlainMemoryTier}. */
    public static void meterViewRead(Tier tier, long ops, long bytes, long nanos) {
        if (tier instanceof PlainMemoryTier plain) {
            plain.recordDirectRead(ops, bytes, nanos);
        }
    }

    /** Records {@code ops} writes of {@code bytes} through the view of {@code tier}, if it is a {@link PlainMemoryTier}. */
    public static void meterViewWrite(Tier tier, long ops, long bytes, long nanos) {
        if (tier instanceof PlainMemoryTier plain) {
            plain.recordDirectWrite(ops, bytes, nanos);
        }
    }
}
