package dev.strata.memory.transfer;

import dev.strata.memory.posix.Libc;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Copies between memory Strata mapped anonymously with non-temporal (streaming) stores: whole
 * cache lines go to memory without being read first and without filling the cache with bytes
 * that an offload copy will not read again soon.
 *
 * <p>Design note. The JDK has no non-temporal store. {@link MemorySegment#copy} takes the JVM's
 * own non-temporal path only for a single copy of at least 2.5 MiB, so a transfer made of pieces
 * (a KV block gathered from 128 layer tensors of 20 KiB each) never reaches it and ran at half to
 * two thirds of one contiguous copy of the same bytes: every destination line is read from memory
 * before it is written. This class therefore carries its own copy loops ({@link #CODE}, listed
 * there): one of x86-64 AVX2 instructions, 128 bytes a pass, and where the processor has
 * AVX-512 one of 64-byte loads and stores, 256 bytes a pass, that also prefetches the source
 * {@value #PREFETCH_DISTANCE} bytes ahead into the second-level cache, continuing into the next
 * piece of a gather rather than past the end of the current one (a KV block's 20 KiB layer pieces
 * lie megabytes apart; the hardware prefetcher starts over at each, and measured on a gather of
 * 128 × 20 KiB pieces the prefetching loop moved 10.9–11.6 GB/s where the same loop without it
 * moved 9.3–9.7 and the JVM's copy of one contiguous block of the same size 12.5–13.3). The
 * AVX-512 loop reads its pieces from a table, so that a whole gather is one call: the arena
 * release after each downcall is an atomic instruction that waits for the call's streaming
 * stores, and with a call per piece that wait took a quarter of a gather's time. The
 * code is placed at class initialisation in a page this class maps read-write, fills, and then
 * maps read-execute (never both), and called through a critical downcall. The loop is checked
 * against {@link MemorySegment#copy} before first use; where anything is missing (another
 * architecture, no AVX2, a kernel or policy that refuses executable memory, a failed check)
 * every call takes {@link MemorySegment#copy} and {@link #unavailableReason()} says why;
 * {@link #routine()} names the loop in use.
 *
 * <p>Which memory. A fault in native code ends the JVM, where {@link MemorySegment#copy} turns it
 * into an {@link InternalError} that a tier reports: a file mapping faults when another process
 * truncates the file (a POOL, a mapped model). So the streaming path is taken only when every
 * segment of a call belongs to a scope registered with {@link #registerAnonymous} (the arenas of
 * {@code OffHeapRegion}s: HOST tiers, the DEVICE tier's CPU backend, staging pools, the serving
 * KV area), the call moves at least {@link #MIN_BYTES}, and the source and destination do not
 * overlap; everything else is {@link MemorySegment#copy}, and so is each piece of
 * {@link #JVM_STREAMING_BYTES} or more, for which the JVM's own copy is faster. The segments are
 * passed to the downcall as segments, so their arenas cannot be closed under a copy in flight
 * ({@code OffHeapRegion.close} waits for the call to return); a table call passes the first
 * piece's segment and the whole's, and takes a table only when every piece shares the first
 * piece's arena. A critical downcall holds off the
 * JVM's safepoints (a collection's start, among others) for its length: a copy call moves less
 * than {@link #JVM_STREAMING_BYTES}, about 0.3 ms at the AVX2 loop's speed; a gather or scatter
 * makes one call per piece, or, where the AVX-512 table loop takes it (pieces of whole passes
 * from one arena, destination pieces on cache lines), one call per {@link #TABLE_CALL_BYTES} of
 * pieces, about 0.35 ms at that loop's speed.
 *
 * <p>Ordering. Non-temporal stores are weakly ordered: each public method ends with an
 * {@code SFENCE}, so the bytes are visible to any thread that later learns of the copy through
 * the usual happens-before edges (a future, a lock, a volatile write).
 *
 * <p>Threads: every method may be called from any thread; the loops keep no state, and each
 * thread fills its own table.
 */
public final class NonTemporalCopy {

    /** Whether copies may take the streaming path ({@code memory.non-temporal-copies}). */
    public enum Mode {
        /** Streaming stores where the routine is available and the memory qualifies (the default). */
        AUTO,
        /** Always {@link MemorySegment#copy}. */
        OFF
    }

    /** Calls moving fewer bytes than this (in all) take {@link MemorySegment#copy}. */
    public static final long MIN_BYTES = 16 * 1024;

    /**
     * Single contiguous copies of this many bytes or more (2.5 MiB) take {@link MemorySegment#copy}:
     * from this length the JVM's own copy switches to non-temporal stores where the processor has
     * AVX-512, and its loop moves about a third more than this class's (12.3–13.5 GB/s against
     * 9.0–9.7 on the machine of BENCHMARKS.md). Where it does not switch, such a copy is what it
     * was before this class existed.
     */
    public static final long JVM_STREAMING_BYTES = 5L << 19;

    private static final long LINE = 64; // bytes: the loop's destination starts on a cache line
    /** Bytes ahead of the loads that the AVX-512 loop prefetches the source (into the second-level cache). */
    static final long PREFETCH_DISTANCE = 6 * 1024;

    /**
     * The code page: two copy loops and a fence, System V calling convention. At
     * {@link #AVX2_OFFSET}, {@code stream(rdi = dst, rsi = src, rdx = length)}, {@code length} a
     * positive multiple of 128 and {@code dst} 32-byte aligned, 128 bytes a pass:
     * <pre>
     * loop: vmovdqu  ymm0, [rsi]        ; four unaligned 32-byte loads
     *       vmovdqu  ymm1, [rsi + 32]
     *       vmovdqu  ymm2, [rsi + 64]
     *       vmovdqu  ymm3, [rsi + 96]
     *       vmovntdq [rdi], ymm0        ; four aligned non-temporal stores
     *       vmovntdq [rdi + 32], ymm1
     *       vmovntdq [rdi + 64], ymm2
     *       vmovntdq [rdi + 96], ymm3
     *       sub      rsi, -128
     *       sub      rdi, -128
     *       add      rdx, -128
     *       jnz      loop
     *       vzeroupper
     *       ret
     * </pre>
     * At {@link #FENCE_OFFSET}, {@code fence()}: {@code sfence; ret}. At {@link #TABLE_OFFSET},
     * the AVX-512 loop, over a table of pieces: {@code table(rdi = table, rsi = count, rdx, rcx)},
     * {@code count >= 1} entries of {@link #TABLE_ENTRY} bytes (source address, destination
     * address, length: a positive multiple of 256, the destination 64-byte aligned); {@code rdx}
     * and {@code rcx} carry the segments whose memory the pieces are in, only so that the downcall
     * keeps their arenas open (the code never reads them). 256 bytes a pass, each prefetching the
     * source {@link #PREFETCH_DISTANCE} bytes ahead into the second-level cache, and near a
     * piece's end as far into the next entry's source (a prefetch never faults):
     * <pre>
     * piece: mov        r10, [rdi]          ; source
     *        mov        r11, [rdi + 8]      ; destination
     *        mov        rdx, [rdi + 16]     ; length
     *        mov        rcx, r10            ; where the source goes on: the next entry's...
     *        cmp        rsi, 1
     *        je         last                ; ...or, after the last, this one's start
     *        mov        rcx, [rdi + 24]
     * last:  lea        r8, [r10 + rdx]     ; end of this piece's source
     * pass:  lea        rax, [r10 + 6144]   ; the prefetch address, PREFETCH_DISTANCE ahead...
     *        mov        r9, rax
     *        sub        r9, r8
     *        add        r9, rcx             ; ...or as far past where the source goes on
     *        cmp        rax, r8
     *        cmovae     rax, r9
     *        prefetcht2 [rax]               ; four lines into the second-level cache
     *        prefetcht2 [rax + 64]
     *        prefetcht2 [rax + 128]
     *        prefetcht2 [rax + 192]
     *        vmovdqu64  zmm0, [r10]         ; four unaligned 64-byte loads
     *        vmovdqu64  zmm1, [r10 + 64]
     *        vmovdqu64  zmm2, [r10 + 128]
     *        vmovdqu64  zmm3, [r10 + 192]
     *        vmovntdq   [r11], zmm0         ; four aligned non-temporal stores
     *        vmovntdq   [r11 + 64], zmm1
     *        vmovntdq   [r11 + 128], zmm2
     *        vmovntdq   [r11 + 192], zmm3
     *        add        r10, 256
     *        add        r11, 256
     *        sub        rdx, 256
     *        jnz        pass
     *        add        rdi, 24
     *        dec        rsi
     *        jnz        piece
     *        vzeroupper
     *        ret
     * </pre>
     * A whole gather or scatter goes to one call (or one per {@link #TABLE_CALL_BYTES}), a single
     * copy to a call with one entry: a downcall that passes segments takes and gives back their
     * arenas with an atomic instruction on each side of the call, and the one after a loop of
     * non-temporal stores waits for all of them to reach memory, so a call per piece made every
     * piece wait for its stores (a quarter of a 128-piece gather's time, measured).
     */
    private static final byte[] CODE = {
        // AVX2_OFFSET
        (byte) 0xC5, (byte) 0xFE, 0x6F, 0x06,
        (byte) 0xC5, (byte) 0xFE, 0x6F, 0x4E, 0x20,
        (byte) 0xC5, (byte) 0xFE, 0x6F, 0x56, 0x40,
        (byte) 0xC5, (byte) 0xFE, 0x6F, 0x5E, 0x60,
        (byte) 0xC5, (byte) 0xFD, (byte) 0xE7, 0x07,
        (byte) 0xC5, (byte) 0xFD, (byte) 0xE7, 0x4F, 0x20,
        (byte) 0xC5, (byte) 0xFD, (byte) 0xE7, 0x57, 0x40,
        (byte) 0xC5, (byte) 0xFD, (byte) 0xE7, 0x5F, 0x60,
        0x48, (byte) 0x83, (byte) 0xEE, (byte) 0x80,
        0x48, (byte) 0x83, (byte) 0xEF, (byte) 0x80,
        0x48, (byte) 0x83, (byte) 0xC2, (byte) 0x80,
        0x75, (byte) 0xCC, // back 52 bytes, to loop
        (byte) 0xC5, (byte) 0xF8, 0x77,
        (byte) 0xC3,
        // FENCE_OFFSET
        0x0F, (byte) 0xAE, (byte) 0xF8,
        (byte) 0xC3,
        // TABLE_OFFSET
        0x4C, (byte) 0x8B, 0x17,
        0x4C, (byte) 0x8B, 0x5F, 0x08,
        0x48, (byte) 0x8B, 0x57, 0x10,
        0x4C, (byte) 0x89, (byte) 0xD1,
        0x48, (byte) 0x83, (byte) 0xFE, 0x01,
        0x74, 0x04,
        0x48, (byte) 0x8B, 0x4F, 0x18,
        0x4D, (byte) 0x8D, 0x04, 0x12,
        0x49, (byte) 0x8D, (byte) 0x82, 0x00, 0x18, 0x00, 0x00,
        0x49, (byte) 0x89, (byte) 0xC1,
        0x4D, 0x29, (byte) 0xC1,
        0x49, 0x01, (byte) 0xC9,
        0x4C, 0x39, (byte) 0xC0,
        0x49, 0x0F, 0x43, (byte) 0xC1,
        0x0F, 0x18, 0x18,
        0x0F, 0x18, 0x58, 0x40,
        0x0F, 0x18, (byte) 0x98, (byte) 0x80, 0x00, 0x00, 0x00,
        0x0F, 0x18, (byte) 0x98, (byte) 0xC0, 0x00, 0x00, 0x00,
        0x62, (byte) 0xD1, (byte) 0xFE, 0x48, 0x6F, 0x02,
        0x62, (byte) 0xD1, (byte) 0xFE, 0x48, 0x6F, 0x4A, 0x01,
        0x62, (byte) 0xD1, (byte) 0xFE, 0x48, 0x6F, 0x52, 0x02,
        0x62, (byte) 0xD1, (byte) 0xFE, 0x48, 0x6F, 0x5A, 0x03,
        0x62, (byte) 0xD1, 0x7D, 0x48, (byte) 0xE7, 0x03,
        0x62, (byte) 0xD1, 0x7D, 0x48, (byte) 0xE7, 0x4B, 0x01,
        0x62, (byte) 0xD1, 0x7D, 0x48, (byte) 0xE7, 0x53, 0x02,
        0x62, (byte) 0xD1, 0x7D, 0x48, (byte) 0xE7, 0x5B, 0x03,
        0x49, (byte) 0x81, (byte) 0xC2, 0x00, 0x01, 0x00, 0x00,
        0x49, (byte) 0x81, (byte) 0xC3, 0x00, 0x01, 0x00, 0x00,
        0x48, (byte) 0x81, (byte) 0xEA, 0x00, 0x01, 0x00, 0x00,
        0x0F, (byte) 0x85, (byte) 0x83, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, // back 125 bytes, to pass
        0x48, (byte) 0x83, (byte) 0xC7, 0x18,
        0x48, (byte) 0xFF, (byte) 0xCE,
        0x0F, (byte) 0x85, 0x5A, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, // back 166 bytes, to piece
        (byte) 0xC5, (byte) 0xF8, 0x77,
        (byte) 0xC3,
    };
    private static final long NARROW_PASS = 128; // bytes moved by one pass of the AVX2 loop
    private static final long WIDE_PASS = 256; // bytes moved by one pass of the AVX-512 loop
    private static final int AVX2_OFFSET = 0;
    private static final int FENCE_OFFSET = 56;
    private static final int TABLE_OFFSET = 60;
    private static final long TABLE_ENTRY = 24; // bytes per piece in a table: source address, destination address, length
    /** Most bytes one call of the table loop moves (more pieces take more calls): a critical call holds off safepoints. */
    static final long TABLE_CALL_BYTES = 4L << 20;
    private static final long CODE_PAGE = 4096;

    private static final MethodHandle AVX2_LOOP; // (dst, src, length) -> void; null when unavailable
    private static final MethodHandle TABLE_LOOP; // (table, count, anchor, anchor) -> void; the AVX-512 loop, null where the processor has no AVX-512 (or it failed its check)
    private static final MethodHandle FENCE; // () -> void; null when unavailable
    private static final String ROUTINE; // the loop in use, named; null when unavailable
    private static final String UNAVAILABLE; // why the loop is not used, or null
    private static final Set<MemorySegment.Scope> ANONYMOUS = ConcurrentHashMap.newKeySet();
    private static final LongAdder STREAMED = new LongAdder(); // bytes moved by the routine
    private static final ThreadLocal<MemorySegment> TABLE = // per thread: [entries * TABLE_ENTRY] the table loop's pieces
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(256 * TABLE_ENTRY, 8));
    private static volatile Mode mode = Mode.AUTO;

    static {
        MethodHandle[] handles = new MethodHandle[3];
        String[] wideReason = new String[1];
        String reason;
        try {
            reason = install(handles, wideReason);
        } catch (Throwable t) {
            reason = "the copy routine could not be installed: " + t;
        }
        AVX2_LOOP = reason == null ? handles[0] : null;
        FENCE = reason == null ? handles[1] : null;
        TABLE_LOOP = reason == null ? handles[2] : null;
        ROUTINE = reason != null ? null : TABLE_LOOP != null
                ? "AVX-512, " + WIDE_PASS + " bytes a pass, prefetching " + PREFETCH_DISTANCE / 1024 + " KiB ahead"
                : "AVX2, " + NARROW_PASS + " bytes a pass" + (wideReason[0] == null ? "" : " (" + wideReason[0] + ")");
        UNAVAILABLE = reason;
    }

    private NonTemporalCopy() {
    }

    /**
     * Maps and checks the code; returns why it cannot be used, or null with {@code handles} set:
     * the AVX2 loop, the fence, and the AVX-512 (table) loop or null ({@code wideReason[0]} then
     * says why, where the processor has AVX-512).
     */
    @SuppressWarnings("restricted") // mmap, mprotect and a downcall into a page this method fills itself
    private static String install(MethodHandle[] handles, String[] wideReason) throws Throwable {
        String arch = System.getProperty("os.arch");
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")
                || !("amd64".equals(arch) || "x86_64".equals(arch))) {
            return "not x86-64 Linux (" + System.getProperty("os.name") + ", " + arch + ")";
        }
        Set<String> flags = cpuFlags();
        if (!flags.contains("avx2")) {
            return "the processor has no AVX2 (no 'avx2' in /proc/cpuinfo)";
        }
        MemorySegment page;
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment state = scratch.allocate(Libc.CALL_STATE);
            page = (MemorySegment) Libc.MMAP.invokeExact(state, MemorySegment.NULL, CODE_PAGE,
                    Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS, -1, 0L);
            if (page.address() == -1L) {
                return "mmap of the code page failed: " + Libc.describe(Libc.errno(state));
            }
            page = page.reinterpret(CODE_PAGE);
            MemorySegment.copy(MemorySegment.ofArray(CODE), 0, page, 0, CODE.length);
            int rc = (int) Libc.MPROTECT.invokeExact(state, page, CODE_PAGE, Libc.PROT_READ | Libc.PROT_EXEC);
            if (rc != 0) {
                String why = Libc.describe(Libc.errno(state));
                Libc.unmap(page.address(), CODE_PAGE);
                return "executable memory was refused (mprotect: " + why + ")";
            }
        }
        // The page lives as long as the process: the handles below call into it.
        Linker linker = Linker.nativeLinker();
        FunctionDescriptor loop = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                ValueLayout.JAVA_LONG);
        handles[0] = linker.downcallHandle(page.asSlice(AVX2_OFFSET), loop, Linker.Option.critical(false));
        handles[1] = linker.downcallHandle(page.asSlice(FENCE_OFFSET), FunctionDescriptor.ofVoid(), Linker.Option.critical(false));
        String failed = selfCheck(handles[0], handles[1]);
        if (failed != null) {
            return failed;
        }
        if (flags.contains("avx512f")) { // the kernel lists it only where it saves the 512-bit registers
            MethodHandle table = linker.downcallHandle(page.asSlice(TABLE_OFFSET), FunctionDescriptor.ofVoid(
                    ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.ADDRESS),
                    Linker.Option.critical(false));
            wideReason[0] = selfCheckTable(table, handles[1]);
            handles[2] = wideReason[0] == null ? table : null;
        }
        return null;
    }

    /** The processor's feature flags as the kernel lists them (features it does not enable are left out); empty if unknown. */
    private static Set<String> cpuFlags() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("flags")) {
                    return Set.copyOf(Arrays.asList(line.substring(line.indexOf(':') + 1).trim().split("\\s+")));
                }
            }
        } catch (IOException | RuntimeException e) {
            return Set.of();
        }
        return Set.of();
    }

    /** Runs the AVX2 loop on a pattern and compares with {@link MemorySegment#copy}; null if they agree. */
    private static String selfCheck(MethodHandle stream, MethodHandle fence) throws Throwable {
        long body = 4 * NARROW_PASS;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(body + 64, 64);
            MemorySegment dst = arena.allocate(body + 2 * LINE, 64);
            for (long i = 0; i < src.byteSize(); i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 131 + 7));
            }
            dst.fill((byte) 0x5A);
            stream.invokeExact(dst.asSlice(LINE, body), src.asSlice(3, body), body); // unaligned source
            fence.invokeExact();
            if (MemorySegment.mismatch(src, 3, 3 + body, dst, LINE, LINE + body) != -1
                    || dst.get(ValueLayout.JAVA_BYTE, LINE - 1) != 0x5A || dst.get(ValueLayout.JAVA_BYTE, LINE + body) != 0x5A) {
                return "the AVX2 copy loop failed its check against MemorySegment.copy";
            }
        }
        return null;
    }

    /** Runs the AVX-512 loop on a table of two pieces of a pattern and compares with {@link MemorySegment#copy}; null if they agree. */
    private static String selfCheckTable(MethodHandle table, MethodHandle fence) throws Throwable {
        long piece = 2 * WIDE_PASS;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(4 * piece, 64);
            MemorySegment dst = arena.allocate(2 * piece + 2 * LINE, 64);
            MemorySegment entries = arena.allocate(2 * TABLE_ENTRY, 8);
            for (long i = 0; i < src.byteSize(); i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 37 + 5));
            }
            dst.fill((byte) 0x5A);
            // the second and fourth piece-sized spans of the source, end to end after one line of the destination
            entries.setAtIndex(ValueLayout.JAVA_LONG, 0, src.address() + piece + 1);
            entries.setAtIndex(ValueLayout.JAVA_LONG, 1, dst.address() + LINE);
            entries.setAtIndex(ValueLayout.JAVA_LONG, 2, piece);
            entries.setAtIndex(ValueLayout.JAVA_LONG, 3, src.address() + 3 * piece - 1);
            entries.setAtIndex(ValueLayout.JAVA_LONG, 4, dst.address() + LINE + piece);
            entries.setAtIndex(ValueLayout.JAVA_LONG, 5, piece);
            table.invokeExact(entries, 2L, src, dst);
            fence.invokeExact();
            if (MemorySegment.mismatch(src, piece + 1, 2 * piece + 1, dst, LINE, LINE + piece) != -1
                    || MemorySegment.mismatch(src, 3 * piece - 1, 4 * piece - 1, dst, LINE + piece, LINE + 2 * piece) != -1
                    || dst.get(ValueLayout.JAVA_BYTE, LINE - 1) != 0x5A || dst.get(ValueLayout.JAVA_BYTE, LINE + 2 * piece) != 0x5A) {
                return "the AVX-512 copy loop failed its check against MemorySegment.copy";
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ settings and state

    /** Sets whether copies may take the streaming path (process-wide; {@code memory.non-temporal-copies}). */
    public static void mode(Mode setting) {
        mode = Objects.requireNonNull(setting, "non-temporal copies setting");
    }

    /** The current {@link #mode(Mode)} setting. */
    public static Mode mode() {
        return mode;
    }

    /** True when the routine is installed and the setting is {@link Mode#AUTO}. */
    public static boolean available() {
        return AVX2_LOOP != null && mode == Mode.AUTO;
    }

    /** The copy loop in use on this machine, described, or null where none is installed. */
    public static String routine() {
        return ROUTINE;
    }

    /** Why the routine is not installed on this machine, or null where it is. */
    public static String unavailableReason() {
        return UNAVAILABLE;
    }

    /** Bytes moved with streaming stores since the process started. */
    public static long bytesStreamed() {
        return STREAMED.sum();
    }

    /**
     * Declares that every segment of {@code scope} is private anonymous memory of this process (no
     * file behind it, so no access can fault once it is mapped): copies from and into it may
     * stream. The owner calls {@link #unregisterAnonymous} before it closes the arena.
     */
    public static void registerAnonymous(MemorySegment.Scope scope) {
        ANONYMOUS.add(Objects.requireNonNull(scope, "scope"));
    }

    /** Withdraws {@link #registerAnonymous}. */
    public static void unregisterAnonymous(MemorySegment.Scope scope) {
        ANONYMOUS.remove(scope);
    }

    /** True if {@code segment} is native memory of a registered anonymous scope. */
    public static boolean qualifies(MemorySegment segment) {
        return segment.isNative() && ANONYMOUS.contains(segment.scope());
    }

    // ------------------------------------------------------------------ copies

    /**
     * Copies {@code length} bytes from {@code src} at {@code srcOffset} to {@code dst} at
     * {@code dstOffset}, as {@link MemorySegment#copy} does (same bounds checks and exceptions),
     * with streaming stores when both segments qualify and {@code length >= MIN_BYTES}.
     */
    public static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        if (length < MIN_BYTES || !available() || !qualifies(src) || !qualifies(dst)) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, length);
            return;
        }
        long streamed;
        try {
            streamed = stream(src.asSlice(srcOffset, length), dst.asSlice(dstOffset, length));
        } finally {
            fence();
        }
        STREAMED.add(streamed);
    }

    /**
     * Copies the concatenation of {@code parts} into {@code into} from its start; returns the bytes
     * copied. Streams when every segment qualifies and the parts hold at least {@link #MIN_BYTES}.
     *
     * @throws IndexOutOfBoundsException if the parts do not fit {@code into} (nothing is copied)
     */
    public static long gather(List<MemorySegment> parts, MemorySegment into) {
        return moveParts(parts, into, true);
    }

    /**
     * Copies {@code from}, from its start, into {@code parts} in order; returns the bytes copied.
     * Streams when every segment qualifies and the parts hold at least {@link #MIN_BYTES}.
     *
     * @throws IndexOutOfBoundsException if the parts are longer than {@code from} (nothing is copied)
     */
    public static long scatter(MemorySegment from, List<MemorySegment> parts) {
        return moveParts(parts, from, false);
    }

    /** A gather of {@code parts} into {@code whole} or, if {@code !gather}, a scatter of {@code whole} over them. */
    private static long moveParts(List<MemorySegment> parts, MemorySegment whole, boolean gather) {
        boolean streaming = streams(parts, whole, gather ? "gather" : "scatter");
        if (streaming && TABLE_LOOP != null) {
            long moved = streamTable(parts, whole, gather);
            if (moved >= 0) {
                STREAMED.add(moved);
                return moved;
            }
        }
        long at = 0;
        long streamed = 0;
        try {
            for (int i = 0, n = parts.size(); i < n; i++) {
                MemorySegment part = parts.get(i);
                long len = part.byteSize();
                if (streaming) {
                    MemorySegment span = whole.asSlice(at, len);
                    streamed += stream(gather ? part : span, gather ? span : part);
                } else if (gather) {
                    MemorySegment.copy(part, 0, whole, at, len);
                } else {
                    MemorySegment.copy(whole, at, part, 0, len);
                }
                at += len;
            }
        } finally {
            if (streaming) {
                fence();
            }
        }
        STREAMED.add(streamed);
        return at;
    }

    /**
     * A gather or scatter through the table loop, one call per {@link #TABLE_CALL_BYTES} of pieces,
     * then a fence; returns the bytes moved, or
     * -1 without moving anything when the call does not fit the table loop: fewer than two parts,
     * parts from more than one arena, a part that is not a whole number of the loop's passes or is
     * {@link #JVM_STREAMING_BYTES} or longer, a destination piece that does not start on a cache
     * line or is read-only, or a part that overlaps {@code whole}.
     */
    private static long streamTable(List<MemorySegment> parts, MemorySegment whole, boolean gather) {
        int n = parts.size();
        if (n < 2 || (gather && whole.isReadOnly())) {
            return -1;
        }
        MemorySegment.Scope scope = parts.get(0).scope();
        long w = whole.address();
        long total = 0;
        for (int i = 0; i < n; i++) {
            MemorySegment part = parts.get(i);
            long len = part.byteSize();
            long p = part.address();
            long dst = gather ? w + total : p;
            if (part.scope() != scope || len == 0 || len % WIDE_PASS != 0 || len >= JVM_STREAMING_BYTES
                    || (dst & (LINE - 1)) != 0 || (!gather && part.isReadOnly())
                    || (p < w + whole.byteSize() && w < p + len)) {
                return -1;
            }
            total += len;
        }
        MemorySegment table = tableScratch(n);
        long at = 0;
        try {
            for (int first = 0; first < n; ) { // calls of at most TABLE_CALL_BYTES (or one piece)
                int count = 0;
                long bytes = 0;
                while (first + count < n) {
                    long len = parts.get(first + count).byteSize();
                    if (count > 0 && bytes + len > TABLE_CALL_BYTES) {
                        break;
                    }
                    long p = parts.get(first + count).address();
                    long entry = 3L * count;
                    table.setAtIndex(ValueLayout.JAVA_LONG, entry, gather ? p : w + at);
                    table.setAtIndex(ValueLayout.JAVA_LONG, entry + 1, gather ? w + at : p);
                    table.setAtIndex(ValueLayout.JAVA_LONG, entry + 2, len);
                    at += len;
                    bytes += len;
                    count++;
                }
                // the parts' and the whole's segments ride along so that their arenas stay open for the call
                TABLE_LOOP.invokeExact(table, (long) count, parts.get(first), whole);
                first += count;
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("non-temporal copy failed", t);
        } finally {
            fence();
        }
        return total;
    }

    /** The calling thread's table of at least {@code entries} entries (native; it grows, never shrinks). */
    private static MemorySegment tableScratch(int entries) {
        MemorySegment table = TABLE.get();
        if (table.byteSize() < entries * TABLE_ENTRY) {
            table = Arena.ofAuto().allocate(Math.max(entries, 2L * table.byteSize() / TABLE_ENTRY) * TABLE_ENTRY, 8);
            TABLE.set(table);
        }
        return table;
    }

    /**
     * Whether a gather or scatter between {@code parts} and {@code whole} takes the streaming path.
     *
     * @throws IndexOutOfBoundsException if the parts hold more bytes than {@code whole} (nothing is copied)
     */
    private static boolean streams(List<MemorySegment> parts, MemorySegment whole, String operation) {
        boolean qualified = available() && qualifies(whole);
        long total = 0;
        MemorySegment.Scope checked = whole.scope();
        for (int i = 0, n = parts.size(); i < n; i++) {
            MemorySegment part = parts.get(i);
            MemorySegment.Scope scope = part.scope();
            if (qualified && scope != checked) { // parts usually share one scope: look it up once
                qualified = qualifies(part);
                checked = scope;
            }
            total += part.byteSize();
        }
        if (total > whole.byteSize()) {
            throw new IndexOutOfBoundsException(operation + " of " + parts.size() + " parts (" + total
                    + " bytes) does not fit a segment of " + whole.byteSize() + " bytes");
        }
        return qualified && total >= MIN_BYTES;
    }

    /**
     * Copies {@code src} into {@code dst} (same length): the bytes up to {@code dst}'s first cache
     * line and those after the last whole pass of the loop ({@link #passBytes}) with
     * {@link MemorySegment#copy}, the rest with the loop in use. Overlapping ranges, a read-only
     * destination and copies of {@link #JVM_STREAMING_BYTES} or more take
     * {@link MemorySegment#copy} whole. No fence.
     *
     * @return the bytes the loop moved
     */
    private static long stream(MemorySegment src, MemorySegment dst) {
        return stream(TABLE_LOOP != null, src, dst);
    }

    /** {@link #stream(MemorySegment, MemorySegment)} with the AVX-512 loop if {@code wide}, else the AVX2 loop. */
    private static long stream(boolean wide, MemorySegment src, MemorySegment dst) {
        long length = dst.byteSize();
        long s = src.address();
        long d = dst.address();
        if (src.byteSize() != length) {
            throw new IllegalArgumentException("stream of " + src.byteSize() + " bytes into " + length);
        }
        if ((s < d + length && d < s + length) || dst.isReadOnly() || length >= JVM_STREAMING_BYTES) {
            // moves overlapping bytes right, refuses a read-only destination, streams long copies itself
            MemorySegment.copy(src, 0, dst, 0, length);
            return 0;
        }
        long head = Math.min((-d) & (LINE - 1), length);
        long body = (length - head) & -(wide ? WIDE_PASS : NARROW_PASS);
        if (head > 0) {
            MemorySegment.copy(src, 0, dst, 0, head);
        }
        if (body > 0) {
            try {
                if (wide) {
                    MemorySegment table = tableScratch(1);
                    table.setAtIndex(ValueLayout.JAVA_LONG, 0, s + head);
                    table.setAtIndex(ValueLayout.JAVA_LONG, 1, d + head);
                    table.setAtIndex(ValueLayout.JAVA_LONG, 2, body);
                    TABLE_LOOP.invokeExact(table, 1L, src, dst);
                } else {
                    AVX2_LOOP.invokeExact(dst.asSlice(head, body), src.asSlice(head, body), body);
                }
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("non-temporal copy failed", t);
            }
        }
        long done = head + body;
        if (done < length) {
            MemorySegment.copy(src, done, dst, done, length - done);
        }
        return body;
    }

    /** Bytes one pass of the loop in use moves; the copy's last bytes short of a pass go through {@link MemorySegment#copy}. For tests. */
    static long passBytes() {
        return TABLE_LOOP != null ? WIDE_PASS : NARROW_PASS;
    }

    /**
     * Copies {@code src} into {@code dst} as {@link #copy} does, with the AVX-512 loop if
     * {@code wide} else the AVX2 loop, whichever loop is in use, the setting and the memory
     * aside; returns the bytes the loop moved. For tests, so that each loop is checked on a
     * machine that uses the other.
     *
     * @throws IllegalStateException if that loop is not installed here
     */
    static long copyWithLoop(boolean wide, MemorySegment src, MemorySegment dst) {
        if ((wide ? TABLE_LOOP : AVX2_LOOP) == null) {
            throw new IllegalStateException((wide ? "the AVX-512" : "the AVX2") + " loop is not installed here");
        }
        try {
            return stream(wide, src, dst);
        } finally {
            fence();
        }
    }

    /** True if the AVX-512 loop is installed here. For tests. */
    static boolean hasWideLoop() {
        return TABLE_LOOP != null;
    }

    private static void fence() {
        try {
            FENCE.invokeExact();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("store fence failed", t);
        }
    }
}
