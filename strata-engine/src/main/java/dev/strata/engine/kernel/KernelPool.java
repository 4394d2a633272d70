package dev.strata.engine.kernel;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * A small fixed pool of kernel threads. {@link #parallelFor} splits an index range into
 * {@code min(threads, count)} contiguous parts, which the caller and the workers claim one at a
 * time, and returns when all are done. Kernels partition over outputs (rows, heads), and every
 * output is produced entirely by one part, so results do not depend on the thread count.
 *
 * <p>Threads: {@link #parallelFor} may be called from any thread, also concurrently (calls share
 * the workers); it must not be called from inside a part. {@link #close} stops the workers.
 */
public final class KernelPool implements AutoCloseable {
    private static final AtomicInteger POOLS = new AtomicInteger();

    private final int threads; // parts a range is split into at most, the caller included
    private final ExecutorService workers; // threads − 1 daemon threads; null when threads == 1

    /** A pool running kernels on {@code threads} threads (the caller and {@code threads − 1} workers). */
    public KernelPool(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("kernel thread count must be at least 1, got " + threads);
        }
        this.threads = threads;
        if (threads == 1) {
            workers = null;
        } else {
            int pool = POOLS.incrementAndGet();
            AtomicInteger n = new AtomicInteger();
            workers = Executors.newFixedThreadPool(threads - 1, r -> {
                Thread t = new Thread(r, "strata-kernel-" + pool + "-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
        }
    }

    /** Threads a range is split across. */
    public int threads() {
        return threads;
    }

    /** A body run over one contiguous part {@code [from, to)} of an index range. */
    @FunctionalInterface
    public interface RangeBody {
        void run(int from, int to);
    }

    /**
     * Runs {@code body} over {@code [0, count)} split into contiguous parts, one per thread.
     * An exception thrown by a part is rethrown here (after all parts ended).
     *
     * <p>Parts are claimed, not assigned: the caller and the workers take the next unclaimed part
     * until none is left, so a worker that has not woken up yet (a loaded machine) never holds the
     * caller up: the caller runs that part itself and the late worker finds nothing to do. Which
     * thread runs a part never changes its outputs. The caller then waits for parts still running,
     * spinning briefly before it parks.
     */
    public void parallelFor(int count, RangeBody body) {
        int parts = Math.min(threads, count);
        if (parts <= 1) {
            if (count > 0) {
                body.run(0, count);
            }
            return;
        }
        Job job = new Job(count, parts, body, Thread.currentThread());
        for (int p = 1; p < parts; p++) {
            workers.execute(job::claimAll);
        }
        job.claimAll();
        job.awaitParts();
        Throwable t = job.failure.get();
        if (t instanceof RuntimeException re) {
            throw re;
        }
        if (t instanceof Error er) {
            throw er;
        }
        if (t != null) {
            throw new IllegalStateException("kernel part failed", t);
        }
    }

    /** One {@link #parallelFor} call: its parts, the next unclaimed one and how many have ended. */
    private static final class Job {
        private static final long SPIN_NANOS = 20_000; // the caller spins this long for running parts before parking

        private final int count; // indices [0, count)
        private final int parts; // contiguous parts; part p is [count·p/parts, count·(p+1)/parts)
        private final RangeBody body;
        private final Thread caller; // unparked by the part that ends last
        private final AtomicInteger next = new AtomicInteger(); // next unclaimed part
        private final AtomicInteger ended = new AtomicInteger(); // parts that have ended, failed ones included
        private final AtomicReference<Throwable> failure = new AtomicReference<>();

        Job(int count, int parts, RangeBody body, Thread caller) {
            this.count = count;
            this.parts = parts;
            this.body = body;
            this.caller = caller;
        }

        /** Runs unclaimed parts until none is left. */
        void claimAll() {
            int p;
            while ((p = next.getAndIncrement()) < parts) {
                try {
                    body.run((int) ((long) count * p / parts), (int) ((long) count * (p + 1) / parts));
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                } finally {
                    if (ended.incrementAndGet() == parts) {
                        LockSupport.unpark(caller);
                    }
                }
            }
        }

        /** Returns when every part has ended. */
        void awaitParts() {
            long spinUntil = System.nanoTime() + SPIN_NANOS;
            while (ended.get() < parts) {
                if (System.nanoTime() < spinUntil) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.park(this); // spurious wake-ups and interrupts just re-check
                }
            }
        }
    }

    @Override
    public void close() {
        if (workers != null) {
            workers.shutdown();
        }
    }
}
