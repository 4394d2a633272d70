package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.ResidencyInfo;
import dev.strata.cache.TieredStore;
import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.transfer.StagingPool;
import dev.strata.memory.transfer.TierCopy;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.memory.transfer.TransferResult;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The load side of a {@link KvBlockManager}: reads a block's bytes into its DEVICE slot from the
 * shared pool (on the I/O thread) or from the store's top copy (pinned on the I/O thread, then
 * scattered by the transfer engine; a DISK copy in two stages when configured: read by the engine
 * into a page-aligned HOST buffer of the pipeline's {@link StagingPool}, then spread over the
 * slot's ranges, or in one stage when every buffer is lent), and hands the outcome back to the scheduler thread through
 * {@link KvAsync}. It changes no manager state itself: the {@link Landing} it is given applies the
 * outcome on the scheduler thread.
 *
 * <p>Invariants: each started load ends in exactly one landing and completes the block's
 * {@code ready} future (after queueing the landing); a pinned store copy is unpinned (and removed
 * if it could not be read) on the I/O thread; a staging buffer is given back when its transfer ends.
 *
 * <p>Threads: {@link #start} and {@link #close} on the scheduler thread; the rest runs on the I/O
 * thread and the transfer engine's threads.
 */
final class KvLoadPipeline implements AutoCloseable {

    /** Applies a finished load on the scheduler thread. */
    @FunctionalInterface
    interface Landing {
        /** {@code endNanos}: {@link System#nanoTime} when the read ended, on the thread that ended it. */
        void landed(DeviceBlock b, KvLoadException failure, boolean forgetStoreCopy, KvLink link, boolean twoStage, long endNanos);
    }

    private final KvLayout layout;
    private final TokenSelection allTokens;
    private final long blockBytes; // bytes of one block's contiguous form
    private final TieredStore store; // null: DEVICE only
    private final List<Tier> storeTiers; // the store's chain, top first
    private final TransferEngine transfers;
    private final SharedBlockStore shared; // null: no shared pool
    private final StagingPool staging; // [stagingBlocks] page-aligned block buffers for two-stage disk reads, null if none
    private final StagingPool resumeStaging; // [resumeStagingBlocks] block buffers of blocks staged for a resume, null if none
    private final KvAsync async;
    private final Landing landing;

    KvLoadPipeline(KvLayout layout, TieredStore store, TransferEngine transfers, SharedBlockStore shared,
            KvManagerConfig config, KvAsync async, Landing landing) {
        this.layout = layout;
        this.allTokens = TokenSelection.all(layout.geometry().blockTokens());
        this.blockBytes = layout.blockBytes(allTokens);
        this.store = store;
        this.storeTiers = store == null ? List.of() : store.tiers();
        this.transfers = transfers;
        this.shared = shared;
        this.async = async;
        this.landing = landing;
        boolean hasDisk = false;
        for (Tier t : storeTiers) {
            hasDisk |= t.kind() == TierKind.DISK;
        }
        this.staging = hasDisk && config.twoStageDisk() && config.stagingBlocks() > 0
                ? new StagingPool("kv-staging", config.stagingBlocks(), blockBytes, OffHeapRegion.PAGE, StagingPool.Reserve.AT_CREATION)
                : null;
        this.resumeStaging = store != null && config.resumeStagingBlocks() > 0
                ? new StagingPool("kv-resume-staging", config.resumeStagingBlocks(), blockBytes, OffHeapRegion.PAGE,
                        StagingPool.Reserve.ON_FIRST_BORROW)
                : null;
    }

    /** The segments of a whole block in {@code slot}. */
    static List<MemorySegment> segmentsOf(KvLayout layout, TokenSelection all, int slot) {
        List<MemorySegment> out = new ArrayList<>(4);
        layout.segments(slot, all, out);
        return out;
    }

    /** Starts reading {@code b}'s bytes from {@code source} into its slot ({@code b.inFlight} already counts it). */
    void start(DeviceBlock b, BlockLocation source, KvLink link) {
        async.begin();
        final ObjectKey key = b.key;
        final int slot = b.slot;
        if (source == BlockLocation.SHARED) {
            // the read is started on the I/O thread and may finish elsewhere: a store behind a
            // network (the cluster) answers on its own threads, so the I/O thread does not wait on it
            async.execute(() -> {
                java.util.concurrent.CompletableFuture<Boolean> read;
                try {
                    read = shared.readAsync(key, segmentsOf(layout, allTokens, slot));
                } catch (RuntimeException e) {
                    read = java.util.concurrent.CompletableFuture.failedFuture(e);
                }
                read.whenComplete((found, error) -> {
                    KvLoadException failure = null;
                    if (error != null) {
                        Throwable e = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
                        failure = new KvLoadException(key, source, "reading block " + key + " from the shared pool failed: " + e,
                                e);
                    } else if (!found) {
                        failure = new KvLoadException(key, source, "block " + key + " is no longer published in the shared pool",
                                null);
                    }
                    done(b, failure, false, KvLink.SHARED_READ, false);
                });
            });
            return;
        }
        async.execute(() -> loadFromStore(b, key, slot, link));
    }

    /** On the I/O thread: pins the store copy and starts the transfer(s) into the slot. */
    private void loadFromStore(DeviceBlock b, ObjectKey key, int slot, KvLink link) {
        boolean pinned = false;
        try {
            pinned = store.pin(key);
            List<ResidencyInfo> copies = pinned ? store.residencies(key) : List.of();
            if (copies.isEmpty()) {
                if (pinned) {
                    store.unpin(key);
                }
                done(b, new KvLoadException(key, null, "block " + key + " is no longer in the store", null), false, link,
                        false);
                return;
            }
            transferFrom(b, key, slot, link, copies, 0);
        } catch (RuntimeException e) {
            if (pinned) {
                store.unpin(key);
            }
            done(b, new KvLoadException(key, null, "starting the load of block " + key + " failed: " + e, e), false, link,
                    false);
        }
    }

    /**
     * Starts the transfer of the pinned block from copy {@code at} of {@code copies} (top first).
     * A copy on a revocable tier (PEER) that cannot be read (its lease was revoked mid-load) is
     * followed by the next copy, if any; without one the block fails alone, and the store reports
     * its drop itself ({@link dev.strata.cache.DropReason#REVOKED}), so the load does not remove it.
     */
    private void transferFrom(DeviceBlock b, ObjectKey key, int slot, KvLink link, List<ResidencyInfo> copies, int at) {
        ResidencyInfo top = copies.get(at);
        Tier src = storeTiers.get(top.chainIndex());
        BlockLocation where = BlockLocation.of(src.kind());
        List<MemorySegment> dst = segmentsOf(layout, allTokens, slot);
        // two stages when a buffer is free: DISK -> HOST buffer (engine), then buffer -> slot ranges; else one
        MemorySegment bounce = src.kind() == TierKind.DISK && staging != null ? staging.tryBorrow(blockBytes) : null;
        CompletableFuture<TransferResult> f;
        if (bounce != null) {
            try {
                f = transfers.scatter(src, top.handle(), List.of(bounce)).thenApply(r -> {
                    if (r.completed()) {
                        TierCopy.scatterView(bounce, dst);
                    }
                    return r;
                });
            } catch (RuntimeException e) { // not submitted (the engine is closed): the buffer is not in use
                staging.giveBack(bounce);
                throw e;
            }
        } else {
            f = transfers.scatter(src, top.handle(), dst);
        }
        f.whenComplete((r, e) -> {
            if (bounce != null) {
                staging.giveBack(bounce);
            }
            KvLoadException failure = readFailure(key, src, top, r, e);
            boolean corrupt = corruptCopy(e);
            boolean revoked = failure != null && !corrupt && src.revocable();
            if (revoked && at + 1 < copies.size()) {
                try {
                    transferFrom(b, key, slot, link, copies, at + 1); // still pinned: the next copy stays in place
                    return;
                } catch (RuntimeException next) {
                    failure.addSuppressed(next);
                }
            }
            final boolean remove = failure != null && !revoked;
            unpinLater(key, remove);
            done(b, failure, remove, link, bounce != null && failure == null);
        });
    }

    // ------------------------------------------------------------------ resume staging

    /**
     * A HOST staging buffer for one block staged ahead of a resume, or null when resume staging is
     * off or all its buffers are held (the bound: staging never takes more). Scheduler thread.
     */
    MemorySegment tryBorrowResumeStaging() {
        return resumeStaging == null ? null : resumeStaging.tryBorrow(blockBytes);
    }

    /** Buffers of blocks staged for a resume held now (any thread). */
    int resumeStagingLent() {
        return resumeStaging == null ? 0 : resumeStaging.lent();
    }

    /**
     * Starts the first stage of a two-stage load before the block has a slot: reads the store's top
     * copy of {@code s.key} into {@code s.buffer} (pinned on the I/O thread, copied by the transfer
     * engine, unpinned after; a copy that cannot be read is removed from the store as a load
     * would). The read ends in {@code staged.landed(s, ok)} on the scheduler thread, and fills a
     * slot claimed meanwhile ({@link StagedBlock.Landed#FILL_TARGET}: the second stage, then that
     * block's landing as for any load, link {@link KvLink#PREFETCH}). Scheduler thread.
     */
    void stage(StagedBlock s, StageLanding staged) {
        async.begin();
        async.execute(() -> {
            boolean pinned = false;
            try {
                pinned = store.pin(s.key);
                List<ResidencyInfo> copies = pinned ? store.residencies(s.key) : List.of();
                if (copies.isEmpty()) {
                    if (pinned) {
                        store.unpin(s.key);
                    }
                    stageDone(s, staged, new KvLoadException(s.key, s.source, "block " + s.key + " is no longer in the store", null),
                            false);
                    return;
                }
                ResidencyInfo top = copies.get(0);
                Tier src = storeTiers.get(top.chainIndex());
                transfers.scatter(src, top.handle(), List.of(s.buffer)).whenComplete((r, e) -> {
                    KvLoadException failure = readFailure(s.key, src, top, r, e);
                    boolean remove = failure != null && (corruptCopy(e) || !src.revocable()); // a revoked copy is dropped by the store
                    unpinLater(s.key, remove);
                    stageDone(s, staged, failure, remove);
                });
            } catch (RuntimeException e) {
                if (pinned) {
                    store.unpin(s.key);
                }
                stageDone(s, staged, new KvLoadException(s.key, s.source, "starting the staging of block " + s.key + " failed: " + e, e),
                        false);
            }
        });
    }

    /** On an I/O or transfer thread: a staging read ended; applies its protocol step, then hands its landing over. */
    private void stageDone(StagedBlock s, StageLanding staged, KvLoadException failure, boolean forgetStoreCopy) {
        switch (s.landed(failure == null)) {
            case KEEP -> {
            }
            case GIVE_BACK -> resumeStaging.giveBack(s.buffer);
            case FILL_TARGET -> {
                DeviceBlock b = s.target();
                if (failure == null) {
                    fillFromStaged(s, b);
                } else {
                    resumeStaging.giveBack(s.buffer);
                }
                done(b, failure, forgetStoreCopy, KvLink.PREFETCH, failure == null && s.source == BlockLocation.DISK);
            }
        }
        async.hand(() -> staged.landed(s, failure == null));
    }

    /**
     * The second stage of a staged block: copies the buffer into {@code b}'s slot and gives the
     * buffer back. On the scheduler thread for a block claimed after its read landed, on the read's
     * completing thread for one claimed while it was in flight.
     */
    void fillFromStaged(StagedBlock s, DeviceBlock b) {
        TierCopy.scatterView(s.buffer, segmentsOf(layout, allTokens, b.slot));
        resumeStaging.giveBack(s.buffer);
    }

    /**
     * Counts the load of {@code b}, claimed from a staged block whose read is in flight, as work in
     * flight: the read's completion lands it. Call before {@link StagedBlock#claim}; undo with
     * {@link #unclaimed()} if the claim is refused. Scheduler thread.
     */
    void claiming() {
        async.begin();
    }

    /** Undoes {@link #claiming()} for a claim that did not leave a read in flight. */
    void unclaimed() {
        async.end();
    }

    /** Gives back the buffer of a cancelled staged block whose read had landed. Scheduler thread. */
    void giveBackStaged(StagedBlock s) {
        resumeStaging.giveBack(s.buffer);
    }

    /** Applies a finished staging read on the scheduler thread. */
    @FunctionalInterface
    interface StageLanding {
        void landed(StagedBlock s, boolean ok);
    }

    /** The failure of a transfer out of {@code src}, or null if it completed. */
    private static KvLoadException readFailure(ObjectKey key, Tier src, ResidencyInfo top, TransferResult r, Throwable e) {
        BlockLocation where = BlockLocation.of(src.kind());
        if (e != null) {
            Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            return new KvLoadException(key, where, (corruptCopy(cause) ? "corrupt copy of block " : "reading block ") + key
                    + " from tier '" + src.name() + "' (handle " + top.handle() + ") failed: " + rootCause(cause).getMessage(), cause);
        }
        if (!r.completed()) {
            return new KvLoadException(key, where, "block " + key + " was not found in tier '" + src.name()
                    + "' (handle " + top.handle() + "): " + r.status(), null);
        }
        return null;
    }

    /** Unpins {@code key} on the I/O thread (counted in flight until it has run), removing it from the store if asked. */
    private void unpinLater(ObjectKey key, boolean remove) {
        async.begin();
        async.execute(() -> {
            try {
                store.unpin(key);
                if (remove) {
                    store.remove(key); // a block that cannot be read is treated as missing from now on
                }
            } finally {
                async.end();
            }
        });
    }

    /** Whether a transfer failed with {@code e} because the copy it read failed its checksum (null: it did not fail). */
    private static boolean corruptCopy(Throwable e) {
        return e != null && rootCause(e) instanceof CorruptObjectException;
    }

    private static Throwable rootCause(Throwable t) {
        Throwable c = t;
        while (c.getCause() != null && c.getCause() != c) {
            c = c.getCause();
        }
        return c;
    }

    /** On an I/O or transfer thread: hands a finished load to the scheduler, then completes its future. */
    private void done(DeviceBlock b, KvLoadException failure, boolean forgetStoreCopy, KvLink link, boolean twoStage) {
        long endNanos = System.nanoTime();
        async.hand(() -> landing.landed(b, failure, forgetStoreCopy, link, twoStage, endNanos));
        if (failure == null) {
            b.ready.complete(null);
        } else {
            b.ready.completeExceptionally(failure);
        }
    }

    /** Releases the staging buffers (after the I/O thread has stopped and every load has ended). */
    @Override
    public void close() {
        if (staging != null) {
            staging.close();
        }
        if (resumeStaging != null) {
            resumeStaging.close();
        }
    }
}
