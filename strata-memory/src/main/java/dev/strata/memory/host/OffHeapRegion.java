package dev.strata.memory.host;

import dev.strata.memory.Sizes;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One long-lived block of off-heap memory backed by its own shared {@link Arena}, for a tier or a
 * staging pool to carve up (never an arena per object).
 *
 * <p>Alignment: {@value #PAGE} bytes, or {@value #HUGE_PAGE} bytes for regions of at least
 * {@value #HUGE_THRESHOLD} bytes (so transparent huge pages can back them). With pre-touch, every
 * page is written once at creation (a non-zero byte, then zero) so that page faults are paid at
 * start-up and not on the first copy.
 *
 * <p>Registered in {@link MemoryAudit} from creation until {@link #close()}.
 *
 * <p>Threads: {@link #segment()} may be used from any thread while the region is open;
 * {@link #close()} may be called from any thread, frees the memory once and later calls do
 * nothing. Using the segment after close fails with {@link IllegalStateException}.
 */
public final class OffHeapRegion implements AutoCloseable {

    /** Base page size, bytes. */
    public static final long PAGE = 4096;
    /** Alignment of large regions, bytes. */
    public static final long HUGE_PAGE = 2L << 20;
    /** Regions at least this large (bytes) are aligned to {@link #HUGE_PAGE}. */
    public static final long HUGE_THRESHOLD = 64L << 20;

    private final String name;
    private final Arena arena;
    private final MemorySegment segment; // [bytes] the region's memory
    private final long alignment;        // bytes
    private final long auditId;
    private final AtomicBoolean closed = new AtomicBoolean();

    private OffHeapRegion(String name, long bytes, boolean preTouch) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("region '" + name + "' size must be positive, got " + bytes);
        }
        this.name = name;
        this.alignment = bytes >= HUGE_THRESHOLD ? HUGE_PAGE : PAGE;
        this.arena = Arena.ofShared();
        try {
            this.segment = arena.allocate(bytes, alignment);
        } catch (OutOfMemoryError | IllegalArgumentException e) {
            arena.close();
            throw new IllegalStateException("cannot reserve " + bytes + " bytes (" + Sizes.format(bytes)
                    + ") for region '" + name + "': " + e.getMessage(), e);
        }
        if (preTouch) {
            for (long p = 0; p < bytes; p += PAGE) {
                segment.set(ValueLayout.JAVA_BYTE, p, (byte) 1);
                segment.set(ValueLayout.JAVA_BYTE, p, (byte) 0);
            }
        }
        this.auditId = MemoryAudit.register(name, bytes);
    }

    /**
     * Reserves a region.
     *
     * @param name     for the audit and messages
     * @param bytes    size, {@code > 0}
     * @param preTouch fault in every page now
     */
    public static OffHeapRegion allocate(String name, long bytes, boolean preTouch) {
        return new OffHeapRegion(name, bytes, preTouch);
    }

    /** The region's memory. */
    public MemorySegment segment() {
        return segment;
    }

    public String name() {
        return name;
    }

    /** Size in bytes. */
    public long byteSize() {
        return segment.byteSize();
    }

    /** Alignment of the region's start, bytes. */
    public long alignment() {
        return alignment;
    }

    public boolean isOpen() {
        return !closed.get();
    }

    /** Frees the memory (once; later calls return at once). */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            arena.close();
            MemoryAudit.unregister(auditId);
        }
    }

    @Override
    public String toString() {
        return "OffHeapRegion['" + name + "', " + Sizes.format(segment.byteSize()) + (closed.get() ? ", closed]" : "]");
    }
}
