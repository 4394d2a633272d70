package dev.strata.cluster;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.ObjectKind;
import dev.strata.cache.kv.SeenTwiceAdmission;
import dev.strata.memory.transfer.StagingPool;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * The write side of the CLUSTER tier: a bounded window of block writes sent to the cluster and not
 * yet answered, so that writing never makes its caller wait on the network.
 *
 * <h2>Design note</h2>
 * A write is admitted, then its value is built in a buffer of the window's {@link StagingPool}
 * (the block's bytes copied and checksummed in one pass, so the caller's memory is free again when
 * {@link #offer} returns) and its {@code SET NX PX ttl} is sent at once without waiting for the
 * answer ({@link Sender}): writes from any number of callers share one connection per node and go
 * out back to back, pipelined; {@link BlockPipeline} writes the value from the buffer to the socket
 * (with TLS, the cluster client copies it into the command when it encodes it,
 * {@link ClusterValueCodec}). The window is the pool: as many buffers
 * of one value as the configured bytes hold (at least one), each lent from the offer until the
 * write is answered, fails or times out ({@link ClusterValue.Staged}); a write that finds no free
 * buffer is dropped and counted, never waited for: blocks in the cluster are a cache and a dropped write only costs another machine a
 * recompute. Every request ends within the client's timeout, so the window always drains. The
 * optional seen-twice filter refuses blocks this process has not used at least twice (one-off
 * prefixes stay off the cluster).
 *
 * <p>Invariants: {@code queuedBytes} and {@code queuedBlocks} count exactly the writes sent and not
 * yet answered; each offered write ends in exactly one of refused, dropped, published, existed or
 * failed (failed also counts as dropped, reason error).
 *
 * <p>Threads: any thread may call {@link #offer} and {@link #awaitEmpty}; answers are applied on
 * the client's threads.
 */
final class ClusterWriteQueue {
    /** How an offered write ended at once. */
    enum Offer {
        /** Sent; its answer is counted when it comes. */
        SENT,
        /** Not sent: the admission filter refused the block. */
        REFUSED,
        /** Not sent: the window was full or the cluster is unavailable. */
        DROPPED
    }

    /** Counts and reports a failed write: its kind and what failed. */
    interface FailureReport {
        void failed(ClusterMetrics.ErrorKind kind, Throwable cause, String what);
    }

    /** Sends one write: {@code SET key value NX PX ttl}; completes with "OK", null when the key existed, or exceptionally. */
    interface Sender {
        CompletionStage<String> set(String clusterKey, ClusterValue.Staged value);
    }

    private final Sender sender;
    private final ClusterMetrics metrics;
    private final StagingPool window;           // buffers of one value each: the writes in flight at most
    private final SeenTwiceAdmission admission; // null: every block is written
    private final FailureReport failures;
    private final Object lock = new Object();
    private long queuedBytes;  // value bytes sent, not answered; under lock
    private int queuedBlocks;  // writes sent, not answered; under lock
    private int waiters;       // threads in awaitRoom; under lock

    /**
     * @param valueBytes bytes of one value (a block and its header)
     * @param maxBytes   bytes of values in flight at most; the window holds at least one value
     */
    ClusterWriteQueue(Sender sender, ClusterMetrics metrics, long valueBytes, long maxBytes, SeenTwiceAdmission admission,
                      FailureReport failures) {
        this.sender = sender;
        this.metrics = metrics;
        this.window = new StagingPool("cluster-writes", (int) Math.clamp(maxBytes / valueBytes, 1, Integer.MAX_VALUE), valueBytes, 64,
                StagingPool.Reserve.AT_CREATION); // when the store connects, not on a serving thread's first write
        this.admission = admission;
        this.failures = failures;
        metrics.queue(this::queuedBlocks, this::queuedBytes);
    }

    /**
     * Offers block {@code key} for writing under {@code clusterKey}; {@code encode} writes its
     * value of {@code valueBytes} bytes into the buffer it is given (only if the write is sent).
     */
    Offer offer(ObjectKey key, String clusterKey, long valueBytes, Consumer<MemorySegment> encode) {
        if (admission != null && !admission.admit(key, ObjectKind.KV_BLOCK, valueBytes)) {
            metrics.countRefused();
            return Offer.REFUSED;
        }
        if (valueBytes > window.bufferBytes()) {
            metrics.countDropped(ClusterMetrics.DropReason.ERROR);
            failures.failed(ClusterMetrics.ErrorKind.OTHER, null, "writing block " + key + " (a value of " + valueBytes
                    + " bytes, larger than the " + window.bufferBytes() + " bytes of this model's blocks)");
            return Offer.DROPPED;
        }
        MemorySegment buffer;
        synchronized (lock) {
            buffer = window.tryBorrow(valueBytes);
            if (buffer == null) {
                metrics.countDropped(ClusterMetrics.DropReason.QUEUE_FULL);
                return Offer.DROPPED;
            }
            queuedBytes += valueBytes;
            queuedBlocks++;
        }
        ClusterValue.Staged value = new ClusterValue.Staged(window, buffer);
        CompletionStage<String> answer;
        long start = System.nanoTime();
        try {
            encode.accept(buffer);
            answer = sender.set(clusterKey, value);
        } catch (RuntimeException e) {
            ClusterMetrics.ErrorKind kind = ClusterBlockStore.kindOf(e);
            metrics.countDropped(ClusterMetrics.DropReason.ERROR);
            failures.failed(kind, e, "writing block " + key);
            value.release();
            answered(valueBytes);
            return Offer.DROPPED;
        }
        answer.whenComplete((ok, error) -> {
            value.release(); // the buffer goes back once no encoder copies from it
            metrics.latency(ClusterMetrics.Op.PUBLISH, System.nanoTime() - start);
            if (error != null) {
                ClusterMetrics.ErrorKind kind = ClusterBlockStore.kindOf(error);
                metrics.countDropped(ClusterMetrics.DropReason.ERROR);
                failures.failed(kind, error, "writing block " + key);
            } else if ("OK".equals(ok)) {
                metrics.published(valueBytes - ClusterBlockFormat.HEADER_BYTES);
            } else {
                metrics.existed();
            }
            answered(valueBytes); // last: a caller of awaitEmpty sees the outcome counted
        });
        return Offer.SENT;
    }

    private void answered(long valueBytes) {
        synchronized (lock) {
            queuedBytes -= valueBytes;
            queuedBlocks--;
            if (waiters > 0 || queuedBlocks == 0) {
                lock.notifyAll();
            }
        }
    }

    /**
     * Waits until the window has room for another write, at most {@code nanos}: for a producer
     * that would rather wait than drop (a bulk load, a benchmark). The room may be taken by
     * another caller before this one offers.
     *
     * @return true if the window had room when this returned
     */
    boolean awaitRoom(long nanos) throws InterruptedException {
        long deadline = System.nanoTime() + nanos;
        synchronized (lock) {
            waiters++;
            try {
                while (queuedBlocks >= window.buffers()) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    lock.wait(Math.max(1, left / 1_000_000), 0);
                }
                return true;
            } finally {
                waiters--;
            }
        }
    }

    /** Writes sent and not answered. */
    int queuedBlocks() {
        synchronized (lock) {
            return queuedBlocks;
        }
    }

    /** Value bytes sent and not answered. */
    long queuedBytes() {
        synchronized (lock) {
            return queuedBytes;
        }
    }

    /** Waits until every write sent has been answered, at most {@code nanos}; true if none is left. */
    boolean awaitEmpty(long nanos) throws InterruptedException {
        long deadline = System.nanoTime() + nanos;
        synchronized (lock) {
            while (queuedBlocks > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                lock.wait(Math.max(1, left / 1_000_000), 0);
            }
            return true;
        }
    }

    /**
     * Frees the window's buffers: only once the client has shut down, so that no command is
     * encoded from them any more.
     */
    void close() {
        window.close();
    }
}
