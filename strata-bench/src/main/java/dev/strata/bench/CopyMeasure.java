package dev.strata.bench;

import dev.strata.memory.Tier;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.memory.transfer.TransferResult;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;

/**
 * Measures copies of whole objects between two tiers, through the transfer engine and as a raw
 * {@link MemorySegment#copy} of the same bytes between the same places, in GB/s.
 *
 * <p>Both sides copy the same set of objects in the same order; the engine side submits every copy
 * as its own asynchronous request (pipelined, up to {@code window} outstanding) and waits for all.
 * Confined to the calling thread.
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

    static void check(TransferResult r) {
        if (!r.completed()) {
            throw new IllegalStateException("transfer failed in benchmark: " + r);
        }
    }

    static double gbPerSecond(long bytes, long nanos) {
        return bytes / (double) nanos; // bytes per ns == GB/s (1e9 bytes)
    }
}
