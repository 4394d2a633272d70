package dev.strata.engine.kernel;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A small fixed pool of kernel threads. {@link #parallelFor} splits an index range into
 * {@code min(threads, count)} contiguous parts, runs part 0 on the caller and the others on the
 * workers, and returns when all are done. Kernels partition over outputs (rows, heads), and every
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
     */
    public void parallelFor(int count, RangeBody body) {
        int parts = Math.min(threads, count);
        if (parts <= 1) {
            if (count > 0) {
                body.run(0, count);
            }
            return;
        }
        CountDownLatch done = new CountDownLatch(parts - 1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int p = 1; p < parts; p++) {
            int from = (int) ((long) count * p / parts);
            int to = (int) ((long) count * (p + 1) / parts);
            workers.execute(() -> {
                try {
                    body.run(from, to);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                } finally {
                    done.countDown();
                }
            });
        }
        try {
            body.run(0, count / parts);
        } catch (Throwable t) {
            failure.compareAndSet(null, t);
        }
        boolean interrupted = false;
        while (true) {
            try {
                done.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        Throwable t = failure.get();
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

    @Override
    public void close() {
        if (workers != null) {
            workers.shutdown();
        }
    }
}
