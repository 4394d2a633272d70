package dev.strata.memory.host;

import dev.strata.memory.transfer.NonTemporalCopy;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Process-wide register of live off-heap regions, for the shutdown leak audit (every allocation
 * is freed exactly once: a region still registered at shutdown was never closed).
 *
 * <p>{@link OffHeapRegion} registers itself when created and unregisters when closed.
 * {@link #report()} lists what is still live; an empty list at shutdown means no region leaked.
 *
 * <p>Threads: any; the register is a concurrent map.
 */
public final class MemoryAudit {

    /**
     * One live region.
     *
     * @param id              unique per region in this process, increasing in creation order
     * @param name            the region's name
     * @param bytes           bytes reserved
     * @param createdAtNanos  {@link System#nanoTime()} at creation
     * @param hugePagesAdvised the region asked the kernel for transparent huge pages and the kernel took the advice
     */
    public record LiveRegion(long id, String name, long bytes, long createdAtNanos, boolean hugePagesAdvised) {
    }

    /**
     * The process's off-heap regions at one moment, for metrics.
     *
     * @param regionBytes          bytes of live regions
     * @param hugePageAdvisedBytes of those, bytes of regions advised for transparent huge pages
     * @param anonHugePageBytes    anonymous memory of the process the kernel backs with huge pages, bytes; -1 if unreported
     * @param streamedBytes        bytes copied with streaming stores since the process started ({@link NonTemporalCopy})
     */
    public record Usage(long regionBytes, long hugePageAdvisedBytes, long anonHugePageBytes, long streamedBytes) {
    }

    private static final java.nio.file.Path SMAPS_ROLLUP = java.nio.file.Path.of("/proc/self/smaps_rollup");
    private static final ConcurrentHashMap<Long, LiveRegion> LIVE = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT_ID = new AtomicLong(1);

    private static final java.util.concurrent.atomic.AtomicBoolean HOOK_INSTALLED = new java.util.concurrent.atomic.AtomicBoolean();

    private MemoryAudit() {
    }

    /**
     * Installs (once per process) a shutdown hook that prints {@link #report()} to standard error
     * when regions are still live at exit, so leaks show up in every run.
     */
    public static void installShutdownAudit() {
        if (HOOK_INSTALLED.compareAndSet(false, true)) {
            Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("strata-memory-audit").unstarted(() -> {
                if (!LIVE.isEmpty()) {
                    dev.strata.memory.log.Log.warn("memory-audit", report());
                }
            }));
        }
    }

    /** Registers a region; returns its id for {@link #unregister}. */
    static long register(String name, long bytes, boolean hugePagesAdvised) {
        long id = NEXT_ID.getAndIncrement();
        LIVE.put(id, new LiveRegion(id, name, bytes, System.nanoTime(), hugePagesAdvised));
        return id;
    }

    /** Removes a region registered under {@code id}. */
    static void unregister(long id) {
        if (LIVE.remove(id) == null) {
            throw new IllegalStateException("region id " + id + " is not registered (closed twice?)");
        }
    }

    /** Regions created and not yet closed, oldest first. */
    public static List<LiveRegion> liveRegions() {
        List<LiveRegion> out = new ArrayList<>(LIVE.values());
        out.sort(Comparator.comparingLong(LiveRegion::id));
        return out;
    }

    /** Bytes held by live regions. */
    public static long liveBytes() {
        long sum = 0;
        for (LiveRegion r : LIVE.values()) {
            sum += r.bytes();
        }
        return sum;
    }

    /** Bytes held by live regions that asked for transparent huge pages (and whose advice the kernel took). */
    public static long hugePageAdvisedBytes() {
        long sum = 0;
        for (LiveRegion r : LIVE.values()) {
            if (r.hugePagesAdvised()) {
                sum += r.bytes();
            }
        }
        return sum;
    }

    /**
     * Bytes of this process's anonymous memory that the kernel backs with transparent huge pages
     * ({@code AnonHugePages} of {@code /proc/self/smaps_rollup}: the regions and anything else of
     * the process, the Java heap included), or -1 where the kernel does not report it.
     */
    public static long processAnonHugePageBytes() {
        try {
            for (String line : java.nio.file.Files.readAllLines(SMAPS_ROLLUP)) {
                if (line.startsWith("AnonHugePages:")) {
                    String[] parts = line.substring("AnonHugePages:".length()).trim().split("\\s+");
                    return Long.parseLong(parts[0]) * 1024; // the kernel reports kB
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    /** The live regions' bytes and huge-page state now, and the bytes streamed between them so far. */
    public static Usage usage() {
        return new Usage(liveBytes(), hugePageAdvisedBytes(), processAnonHugePageBytes(), NonTemporalCopy.bytesStreamed());
    }

    /** A human-readable leak report: one line per live region, or a line saying none is live. */
    public static String report() {
        List<LiveRegion> live = liveRegions();
        if (live.isEmpty()) {
            return "memory audit: no live off-heap regions";
        }
        StringBuilder sb = new StringBuilder("memory audit: ").append(live.size()).append(" live off-heap region(s), ")
                .append(liveBytes()).append(" bytes");
        for (LiveRegion r : live) {
            sb.append("\n  #").append(r.id()).append(" '").append(r.name()).append("' ").append(r.bytes()).append(" bytes");
        }
        return sb.toString();
    }
}
