package dev.strata.memory.transfer;

import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.host.OffHeapRegion;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Moves bytes between tiers asynchronously, through one {@link Link} per (source tier,
 * destination tier) pair, created on first use.
 *
 * <p>Design: every call returns at once with a future; the link's workers do the copying. A copy
 * between two tiers goes through the one copy path, {@link TierCopy}: plain to plain is one copy
 * between the two views (both tiers' meters updated after the run); into a plain-memory
 * destination the source reads straight into the destination's view; from a plain-memory source
 * the destination writes straight from the source's view; between two non-plain tiers through a
 * page-aligned HOST bounce buffer of the engine's {@link StagingPool} (reserved on first use,
 * never per transfer). A gather into plain memory copies each part into the destination's view,
 * into other tiers it calls {@link Tier#gatherWrite}; a scatter mirrors that with
 * {@link Tier#scatterRead}. Raw memory
 * ranges (gather sources, scatter destinations) form the endpoint named {@link Link#MEMORY}.
 *
 * <p>Outcomes: a source object that is missing or unpublished completes the future normally with
 * {@link TransferStatus#NOT_FOUND}; an exception from a tier completes that transfer's future
 * exceptionally with a {@link TransferException} naming the link and the handles, and the link
 * keeps serving later transfers. A batch completes normally with one result per transfer.
 *
 * <p>Close: {@link #close()} stops accepting (later calls throw {@link IllegalStateException}),
 * waits for calls already inside a submit method to finish queueing, lets every link run all the
 * work queued so far to completion, joins the workers and releases the staging pool.
 *
 * <p>Threads: every method may be called from any thread; submission is lock-free apart from the
 * first use of a link (which creates it). Futures complete on link worker threads: dependent
 * actions attached without an executor run there, so they must be short and must not wait on
 * further transfers (use the {@code ...Async} variants for that).
 */
public final class TransferEngine implements AutoCloseable {

    /**
     * Engine configuration.
     *
     * @param memoryLinkWorkers workers for a link touching no DISK tier, {@code >= 1}
     * @param diskLinkWorkers   workers for a link touching a DISK tier, {@code >= 1} (several keep requests in flight)
     * @param linkWorkers       overrides by link name {@code source->destination} (tier names, {@code memory} for raw ranges)
     * @param queueCapacity     requests each link can hold waiting, a power of two {@code >= 2}
     * @param spinNanos         ns an idle worker spins before parking, {@code >= 0}
     * @param stagingBytes      bytes of one HOST bounce buffer: the largest object copied between two non-plain tiers
     *                          (the engine keeps up to {@value #STAGING_BUFFERS} such buffers, reserved together on
     *                          the first such copy)
     */
    public record Settings(int memoryLinkWorkers, int diskLinkWorkers, Map<String, Integer> linkWorkers,
                           int queueCapacity, long spinNanos, long stagingBytes) {

        public Settings {
            if (memoryLinkWorkers < 1) {
                throw new IllegalArgumentException("memoryLinkWorkers must be >= 1, got " + memoryLinkWorkers);
            }
            if (diskLinkWorkers < 1) {
                throw new IllegalArgumentException("diskLinkWorkers must be >= 1, got " + diskLinkWorkers);
            }
            linkWorkers = Map.copyOf(linkWorkers);
            linkWorkers.forEach((link, n) -> {
                if (n < 1) {
                    throw new IllegalArgumentException("workers for link '" + link + "' must be >= 1, got " + n);
                }
            });
            if (queueCapacity < 2 || Integer.bitCount(queueCapacity) != 1) {
                throw new IllegalArgumentException("queueCapacity must be a power of two >= 2, got " + queueCapacity);
            }
            if (spinNanos < 0) {
                throw new IllegalArgumentException("spinNanos must be >= 0, got " + spinNanos);
            }
            if (stagingBytes <= 0) {
                throw new IllegalArgumentException("stagingBytes must be positive, got " + stagingBytes);
            }
        }

        /** 1 worker per memory link, 4 per disk link, 4096 queued requests, 50 µs spin, 64 MiB staging. */
        public static Settings defaults() {
            return new Settings(1, 4, Map.of(), 4096, 50_000, 64L << 20);
        }

        public Settings withMemoryLinkWorkers(int n) {
            return new Settings(n, diskLinkWorkers, linkWorkers, queueCapacity, spinNanos, stagingBytes);
        }

        public Settings withDiskLinkWorkers(int n) {
            return new Settings(memoryLinkWorkers, n, linkWorkers, queueCapacity, spinNanos, stagingBytes);
        }

        /** Sets the workers of one link, named {@code source->destination}. */
        public Settings withLinkWorkers(String link, int n) {
            Map<String, Integer> m = new java.util.HashMap<>(linkWorkers);
            m.put(link, n);
            return new Settings(memoryLinkWorkers, diskLinkWorkers, m, queueCapacity, spinNanos, stagingBytes);
        }

        public Settings withQueueCapacity(int n) {
            return new Settings(memoryLinkWorkers, diskLinkWorkers, linkWorkers, n, spinNanos, stagingBytes);
        }

        public Settings withSpinNanos(long n) {
            return new Settings(memoryLinkWorkers, diskLinkWorkers, linkWorkers, queueCapacity, n, stagingBytes);
        }

        public Settings withStagingBytes(long n) {
            return new Settings(memoryLinkWorkers, diskLinkWorkers, linkWorkers, queueCapacity, spinNanos, n);
        }
    }

    /** Bounce buffers of the engine's staging pool: copies between two non-plain tiers in flight at once. */
    public static final int STAGING_BUFFERS = 2;

    private final Settings settings;
    private final StagingPool staging;                                                     // bounce buffers of copyPath
    private final TierCopy copyPath;                                                       // shared by every link
    private final ConcurrentHashMap<Tier, ConcurrentHashMap<Tier, Link>> tierToTier = new ConcurrentHashMap<>(); // source -> destination -> link
    private final ConcurrentHashMap<Tier, Link> memoryToTier = new ConcurrentHashMap<>(); // gathers, by destination
    private final ConcurrentHashMap<Tier, Link> tierToMemory = new ConcurrentHashMap<>(); // scatters, by source
    private final List<Link> links = new CopyOnWriteArrayList<>();                         // creation order
    private final AtomicInteger submitting = new AtomicInteger();                          // calls inside a submit method
    private volatile boolean closed;

    public TransferEngine() {
        this(Settings.defaults());
    }

    public TransferEngine(Settings settings) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.staging = new StagingPool("transfer-staging", STAGING_BUFFERS, settings.stagingBytes(), OffHeapRegion.PAGE,
                StagingPool.Reserve.ON_FIRST_BORROW);
        this.copyPath = new TierCopy(staging);
    }

    public Settings settings() {
        return settings;
    }

    /**
     * Copies the whole object of {@code length} bytes in allocation {@code srcHandle} of {@code src}
     * into allocation {@code dstHandle} of {@code dst}.
     */
    public CompletableFuture<TransferResult> copy(Tier src, long srcHandle, Tier dst, long dstHandle, long length) {
        Objects.requireNonNull(src, "source tier");
        Objects.requireNonNull(dst, "destination tier");
        if (length <= 0) {
            throw new IllegalArgumentException("copy length must be positive, got " + length + " (from handle " + srcHandle
                    + " in '" + src.name() + "' to handle " + dstHandle + " in '" + dst.name() + "')");
        }
        enter();
        try {
            Link.CopyRequest request = new Link.CopyRequest(Transfer.Kind.COPY, src, srcHandle, dst, dstHandle, length,
                    List.of(), System.nanoTime());
            submit(linkFor(src, dst), request, length);
            return request;
        } finally {
            exit();
        }
    }

    /** Writes the concatenation of {@code sources} as the object in allocation {@code dstHandle} of {@code dst}. */
    public CompletableFuture<TransferResult> gather(List<MemorySegment> sources, Tier dst, long dstHandle) {
        Objects.requireNonNull(dst, "destination tier");
        List<MemorySegment> parts = List.copyOf(sources);
        enter();
        try {
            Link.CopyRequest request = new Link.CopyRequest(Transfer.Kind.GATHER, null, -1, dst, dstHandle,
                    Transfer.totalBytes(parts), parts, System.nanoTime());
            submit(linkFor(null, dst), request, request.length);
            return request;
        } finally {
            exit();
        }
    }

    /** Splits the object in allocation {@code srcHandle} of {@code src} over {@code destinations}, in order. */
    public CompletableFuture<TransferResult> scatter(Tier src, long srcHandle, List<MemorySegment> destinations) {
        Objects.requireNonNull(src, "source tier");
        List<MemorySegment> parts = List.copyOf(destinations);
        enter();
        try {
            Link.CopyRequest request = new Link.CopyRequest(Transfer.Kind.SCATTER, src, srcHandle, null, -1,
                    Transfer.totalBytes(parts), parts, System.nanoTime());
            submit(linkFor(src, null), request, request.length);
            return request;
        } finally {
            exit();
        }
    }

    /**
     * Submits several transfers under one future. Transfers on the same link go to it as one
     * request that a worker runs in one go; a batch spanning links completes when every link has
     * run its part. The result lists one outcome per transfer in submission order.
     */
    public CompletableFuture<BatchResult> submitBatch(List<Transfer> transfers) {
        Transfer[] all = transfers.toArray(new Transfer[0]);
        if (all.length == 0) {
            return CompletableFuture.completedFuture(new BatchResult(List.of(), 0));
        }
        enter();
        try {
            Link.BatchTracker tracker = new Link.BatchTracker(all, System.nanoTime());
            Link first = linkOf(all[0]);
            boolean oneLink = true;
            for (int i = 1; i < all.length && oneLink; i++) {
                oneLink = linkOf(all[i]) == first;
            }
            if (oneLink) {
                int[] indices = new int[all.length];
                for (int i = 0; i < indices.length; i++) {
                    indices[i] = i;
                }
                Link.BatchSlice slice = new Link.BatchSlice(tracker, indices);
                tracker.future.expectDoneAt(first.expectDone(slice.bytes));
                first.submit(slice);
            } else {
                Map<Link, List<Integer>> byLink = new IdentityHashMap<>();
                List<Link> order = new ArrayList<>();
                for (int i = 0; i < all.length; i++) {
                    Link link = linkOf(all[i]);
                    List<Integer> list = byLink.get(link);
                    if (list == null) {
                        list = new ArrayList<>();
                        byLink.put(link, list);
                        order.add(link);
                    }
                    list.add(i);
                }
                long expected = 0; // the latest link's estimate
                boolean known = true; // every link had one
                for (Link link : order) {
                    List<Integer> list = byLink.get(link);
                    int[] indices = new int[list.size()];
                    for (int i = 0; i < indices.length; i++) {
                        indices[i] = list.get(i);
                    }
                    Link.BatchSlice slice = new Link.BatchSlice(tracker, indices);
                    long at = link.expectDone(slice.bytes);
                    if (at == 0) {
                        known = false;
                    } else if (expected == 0 || at - expected > 0) {
                        expected = at;
                    }
                    link.submit(slice);
                }
                tracker.future.expectDoneAt(known ? expected : 0);
            }
            return tracker.future;
        } finally {
            exit();
        }
    }

    /**
     * Runs {@code task} on a worker of the link from {@code src} to {@code dst} (null on either side
     * stands for raw memory ranges, the link of gathers or of scatters), after the requests queued on
     * that link before it; the future completes with the task's value or what it threw. The task is
     * not a transfer: the link's counters, latencies and the tiers' meters do not see it, and while
     * it runs the link's other requests wait (with one worker) behind it, so it should be short.
     *
     * <p>Its use is measurement: a baseline copy run here shares the thread (and so the processor
     * and its caches) of the transfers it is compared with, which a baseline on the caller's thread
     * does not. Any thread may call; the task runs on the link's worker thread.
     *
     * @throws IllegalStateException if the engine is closed
     */
    public <T> CompletableFuture<T> runOnLink(Tier src, Tier dst, Callable<T> task) {
        Objects.requireNonNull(task, "task");
        if (src == null && dst == null) {
            throw new IllegalArgumentException("a link has a tier on at least one side; both were null");
        }
        enter();
        try {
            Link.Task<T> request = new Link.Task<>(task);
            linkFor(src, dst).submit(request);
            return request;
        } finally {
            exit();
        }
    }

    /** Queues a single transfer of {@code bytes} on {@code link}, stating when its waiters should expect it done. */
    private static void submit(Link link, Link.CopyRequest request, long bytes) {
        request.expectDoneAt(link.expectDone(bytes));
        link.submit(request);
    }

    /** Snapshots of every link's measurements, in the order the links were created. */
    public List<LinkStats> linkStats() {
        List<LinkStats> out = new ArrayList<>(links.size());
        for (Link link : links) {
            out.add(link.stats());
        }
        return out;
    }

    /** The links created so far, in creation order. */
    public List<Link> links() {
        return List.copyOf(links);
    }

    private Link linkOf(Transfer t) {
        return switch (t.kind()) {
            case COPY -> linkFor(t.source(), t.destination());
            case GATHER -> linkFor(null, t.destination());
            case SCATTER -> linkFor(t.source(), null);
        };
    }

    /** The link from {@code src} to {@code dst}; null stands for raw memory ranges. Creates it on first use. */
    private Link linkFor(Tier src, Tier dst) {
        if (src == null) {
            Link link = memoryToTier.get(dst);
            return link != null ? link : memoryToTier.computeIfAbsent(dst, d -> newLink(null, d));
        }
        if (dst == null) {
            Link link = tierToMemory.get(src);
            return link != null ? link : tierToMemory.computeIfAbsent(src, s -> newLink(s, null));
        }
        ConcurrentHashMap<Tier, Link> bySource = tierToTier.get(src);
        if (bySource == null) {
            bySource = tierToTier.computeIfAbsent(src, s -> new ConcurrentHashMap<>());
        }
        Link link = bySource.get(dst);
        return link != null ? link : bySource.computeIfAbsent(dst, d -> newLink(src, d));
    }

    private Link newLink(Tier src, Tier dst) {
        String source = src == null ? Link.MEMORY : src.name();
        String destination = dst == null ? Link.MEMORY : dst.name();
        boolean disk = (src != null && src.kind() == TierKind.DISK) || (dst != null && dst.kind() == TierKind.DISK);
        int workers = settings.linkWorkers().getOrDefault(source + "->" + destination,
                disk ? settings.diskLinkWorkers() : settings.memoryLinkWorkers());
        Link link = new Link(source, destination, workers, settings.queueCapacity(), settings.spinNanos(), copyPath);
        links.add(link);
        return link;
    }

    private void enter() {
        submitting.incrementAndGet();
        if (closed) {
            submitting.decrementAndGet();
            throw new IllegalStateException("transfer engine is closed; no new transfers are accepted");
        }
    }

    private void exit() {
        submitting.decrementAndGet();
    }

    /**
     * Stops accepting transfers, lets every link finish the work queued so far (futures complete as
     * usual), joins the workers and releases the staging pool. A second call does nothing.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        while (submitting.get() != 0) {
            Thread.onSpinWait();
            Thread.yield();
        }
        for (Link link : links) {
            link.stop();
        }
        boolean interrupted = false;
        for (Link link : links) {
            while (true) {
                try {
                    link.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        staging.close();
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
