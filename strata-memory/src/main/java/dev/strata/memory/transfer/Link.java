package dev.strata.memory.transfer;

import dev.strata.memory.Tier;
import org.HdrHistogram.Histogram;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * One source-tier → destination-tier path of the {@link TransferEngine}: its own request queue,
 * its own worker threads and its own measurements.
 *
 * <p>Design (protocol): submitters add requests to a lock-free bounded queue ({@link MpmcQueue};
 * when it is full they spin and yield, which is the link's back-pressure) and then unpark one
 * parked worker, if any. A worker takes a request (a single transfer, or a whole batch slice in
 * one go; a slice's like copies out of plain memory or a POOL in runs of one call each), runs it and
 * completes its future; with nothing queued it spins for
 * {@link TransferEngine.Settings#spinNanos()} before parking, so back-to-back transfers pay no
 * wake-up. Parking follows a flag handshake: the worker sets its {@code parked} flag, re-checks
 * the queue, and only then parks; a submitter publishes its request before reading the flags, so
 * one of the two always sees the other. A worker that takes a request while more are ready wakes
 * another parked worker, so links with several workers keep several requests in flight.
 *
 * <p>Statistics are recorded before a future completes, so a caller that waited on a future sees
 * that transfer counted.
 *
 * <p>Each request's future is told when the request should be done ({@link #expectDone}: the
 * link's recent rate per byte over the bytes pending before it and its own), so its waiter sleeps
 * on its own timer and is awake at the end ({@link SpinningFuture}) instead of parking for the
 * worker to wake it: a wake-up costs the worker a system call per request or batch.
 *
 * <p>A caller's task ({@link TransferEngine#runOnLink}) queues like a request and runs on a worker
 * between transfers, uncounted: a measurement's baseline copy runs there so that it and the copies
 * it is compared with share a thread.
 *
 * <p>Threads: {@link #stats()} and the package-private submit methods may be called from any
 * thread; futures complete on the link's worker threads (dependent actions that are not async run
 * there, and should be short).
 */
public final class Link {

    /** Name of the endpoint for raw memory ranges (sources of a gather, destinations of a scatter). */
    public static final String MEMORY = "memory";

    /** Most like copies ({@link TierCopy#copiesInRuns}) that a batch slice runs in one call of the copy path. */
    static final int RUN_ITEMS = 64;

    /** Least bytes a request must move for its rate to count in the link's average: shorter ones are mostly fixed costs. */
    static final long RATE_SAMPLE_BYTES = 64 * 1024;

    private final String sourceName;
    private final String destinationName;
    private final String name;                  // source->destination
    private final long spinNanos;               // ns a worker spins before parking
    private final TierCopy copyPath;            // shared by the engine: routes, bounces and meters COPY transfers
    private final MpmcQueue<Object> queue;      // CopyRequest or BatchSlice
    private final Worker[] workers;

    private final AtomicInteger maxQueueDepth = new AtomicInteger();  // most requests ever waiting (queue depth is the queue's size)
    private final LongAdder operations = new LongAdder();
    private final LongAdder completed = new LongAdder();
    private final LongAdder notFound = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder bytes = new LongAdder();                  // bytes moved by completed transfers
    private final LongAdder busyNanos = new LongAdder();              // ns spent running, summed over workers
    private final AtomicLong pendingBytes = new AtomicLong();         // bytes of the requests queued or running
    private volatile double nanosPerByte;                             // a worker's run time per byte, averaged over recent requests; 0 before the first
    private final AtomicLong busyUntil = new AtomicLong();            // nanoTime by which the pending requests should be done, at that rate
    private final AtomicLong firstStartNanos = new AtomicLong(Long.MIN_VALUE); // nanoTime of the first run, MIN_VALUE before
    private final Histogram cumulative = new Histogram(3);           // ns, submission to completion; guarded by this
    private volatile boolean stopping;

    /**
     * A worker thread, its park flag and its own latency histogram. The histogram is plain (no
     * atomic updates) and guarded by the worker object's monitor, which the worker takes once per
     * batch slice and {@link #stats()} once per snapshot: a shared concurrent recorder updated per
     * transfer cost about 150 ns a transfer here, a fifth of a 4 KiB copy.
     */
    private static final class Worker {
        final Thread thread;
        volatile boolean parked;
        final Histogram latency = new Histogram(3); // ns, submission to completion, since the last snapshot; guarded by this

        Worker(Thread thread) {
            this.thread = thread;
        }
    }

    Link(String sourceName, String destinationName, int workerCount, int queueCapacity, long spinNanos, TierCopy copyPath) {
        this.sourceName = sourceName;
        this.destinationName = destinationName;
        this.name = sourceName + "->" + destinationName;
        this.spinNanos = spinNanos;
        this.copyPath = copyPath;
        this.queue = new MpmcQueue<>(queueCapacity);
        this.workers = new Worker[workerCount];
        for (int i = 0; i < workerCount; i++) {
            Worker[] holder = new Worker[1];
            Thread t = Thread.ofPlatform().daemon().name("strata-link-" + name + "-" + i).unstarted(() -> runWorker(holder[0]));
            holder[0] = new Worker(t);
            workers[i] = holder[0];
        }
        for (Worker w : workers) {
            w.thread.start();
        }
    }

    /** {@code source->destination}. */
    public String name() {
        return name;
    }

    public String sourceName() {
        return sourceName;
    }

    public String destinationName() {
        return destinationName;
    }

    /** Worker threads serving this link. */
    public int workerCount() {
        return workers.length;
    }

    // ---------------------------------------------------------------- submission

    void submit(Object request) {
        int tries = 0;
        long head = queue.headPosition(); // read before offering: the depth below counts this request
        long position;
        while ((position = queue.offerAt(request)) < 0) {
            if (++tries < 64) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
            head = queue.headPosition();
        }
        wakeOne();
        int depth = (int) Math.min(Integer.MAX_VALUE, position + 1 - head); // requests waiting when this one was queued, itself included
        int max = maxQueueDepth.get();
        while (depth > max && !maxQueueDepth.compareAndSet(max, depth)) {
            max = maxQueueDepth.get();
        }
    }

    /**
     * Counts a request of {@code bytes} as pending on this link and returns when it should be done
     * ({@link System#nanoTime()}): when the work already pending should be done (or now, if
     * sooner), plus this request's bytes at the rate the workers have run at lately, shared among
     * them; 0 before the link has measured its rate or for a request of no bytes. Call once per
     * request, before {@link #submit}; the worker takes the bytes off when it has run the request,
     * and then states afresh when the rest should be done, so the estimates do not drift. Only a
     * hint for waiters ({@link SpinningFuture#expectDoneAt}); submitters racing each other or the
     * worker may each see a little less pending work than there is.
     */
    long expectDone(long bytes) {
        pendingBytes.addAndGet(bytes);
        double rate = nanosPerByte;
        if (rate == 0 || bytes == 0) {
            return 0;
        }
        long duration = (long) (bytes * rate / workers.length);
        long now = System.nanoTime();
        long previous;
        long done;
        do {
            previous = busyUntil.get();
            done = (previous - now > 0 ? previous : now) + duration;
        } while (!busyUntil.compareAndSet(previous, done));
        return done;
    }

    /**
     * After a request of {@code bytes} ran for {@code nanos} until {@code end} and moved
     * {@code moved} bytes: takes its bytes off the pending ones; if it moved at least
     * {@link #RATE_SAMPLE_BYTES}, folds its rate into the link's average (a quarter weight to each
     * new request); and states when the bytes still pending should be done.
     */
    private void ran(long bytes, long moved, long nanos, long end) {
        long pending = pendingBytes.addAndGet(-bytes);
        double rate = nanosPerByte;
        if (moved >= RATE_SAMPLE_BYTES && nanos > 0) {
            double sample = nanos / (double) moved;
            rate = rate == 0 ? sample : rate + (sample - rate) / 4;
            nanosPerByte = rate;
        }
        if (rate != 0) {
            busyUntil.set(end + (long) (Math.max(pending, 0) * rate / workers.length));
        }
    }

    /** Bytes waiting or running on this link, as counted by {@link #expectDone} (for tests). */
    long pendingBytes() {
        return pendingBytes.get();
    }

    private void wakeOne() {
        for (Worker w : workers) {
            if (w.parked) {
                LockSupport.unpark(w.thread);
                return;
            }
        }
    }

    /** Lets the workers finish every queued request and exit; returns at once. */
    void stop() {
        stopping = true;
        for (Worker w : workers) {
            LockSupport.unpark(w.thread);
        }
    }

    /** Waits for the workers to exit after {@link #stop()}. */
    void join() throws InterruptedException {
        for (Worker w : workers) {
            w.thread.join();
        }
    }

    // ---------------------------------------------------------------- workers

    private void runWorker(Worker self) {
        // End of the previous run when this worker went straight on to the next request, else 0.
        // Back to back, that end is also the next start (clock reads cost tens of ns here).
        long lastEnd = 0;
        while (true) {
            Object request = queue.poll();
            if (request == null) {
                lastEnd = 0;
                if (stopping) {
                    // every submission finished before stopping was set: a last poll sees them all
                    request = queue.poll();
                    if (request == null) {
                        return;
                    }
                } else {
                    awaitWork(self);
                    continue;
                }
            }
            if (workers.length > 1 && queue.hasReady()) {
                wakeOne();
            }
            if (request instanceof CopyRequest single) {
                lastEnd = runSingle(self, single, lastEnd);
            } else if (request instanceof Task<?> task) {
                task.run();
                lastEnd = 0; // a task is not a transfer: the next one's start is read afresh
            } else {
                lastEnd = runSlice(self, (BatchSlice) request, lastEnd);
            }
        }
    }

    /** Start time of a run: the previous run's end when back to back (never before submission), else now. */
    private static long startTime(long lastEnd, long submittedAt) {
        return lastEnd != 0 ? Math.max(lastEnd, submittedAt) : System.nanoTime();
    }

    /** Spins, then parks, until work may be ready or the link stops. */
    private void awaitWork(Worker self) {
        long deadline = System.nanoTime() + spinNanos;
        while (System.nanoTime() < deadline) {
            if (queue.hasReady() || stopping) {
                return;
            }
            Thread.onSpinWait();
        }
        self.parked = true;
        if (queue.hasReady() || stopping) {
            self.parked = false;
            return;
        }
        LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(100));
        self.parked = false;
    }

    private void noteStart(long start) {
        if (firstStartNanos.get() == Long.MIN_VALUE) {
            firstStartNanos.compareAndSet(Long.MIN_VALUE, start);
        }
    }

    /** Runs one request; returns the time it ended. */
    private long runSingle(Worker self, CopyRequest r, long lastEnd) {
        long start = startTime(lastEnd, r.submittedAt);
        noteStart(start);
        long moved;
        try {
            moved = perform(r.kind, r.source, r.sourceHandle, r.destination, r.destinationHandle, r.length, r.segments);
        } catch (Throwable t) {
            long end = System.nanoTime();
            account(self, TransferStatus.FAILED, 0, end - start, end - r.submittedAt);
            ran(r.length, 0, end - start, end);
            r.completeExceptionally(new TransferException(name, r.describe(), t));
            return end;
        }
        long end = System.nanoTime();
        TransferStatus status = moved < 0 ? TransferStatus.NOT_FOUND : TransferStatus.COMPLETED;
        long moves = Math.max(moved, 0);
        if (moved > 0) {
            meterDirectAccess(r.kind, r.source, r.destination, 1, moved, end - start);
        }
        account(self, status, moves, end - start, end - r.submittedAt);
        ran(r.length, moves, end - start, end);
        r.complete(new TransferResult(status, moves, start - r.submittedAt, end - start, null));
        return end;
    }

    /**
     * Runs a batch slice item by item, and each run of like copies out of plain memory or a POOL
     * ({@link TierCopy#copiesInRuns}: up to {@link #RUN_ITEMS} in a row, same tiers, until they hold
     * {@link NonTemporalCopy#TABLE_CALL_BYTES}) in one call
     * ({@link #runCopies}); returns the time the last item ended.
     */
    private long runSlice(Worker self, BatchSlice slice, long lastEnd) {
        BatchTracker tracker = slice.tracker;
        long previousEnd = lastEnd;
        // Counters and tier meters are updated once per run of like transfers (same kind and tiers),
        // not per transfer: at 16 KiB a copy takes ~2 us and per-transfer metering costs several percent.
        Transfer group = null; // first transfer of the current run of like transfers
        long groupOps = 0;
        long groupBytes = 0;
        long groupNanos = 0;
        int[] indices = slice.indices;
        long sliceStart = previousEnd;
        long sliceMoved = 0; // bytes of the completed items
        for (int at = 0; at < indices.length; ) {
            int index = indices[at];
            Transfer t = tracker.transfers[index];
            if (group != null && !sameEndpoints(group, t)) {
                meterGroup(group, groupOps, groupBytes, groupNanos);
                group = null;
                groupOps = groupBytes = groupNanos = 0;
            }
            long start = startTime(previousEnd, tracker.submittedAt);
            if (at == 0) {
                sliceStart = start;
            }
            noteStart(start);
            if (t.kind() == Transfer.Kind.COPY && TierCopy.copiesInRuns(t.source(), t.destination())) {
                int items = 1;
                long runBytes = t.length();
                while (items < RUN_ITEMS && runBytes < NonTemporalCopy.TABLE_CALL_BYTES && at + items < indices.length
                        && sameEndpoints(t, tracker.transfers[indices[at + items]])) {
                    runBytes += tracker.transfers[indices[at + items]].length();
                    items++;
                }
                long[] done = runCopies(self, tracker, indices, at, items, start); // {end, completed, bytes}
                if (done[1] > 0) {
                    if (group == null) {
                        group = t;
                    }
                    groupOps += done[1];
                    groupBytes += done[2];
                    groupNanos += done[0] - start;
                }
                previousEnd = done[0];
                at += items;
                continue;
            }
            long moved = 0;
            Throwable failure = null;
            try {
                moved = perform(t.kind(), t.source(), t.sourceHandle(), t.destination(), t.destinationHandle(),
                        t.length(), t.segments());
            } catch (Throwable e) {
                failure = e;
            }
            long end = System.nanoTime();
            if (failure == null && moved > 0) {
                if (group == null) {
                    group = t;
                }
                groupOps++;
                groupBytes += moved;
                groupNanos += end - start;
            }
            tracker.results[index] = itemResult(self, tracker, index, moved, failure, start, end);
            previousEnd = end;
            at++;
        }
        if (group != null) {
            meterGroup(group, groupOps, groupBytes, groupNanos);
        }
        synchronized (self) { // the completed items' latencies, each as its result states it (failures are in already)
            for (int index : indices) {
                TransferResult r = tracker.results[index];
                if (r.status() == TransferStatus.COMPLETED) {
                    self.latency.recordValue(Math.max(r.nanosQueued() + r.nanosRun(), 0));
                    sliceMoved += r.bytes();
                }
            }
        }
        ran(slice.bytes, sliceMoved, previousEnd - sliceStart, previousEnd);
        tracker.finished(indices.length);
        return previousEnd;
    }

    /**
     * Runs the {@code items} like copies at {@code indices[from...]} in one call of the copy path
     * ({@link TierCopy#copyRunUnmetered}) and fills their results: each completed copy was queued
     * from its submission to {@code start} and ran for the whole call, as its bytes did. Accounts
     * the copies not found and failed (the completed ones are metered by the caller with the
     * run's like transfers). Returns the call's end (nanoTime), the copies completed and their bytes.
     */
    private long[] runCopies(Worker self, BatchTracker tracker, int[] indices, int from, int items, long start) {
        Transfer first = tracker.transfers[indices[from]];
        long[] srcHandles = new long[items];
        long[] dstHandles = new long[items];
        long[] lengths = new long[items];
        for (int i = 0; i < items; i++) {
            Transfer t = tracker.transfers[indices[from + i]];
            srcHandles[i] = t.sourceHandle();
            dstHandles[i] = t.destinationHandle();
            lengths[i] = t.length();
        }
        long[] moved = new long[items];
        Throwable[] failures = new Throwable[items];
        Throwable whole = null; // the call itself failed: every copy not already failed or not found
        try {
            copyPath.copyRunUnmetered(first.source(), srcHandles, first.destination(), dstHandles, lengths, items, moved,
                    failures);
        } catch (Throwable e) {
            whole = e;
        }
        long end = System.nanoTime();
        long completedCopies = 0;
        long completedBytes = 0;
        for (int i = 0; i < items; i++) {
            int index = indices[from + i];
            Throwable failure = failures[i] != null ? failures[i] : moved[i] > 0 ? whole : null;
            tracker.results[index] = itemResult(self, tracker, index, moved[i], failure, start, end);
            if (failure == null && moved[i] > 0) {
                completedCopies++;
                completedBytes += moved[i];
            }
        }
        return new long[] {end, completedCopies, completedBytes};
    }

    /**
     * The result of batch item {@code index}, run from {@code start} to {@code end}: failed if
     * {@code failure} is set, else completed if it moved bytes (metered by the caller with its run
     * of like transfers), else not found; failures and misses are accounted here.
     */
    private TransferResult itemResult(Worker self, BatchTracker tracker, int index, long moved, Throwable failure,
                                      long start, long end) {
        long queued = start - tracker.submittedAt;
        if (failure != null) {
            account(self, TransferStatus.FAILED, 0, end - start, end - tracker.submittedAt);
            return new TransferResult(TransferStatus.FAILED, 0, queued, end - start,
                    new TransferException(name, describe(tracker.transfers[index]) + " (batch item " + index + ")", failure));
        }
        if (moved > 0) {
            return new TransferResult(TransferStatus.COMPLETED, moved, queued, end - start, null);
        }
        account(self, TransferStatus.NOT_FOUND, 0, end - start, end - tracker.submittedAt);
        return new TransferResult(TransferStatus.NOT_FOUND, 0, queued, end - start, null);
    }

    private static boolean sameEndpoints(Transfer a, Transfer b) {
        return a.kind() == b.kind() && a.source() == b.source() && a.destination() == b.destination();
    }

    /** Accounts {@code ops} completed transfers like {@code sample} (latencies already recorded). */
    private void meterGroup(Transfer sample, long ops, long moved, long nanos) {
        operations.add(ops);
        completed.add(ops);
        bytes.add(moved);
        busyNanos.add(nanos);
        meterDirectAccess(sample.kind(), sample.source(), sample.destination(), ops, moved, nanos);
    }

    private void account(Worker self, TransferStatus status, long moved, long runNanos, long totalNanos) {
        operations.increment();
        switch (status) {
            case COMPLETED -> {
                completed.increment();
                bytes.add(moved);
            }
            case NOT_FOUND -> notFound.increment();
            case FAILED -> failed.increment();
        }
        busyNanos.add(runNanos);
        synchronized (self) {
            self.latency.recordValue(Math.max(totalNanos, 0));
        }
    }

    /**
     * Records, in the meter of a plain-memory tier, the side of a transfer that went through its
     * view rather than its read or write methods (those meter themselves).
     */
    private static void meterDirectAccess(Transfer.Kind kind, Tier src, Tier dst, long ops, long bytes, long nanos) {
        switch (kind) {
            case COPY -> TierCopy.meterViews(src, dst, ops, bytes, nanos);
            case GATHER -> TierCopy.meterViewWrite(dst, ops, bytes, nanos);
            case SCATTER -> TierCopy.meterViewRead(src, ops, bytes, nanos);
        }
    }

    /**
     * Moves the bytes of one transfer.
     *
     * @return bytes moved, or -1 if the source object was not found
     */
    private long perform(Transfer.Kind kind, Tier src, long srcHandle, Tier dst, long dstHandle, long length,
                         List<MemorySegment> segments) {
        switch (kind) {
            case COPY -> {
                return copyPath.copyUnmetered(src, srcHandle, dst, dstHandle, length); // metered after the run
            }
            case GATHER -> {
                if (dst.isPlainMemory()) {
                    TierCopy.gatherView(segments, dst.segment(dstHandle, 0, length));
                } else {
                    dst.gatherWrite(dstHandle, segments);
                }
                return length;
            }
            case SCATTER -> {
                if (src.isPlainMemory()) {
                    TierCopy.scatterView(src.segment(srcHandle, 0, length), segments);
                } else if (!src.scatterRead(srcHandle, segments)) {
                    return -1;
                }
                return length;
            }
        }
        throw new IllegalStateException("unknown transfer kind " + kind);
    }

    static String describe(Transfer t) {
        return describe(t.kind(), t.source(), t.sourceHandle(), t.destination(), t.destinationHandle(), t.length(), t.segments().size());
    }

    static String describe(Transfer.Kind kind, Tier src, long srcHandle, Tier dst, long dstHandle, long length, int parts) {
        return switch (kind) {
            case COPY -> "copy of " + length + " bytes from handle " + srcHandle + " in tier '" + src.name()
                    + "' to handle " + dstHandle + " in tier '" + dst.name() + "'";
            case GATHER -> "gather of " + parts + " ranges (" + length + " bytes) to handle " + dstHandle
                    + " in tier '" + dst.name() + "'";
            case SCATTER -> "scatter of handle " + srcHandle + " in tier '" + src.name() + "' (" + length
                    + " bytes) to " + parts + " ranges";
        };
    }

    // ---------------------------------------------------------------- statistics

    /** A snapshot of this link's measurements. */
    public LinkStats stats() {
        Histogram h;
        synchronized (this) {
            for (Worker w : workers) {
                synchronized (w) {
                    cumulative.add(w.latency);
                    w.latency.reset();
                }
            }
            h = cumulative.copy();
        }
        long moved = bytes.sum();
        long busy = busyNanos.sum();
        long first = firstStartNanos.get();
        long wall = first == Long.MIN_VALUE ? 0 : System.nanoTime() - first;
        boolean any = h.getTotalCount() > 0;
        return new LinkStats(sourceName, destinationName, workers.length,
                operations.sum(), completed.sum(), notFound.sum(), failed.sum(), moved,
                queue.size(), maxQueueDepth.get(),
                any ? h.getValueAtPercentile(50) : 0,
                any ? h.getValueAtPercentile(99) : 0,
                any ? h.getValueAtPercentile(99.9) : 0,
                any ? h.getMaxValue() : 0,
                busy, wall,
                busy > 0 ? (double) moved / busy : 0.0,
                wall > 0 ? (double) moved / wall : 0.0);
    }

    @Override
    public String toString() {
        return "Link[" + name + ", " + workers.length + " worker(s)]";
    }

    // ---------------------------------------------------------------- requests

    /** One submitted transfer; the request is its own future, so a transfer allocates one object plus its result. */
    static final class CopyRequest extends SpinningFuture<TransferResult> {
        final Transfer.Kind kind;
        final Tier source;                 // null for GATHER
        final long sourceHandle;
        final Tier destination;            // null for SCATTER
        final long destinationHandle;
        final long length;                 // bytes
        final List<MemorySegment> segments;
        final long submittedAt;            // System.nanoTime()

        CopyRequest(Transfer.Kind kind, Tier source, long sourceHandle, Tier destination, long destinationHandle,
                    long length, List<MemorySegment> segments, long submittedAt) {
            this.kind = kind;
            this.source = source;
            this.sourceHandle = sourceHandle;
            this.destination = destination;
            this.destinationHandle = destinationHandle;
            this.length = length;
            this.segments = segments;
            this.submittedAt = submittedAt;
        }

        String describe() {
            return Link.describe(kind, source, sourceHandle, destination, destinationHandle, length, segments.size());
        }
    }

    /**
     * A caller's task run on a worker of this link in queue order ({@link TransferEngine#runOnLink}):
     * not a transfer, so neither the link's counters nor its latencies see it. Completes with the
     * task's value, or exceptionally with what it threw; the worker goes on either way.
     */
    static final class Task<T> extends SpinningFuture<T> {
        private final Callable<T> work;

        Task(Callable<T> work) {
            this.work = work;
        }

        void run() {
            T value;
            try {
                value = work.call();
            } catch (Throwable t) {
                completeExceptionally(t);
                return;
            }
            complete(value);
        }
    }

    /** The part of a batch that runs on one link, taken by a worker in one go. */
    static final class BatchSlice {
        final BatchTracker tracker;
        final int[] indices; // positions in tracker.transfers, ascending
        final long bytes;    // the lengths of its transfers, summed

        BatchSlice(BatchTracker tracker, int[] indices) {
            this.tracker = tracker;
            this.indices = indices;
            long sum = 0;
            for (int index : indices) {
                sum += tracker.transfers[index].length();
            }
            this.bytes = sum;
        }
    }

    /** A batch across one or more links: completes its future when every slice is done. */
    static final class BatchTracker {
        final Transfer[] transfers;
        final TransferResult[] results;            // filled by the slices' workers
        final AtomicInteger remaining;             // transfers not yet finished
        final SpinningFuture<BatchResult> future = new SpinningFuture<>();
        final long submittedAt;                    // System.nanoTime()

        BatchTracker(Transfer[] transfers, long submittedAt) {
            this.transfers = transfers;
            this.results = new TransferResult[transfers.length];
            this.remaining = new AtomicInteger(transfers.length);
            this.submittedAt = submittedAt;
        }

        void finished(int count) {
            // the decrement is a full fence: results written by every slice are visible to the last one
            if (remaining.addAndGet(-count) == 0) {
                long moved = 0;
                for (TransferResult r : results) {
                    moved += r.bytes();
                }
                future.complete(new BatchResult(List.of(results), moved));
            }
        }
    }
}
