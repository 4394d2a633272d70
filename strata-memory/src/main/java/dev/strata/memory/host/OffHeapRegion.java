package dev.strata.memory.host;

import dev.strata.memory.Sizes;
import dev.strata.memory.posix.Libc;
import dev.strata.memory.transfer.NonTemporalCopy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One long-lived block of off-heap memory backed by its own shared {@link Arena}, for a tier or a
 * staging pool to carve up (never an arena per object).
 *
 * <p>Alignment: {@value #PAGE} bytes, or {@value #HUGE_PAGE} bytes for regions of at least
 * {@value #HUGE_THRESHOLD} bytes. A large region is its own private anonymous mapping
 * ({@code mmap(2)}), advised with {@code MADV_HUGEPAGE} before its first touch (unless
 * {@link #hugePages(HugePages)} is {@link HugePages#OFF}: {@code memory.huge-pages}), so that
 * transparent huge pages back it where the kernel allows them: with the kernel's setting at
 * {@code madvise} (a common default) only advised memory gets them, and memory from
 * {@link Arena#allocate} is written (zeroed) before it could be advised. On huge pages one TLB
 * entry covers 2 MiB instead of 4 KiB, and a direct DISK transfer of up to 2 MiB into a region is
 * one physically contiguous range whatever the kernel's free memory looks like. The kernel's setting
 * {@code never} still rules; a kernel without huge pages leaves the region on base pages
 * ({@link #hugePagesAdvised()} false). With pre-touch, every page is written once at creation (a
 * non-zero byte, then zero) so that page faults are paid at start-up and not on the first copy.
 *
 * <p>Registered in {@link MemoryAudit} from creation until {@link #close()}, and for as long as
 * anonymous memory with {@link NonTemporalCopy}, whose streaming copies it may take part in.
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
    public static final long HUGE_THRESHOLD = 4L << 20;

    /** Whether large regions ask for transparent huge pages. */
    public enum HugePages {
        /** Regions of {@link #HUGE_THRESHOLD} bytes or more are advised {@code MADV_HUGEPAGE} (the default). */
        ADVISE,
        /** No advice: regions stay on whatever the kernel's own setting gives unadvised memory. */
        OFF
    }

    private static volatile HugePages hugePages = HugePages.ADVISE; // for regions reserved from now on
    private static final long CLOSE_WAIT_NANOS = 5_000_000_000L; // longest close() waits for a copy in flight

    private final String name;
    private final Arena arena;
    private final MemorySegment segment; // [bytes] the region's memory
    private final long alignment;        // bytes
    private final boolean hugePagesAdvised; // MADV_HUGEPAGE was taken for the region's range
    private final long auditId;
    private final AtomicBoolean closed = new AtomicBoolean();

    private OffHeapRegion(String name, long bytes, boolean preTouch) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("region '" + name + "' size must be positive, got " + bytes);
        }
        this.name = name;
        this.alignment = bytes >= HUGE_THRESHOLD ? HUGE_PAGE : PAGE;
        this.arena = Arena.ofShared();
        Mapping m;
        try {
            m = alignment == HUGE_PAGE ? mapForHugePages(bytes, arena) : new Mapping(arena.allocate(bytes, alignment), false);
        } catch (OutOfMemoryError | IllegalArgumentException | IllegalStateException e) {
            arena.close();
            throw new IllegalStateException("cannot reserve " + bytes + " bytes (" + Sizes.format(bytes)
                    + ") for region '" + name + "': " + e.getMessage(), e);
        }
        this.segment = m.segment();
        this.hugePagesAdvised = m.hugePagesAdvised();
        if (preTouch) {
            preTouch(segment);
        }
        this.auditId = MemoryAudit.register(name, bytes, hugePagesAdvised);
        NonTemporalCopy.registerAnonymous(arena.scope()); // private anonymous memory: nothing can truncate it
    }

    /** Reserved memory, and whether the kernel took the advice to back it with huge pages. */
    private record Mapping(MemorySegment segment, boolean hugePagesAdvised) {
    }

    /**
     * Maps {@code bytes} of private anonymous (zeroed) memory starting on a {@link #HUGE_PAGE}
     * boundary, advised with {@code MADV_HUGEPAGE} unless the setting is {@link HugePages#OFF};
     * closing {@code arena} unmaps it.
     */
    @SuppressWarnings("restricted") // mmap and madvise on a range this method maps itself
    private static Mapping mapForHugePages(long bytes, Arena arena) {
        long span = bytes + HUGE_PAGE; // room to start on a huge-page boundary
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment state = scratch.allocate(Libc.CALL_STATE);
            MemorySegment base = (MemorySegment) Libc.MMAP.invokeExact(state, MemorySegment.NULL, span,
                    Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS, -1, 0L);
            if (base.address() == -1L) {
                throw new IllegalStateException("mmap failed: " + Libc.describe(Libc.errno(state)));
            }
            long mapped = base.address();
            long start = (mapped + HUGE_PAGE - 1) & -HUGE_PAGE;
            try {
                long advisedBytes = (bytes + PAGE - 1) & -PAGE;
                boolean advised = false;
                if (hugePages == HugePages.ADVISE) {
                    int rc = (int) Libc.MADVISE.invokeExact(state, MemorySegment.ofAddress(start), advisedBytes, Libc.MADV_HUGEPAGE);
                    advised = rc == 0; // EINVAL: a kernel built without transparent huge pages; base pages serve
                }
                return new Mapping(MemorySegment.ofAddress(start).reinterpret(bytes, arena, ignored -> Libc.unmap(mapped, span)),
                        advised);
            } catch (Throwable t) {
                Libc.unmap(mapped, span);
                throw t;
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("mmap failed: " + t, t);
        }
    }

    /**
     * Sets whether regions reserved from now on ask for transparent huge pages (process-wide, as
     * {@code memory.huge-pages} configures it; regions already reserved keep theirs). Any thread.
     */
    public static void hugePages(HugePages setting) {
        hugePages = java.util.Objects.requireNonNull(setting, "huge pages setting");
    }

    /** The current {@link #hugePages(HugePages)} setting. */
    public static HugePages hugePages() {
        return hugePages;
    }

    /**
     * Reserves {@code bytes} of zeroed off-heap memory owned by {@code arena} (freed when it
     * closes), for memory whose lifetime an arena of its owner already governs (model weights, a
     * lender's budget): from {@link #HUGE_THRESHOLD} bytes on, mapped and advised for
     * transparent huge pages as a region's memory is; below, {@link Arena#allocate}, whose zeroing
     * touches every page. Not registered in {@link MemoryAudit}, and copies never stream from or
     * into it ({@link NonTemporalCopy} does not know it is anonymous).
     *
     * @param alignment a power of two (memory aligned beyond {@link #HUGE_PAGE} comes from {@link Arena#allocate})
     * @param preTouch  fault in every page now (page faults at start-up rather than on first use)
     */
    public static MemorySegment reserve(long bytes, long alignment, Arena arena, boolean preTouch) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("reserved size must be positive, got " + bytes);
        }
        if (alignment <= 0 || Long.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("alignment must be a power of two, got " + alignment);
        }
        if (bytes < HUGE_THRESHOLD || alignment > HUGE_PAGE) {
            return arena.allocate(bytes, alignment);
        }
        MemorySegment mapped = mapForHugePages(bytes, arena).segment();
        if (preTouch) {
            preTouch(mapped);
        }
        return mapped;
    }

    /** Faults in every page of {@code segment} now (writes a non-zero byte, then zero, per 4 KiB). */
    private static void preTouch(MemorySegment segment) {
        for (long p = 0; p < segment.byteSize(); p += PAGE) {
            segment.set(ValueLayout.JAVA_BYTE, p, (byte) 1);
            segment.set(ValueLayout.JAVA_BYTE, p, (byte) 0);
        }
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

    /**
     * True if the region asked the kernel for transparent huge pages and the kernel took the
     * advice (whether it found huge pages to give is the kernel's; {@code AnonHugePages} in
     * {@code /proc/<pid>/smaps} shows it). False for regions below {@link #HUGE_THRESHOLD}.
     */
    public boolean hugePagesAdvised() {
        return hugePagesAdvised;
    }

    public boolean isOpen() {
        return !closed.get();
    }

    /**
     * Frees the memory (once; later calls return at once), after any streaming copy in flight on
     * it has returned.
     *
     * @throws IllegalStateException if the memory is still held by a call after five seconds
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            NonTemporalCopy.unregisterAnonymous(arena.scope());
            closeArena();
            MemoryAudit.unregister(auditId);
        }
    }

    /**
     * Closes the arena, waiting out a streaming copy in flight: {@link NonTemporalCopy} passes the
     * region's segments to its downcall, which holds the arena open for the length of one call
     * (microseconds to a few milliseconds), and closing meanwhile throws. Copies that start after
     * the close fail as any access to closed memory does.
     */
    private void closeArena() {
        long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
        while (true) {
            try {
                arena.close();
                return;
            } catch (IllegalStateException busy) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("region '" + name + "' is still in use after "
                            + CLOSE_WAIT_NANOS / 1_000_000 + " ms: " + busy.getMessage(), busy);
                }
                java.util.concurrent.locks.LockSupport.parkNanos(50_000);
            }
        }
    }

    @Override
    public String toString() {
        return "OffHeapRegion['" + name + "', " + Sizes.format(segment.byteSize()) + (closed.get() ? ", closed]" : "]");
    }
}
