package dev.strata.bench;

import dev.strata.memory.Tier;
import dev.strata.memory.transfer.BatchResult;
import dev.strata.memory.transfer.Transfer;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.memory.transfer.TransferResult;
import dev.strata.memory.transfer.TransferStatus;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;

/**
 * Measures copies of whole objects between two tiers, through the transfer engine and as a raw
 * {@link MemorySegment#copy} of the same bytes between the same places, in GB/s.
 *
 * <p>Both sides copy the same set of objects in the same order. The engine side is measured two
 * ways: {@link #batched} hands the engine batches ({@link TransferEngine#submitBatch}: many
 * objects at once, such as the blocks of a sequence) with two batches in flight and one wait per
 * batch; {@link #engine} submits every copy as its own request with up to {@code window}
 * outstanding, which keeps several requests in flight on links with several workers (DISK), as
 * the KV block manager's load pipeline submits each block it loads. Confined to the calling thread,
 * except a baseline handed to {@link #onLinkThread}, which runs on the link's worker.
 */
final class CopyMeasure {
    private CopyMeasure() {
    }

    /** Raw copy of {@code handles.length} objects of {@code size} bytes from src to dst views. */
    static double raw(Tier src, long[] srcHandles, Tier dst, long[] dstHandles, long size) {
        long start = System.nanoTime();
        for (int i = 0; i < srcHandles.length; i++) {
            MemorySegment.copy(src.segment(srcHandles[i], 0, size), 0, dst.segment(dstHandles[i], 0, size), 0, size);
        }
        return gbPerSecond(size * srcHandles.length, System.nanoTime() - start);
    }

    /**
     * Runs a baseline {@code measure} (GB/s) on the worker thread of the engine's link from
     * {@code src} to {@code dst} (null: raw memory ranges) and returns its figure: the baseline then
     * runs on the thread, and so the processor, that runs the engine's copies it is paired with. On
     * a machine whose processors copy at different speeds, a baseline on the bench's own thread
     * moved every engine figure by up to a fifth.
     */
    static double onLinkThread(TransferEngine engine, Tier src, Tier dst, Callable<Double> measure) {
        return engine.runOnLink(src, dst, measure).join();
    }

    /** The same copies through {@code engine}, pipelined with at most {@code window} outstanding. */
    @SuppressWarnings("unchecked")
    static double engine(TransferEngine engine, Tier src, long[] srcHandles, Tier dst, long[] dstHandles, long size, int window) {
        CompletableFuture<TransferResult>[] inFlight = new CompletableFuture[window];
        long start = System.nanoTime();
        for (int i = 0; i < srcHandles.length; i++) {
            int slot = i % window;
            if (inFlight[slot] != null) {
                check(inFlight[slot].join());
            }
            inFlight[slot] = engine.copy(src, srcHandles[i], dst, dstHandles[i], size);
        }
        for (CompletableFuture<TransferResult> f : inFlight) {
            if (f != null) {
                check(f.join());
            }
        }
        return gbPerSecond(size * srcHandles.length, System.nanoTime() - start);
    }

    /**
     * The same copies through {@code engine} in batches of about {@code batchBytes}, two batches in
     * flight: the caller waits once per batch, never per copy.
     */
    static double batched(TransferEngine engine, Tier src, long[] srcHandles, Tier dst, long[] dstHandles, long size,
                          long batchBytes) {
        List<Transfer> all = new ArrayList<>(srcHandles.length);
        for (int i = 0; i < srcHandles.length; i++) {
            all.add(Transfer.copy(src, srcHandles[i], dst, dstHandles[i], size));
        }
        return batched(engine, all, batchBytes);
    }

    /** Runs {@code transfers} through {@code engine} in batches of about {@code batchBytes}, two in flight. */
    static double batched(TransferEngine engine, List<Transfer> transfers, long batchBytes) {
        List<List<Transfer>> batches = new ArrayList<>();
        List<Transfer> batch = new ArrayList<>();
        long inBatch = 0;
        long total = 0;
        for (Transfer t : transfers) {
            batch.add(t);
            inBatch += t.length();
            total += t.length();
            if (inBatch >= batchBytes || batch.size() == 256) {
                batches.add(batch);
                batch = new ArrayList<>();
                inBatch = 0;
            }
        }
        if (!batch.isEmpty()) {
            batches.add(batch);
        }
        long start = System.nanoTime();
        CompletableFuture<BatchResult> previous = null;
        for (List<Transfer> b : batches) {
            CompletableFuture<BatchResult> current = engine.submitBatch(b);
            if (previous != null) {
                check(previous.join());
            }
            previous = current;
        }
        check(previous.join());
        return gbPerSecond(total, System.nanoTime() - start);
    }

    static void check(BatchResult r) {
        if (r.count(TransferStatus.COMPLETED) != r.results().size()) {
            throw new IllegalStateException("a batched transfer failed in benchmark: " + r.results().stream()
                    .filter(t -> !t.completed()).findFirst().orElseThrow());
        }
    }

    static void check(TransferResult r) {
        if (!r.completed()) {
            throw new IllegalStateException("transfer failed in benchmark: " + r);
        }
    }

    static double gbPerSecond(long bytes, long nanos) {
        return bytes / (double) nanos; // bytes per ns == GB/s (1e9 bytes)
    }
}
