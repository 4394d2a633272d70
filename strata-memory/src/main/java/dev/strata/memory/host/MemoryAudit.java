package dev.strata.memory.host;

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
     */
    public record LiveRegion(long id, String name, long bytes, long createdAtNanos) {
    }

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
    static long register(String name, long bytes) {
        long id = NEXT_ID.getAndIncrement();
        LIVE.put(id, new LiveRegion(id, name, bytes, System.nanoTime()));
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
