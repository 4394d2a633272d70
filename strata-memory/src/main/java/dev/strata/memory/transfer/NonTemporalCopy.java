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
 * Copies between memory Strata mapped anonymously, and where a fault guard is installed to and
 * from a POOL's file mapping, with non-temporal (streaming) stores: whole cache lines go to
 * memory without being read first and without filling the cache with bytes that an offload copy
 * will not read again soon.
 *
 * <p>Design note. The JDK has no non-temporal store. {@link MemorySegment#copy} takes the JVM's
 * own non-temporal path only for a single copy of at least 2.5 MiB, so a transfer made of pieces
 * (a KV block gathered from 128 layer tensors of 20 KiB each) never reaches it and ran at half to
 * two thirds of one contiguous copy of the same bytes: every destination line is read from memory
 * before it is written. This class therefore carries its own copy loops ({@link #CODE}, listed
 * there): one of x86-64 AVX2 instructions, 32-byte loads and stores, 128 bytes a pass, and
 * where the processor has AVX-512 one of 64-byte loads and stores, 256 bytes a pass. Each
 * prefetches the source {@value #PREFETCH_DISTANCE} bytes ahead into the second-level cache,
 * continuing into the next piece of a gather rather than past the end of the current one (a KV
 * block's 20 KiB layer pieces lie megabytes apart; the hardware prefetcher starts over at each,
 * and measured on a gather of 128 × 20 KiB pieces the prefetching AVX-512 loop moved 10.9–11.6
 * GB/s where the same loop without it moved 9.3–9.7 and the JVM's copy of one contiguous block of
 * the same size 12.5–13.3). Each reads its pieces from a table, so that a whole gather is one
 * call: the arena release after each downcall is an atomic instruction that waits for the call's
 * streaming stores, and with a call per piece that wait took a quarter of a gather's time. The
 * code is placed at class initialisation in a page this class maps read-write, fills, and then
 * maps read-execute (never both), and called through a critical downcall. Each loop is checked
 * against {@link MemorySegment#copy} before first use, and the widest that passes is used; where anything is missing (another
 * architecture, no AVX2, a kernel or policy that refuses executable memory, a failed check)
 * every call takes {@link MemorySegment#copy} and {@link #unavailableReason()} says why;
 * {@link #routine()} names the loop in use.
 *
 * <p>Which memory. A fault in native code ends the JVM (unless the guard described under "File
 * mappings" catches it), where {@link MemorySegment#copy} turns it into an {@link InternalError}
 * that a tier reports: a file mapping faults when another process truncates the file (a POOL, a
 * mapped model). So {@link #copy}, {@link #gather} and {@link #scatter} take the streaming path
 * only when every segment of a call belongs to a scope registered with {@link #registerAnonymous}
 * (the arenas of {@code OffHeapRegion}s: HOST tiers, the DEVICE tier's CPU backend, staging
 * pools, the serving KV area), the call moves at least {@link #MIN_BYTES}, and the source and destination do not
 * overlap; everything else is {@link MemorySegment#copy}, and so is each piece of
 * {@link #JVM_STREAMING_BYTES} or more, for which the JVM's own copy is faster. The segments are
 * passed to the downcall as segments, so their arenas cannot be closed under a copy in flight
 * ({@code OffHeapRegion.close} waits for the call to return); a table call passes the first
 * piece's segment and the whole's, and takes a table only when every piece shares the first
 * piece's arena. A critical downcall holds off the
 * JVM's safepoints (a collection's start, among others) for its length: a copy call moves less
 * than {@link #JVM_STREAMING_BYTES}, about 0.3 ms at the AVX2 loop's speed; a gather or scatter
 * makes one call per piece, or, where the table takes it (pieces of whole passes from one arena,
 * destination pieces on cache lines), one call per {@link #TABLE_CALL_BYTES} of pieces, about
 * 0.35 ms at the AVX-512 loop's speed; so does a run of copies ({@link #copyPairs}), whose pairs
 * the table takes when every source shares the first taken pair's arena and every destination
 * its destination's.
 *
 * <p>File mappings. Where a loop is installed, this class also installs a guard: a SIGBUS
 * handler, in the code page, placed in front of the JVM's own. A fault whose instruction is in
 * either loop resumes at a recovery that returns 1 from the call, and the Java side
 * throws an {@link InternalError} in the words of the JDK's copy ({@link #FAULT_MESSAGE}), which a
 * tier reports as it reports the JDK's; every other SIGBUS goes, with the same arguments, to the
 * handler the JVM installed (which turns a fault in its own copies into an {@link InternalError}
 * and otherwise ends the process, as before). So a copy into or out of a POOL's file mapping
 * streams too ({@link #gatherSummed}, {@link #scatterSummed}), summing the bytes for the POOL's
 * checksum in the same pass: without it, every write of a KV block into the pool read each
 * destination line first, and a 128-piece gather into the pool ran at 0.63–0.73 of one
 * contiguous copy. The guard relies on the JVM keeping its SIGBUS handler installed as it does
 * (a handler installed after this class's would take the faults, and the JVM's check of its
 * handlers, under {@code -Xcheck:jni}, reports this one as modified); where the JVM's handler
 * cannot be chained, file mappings keep {@link MemorySegment#copy} and {@link #routine()} says so.
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
    /** Bytes ahead of the loads that the loops prefetch the source (into the second-level cache). */
    static final long PREFETCH_DISTANCE = 6 * 1024;

    /**
     * The code page: a fence, two copy loops over a table of pieces and a fault guard, System V
     * calling convention. At {@link #FENCE_OFFSET}, {@code fence()}: {@code sfence; ret}.
     *
     * <p>The loops: {@code int loop(rdi = table, rsi = count, rdx, rcx)}, {@code count >= 1}
     * entries of {@link #TABLE_ENTRY} bytes (source address, destination address, length: a
     * positive multiple of the loop's pass, the destination 64-byte aligned; and where the
     * entry's own sums go, or 0) followed by the {@link #SUMS} bytes of a
     * {@link dev.strata.memory.Checksum64}'s running sums, to which the loop adds every byte it
     * moves. After an entry whose sums have a place, the loop stores the running sums there and
     * starts them again from zero, so that one call of a run of objects gives each object's own
     * sums ({@link #copyPairsSummed}); {@code rdx} and {@code rcx} carry the segments whose memory
     * the pieces are in, only so that the downcall keeps their arenas open (the code never reads
     * them). Each pass prefetches the source {@link #PREFETCH_DISTANCE} bytes ahead into the
     * second-level cache, and near a piece's end as far into the next entry's source (a prefetch
     * never faults). Both return 0. At {@link #WIDE_OFFSET}, the AVX-512 loop, 256 bytes a pass:
     * <pre>
     *        imul       rax, rsi, 32        ; the sums follow the last entry:
     *        vmovdqu64  zmm4, [rdi + rax]   ;   eight word sums (a)
     *        vmovdqu64  zmm5, [rdi + rax + 64] ; and eight sums of a (b)
     * piece: mov        r10, [rdi]          ; source
     *        mov        r11, [rdi + 8]      ; destination
     *        mov        rdx, [rdi + 16]     ; length
     *        mov        rcx, r10            ; where the source goes on: the next entry's...
     *        cmp        rsi, 1
     *        je         last                ; ...or, after the last, this one's start
     *        mov        rcx, [rdi + 32]
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
     *        vpaddq     zmm4, zmm4, zmm0    ; each 64-byte block: a += words; b += a
     *        vpaddq     zmm5, zmm5, zmm4
     *        vpaddq     zmm4, zmm4, zmm1
     *        vpaddq     zmm5, zmm5, zmm4
     *        vpaddq     zmm4, zmm4, zmm2
     *        vpaddq     zmm5, zmm5, zmm4
     *        vpaddq     zmm4, zmm4, zmm3
     *        vpaddq     zmm5, zmm5, zmm4
     *        add        r10, 256
     *        add        r11, 256
     *        sub        rdx, 256
     *        jnz        pass
     *        mov        rax, [rdi + 24]     ; where this entry's own sums go...
     *        test       rax, rax
     *        jz         next                ; ...if anywhere:
     *        vmovdqu64  [rax], zmm4         ;   stored,
     *        vmovdqu64  [rax + 64], zmm5
     *        vpxorq     zmm4, zmm4, zmm4    ;   and started again from zero
     *        vpxorq     zmm5, zmm5, zmm5
     * next:  add        rdi, 32
     *        dec        rsi
     *        jnz        piece
     *        vmovdqu64  [rdi], zmm4         ; rdi is now where the sums are
     *        vmovdqu64  [rdi + 64], zmm5
     *        xor        eax, eax
     *        vzeroupper
     *        ret
     * </pre>
     * At {@link #NARROW_OFFSET}, the AVX2 loop, the same with 32-byte registers, 128 bytes (two
     * blocks) a pass, each block's sums in two halves:
     * <pre>
     *        imul       rax, rsi, 32
     *        vmovdqu    ymm4, [rdi + rax]      ; a, words 0-3
     *        vmovdqu    ymm5, [rdi + rax + 32] ; a, words 4-7
     *        vmovdqu    ymm6, [rdi + rax + 64] ; b, words 0-3
     *        vmovdqu    ymm7, [rdi + rax + 96] ; b, words 4-7
     * piece: (as above, to the prefetch address in rax)
     *        prefetcht2 [rax]               ; two lines
     *        prefetcht2 [rax + 64]
     *        vmovdqu    ymm0, [r10]         ; four unaligned 32-byte loads
     *        vmovdqu    ymm1, [r10 + 32]
     *        vmovdqu    ymm2, [r10 + 64]
     *        vmovdqu    ymm3, [r10 + 96]
     *        vmovntdq   [r11], ymm0         ; four aligned non-temporal stores
     *        vmovntdq   [r11 + 32], ymm1
     *        vmovntdq   [r11 + 64], ymm2
     *        vmovntdq   [r11 + 96], ymm3
     *        vpaddq     ymm4, ymm4, ymm0    ; first block: a += words
     *        vpaddq     ymm5, ymm5, ymm1
     *        vpaddq     ymm6, ymm6, ymm4    ;              b += a
     *        vpaddq     ymm7, ymm7, ymm5
     *        vpaddq     ymm4, ymm4, ymm2    ; second block
     *        vpaddq     ymm5, ymm5, ymm3
     *        vpaddq     ymm6, ymm6, ymm4
     *        vpaddq     ymm7, ymm7, ymm5
     *        sub        r10, -128
     *        sub        r11, -128
     *        add        rdx, -128
     *        jnz        pass
     *        mov        rax, [rdi + 24]     ; this entry's own sums, as above
     *        test       rax, rax
     *        jz         next
     *        vmovdqu    [rax], ymm4
     *        vmovdqu    [rax + 32], ymm5
     *        vmovdqu    [rax + 64], ymm6
     *        vmovdqu    [rax + 96], ymm7
     *        vpxor      ymm4, ymm4, ymm4
     *        vpxor      ymm5, ymm5, ymm5
     *        vpxor      ymm6, ymm6, ymm6
     *        vpxor      ymm7, ymm7, ymm7
     * next:  add        rdi, 32
     *        dec        rsi
     *        jnz        piece
     *        vmovdqu    [rdi], ymm4
     *        vmovdqu    [rdi + 32], ymm5
     *        vmovdqu    [rdi + 64], ymm6
     *        vmovdqu    [rdi + 96], ymm7
     *        xor        eax, eax
     *        vzeroupper
     *        ret
     * </pre>
     * At {@link #RECOVER_OFFSET}, where the guard resumes a call whose load or store faulted:
     * {@code mov eax, 1; vzeroupper; ret} (the loops keep nothing on the stack, so this returns 1
     * to the loop's caller). At {@link #GUARD_OFFSET}, the SIGBUS handler
     * {@code guard(rdi = signal, rsi = siginfo, rdx = ucontext)}: a fault (raised by the kernel,
     * not sent by a process) whose instruction pointer (at byte 168 of the context on x86-64
     * Linux) is in either loop goes on at the recovery; any other signal goes, with the same
     * arguments, to the handler that was installed before, whose address is at
     * {@link #PREVIOUS_OFFSET}:
     * <pre>
     *        cmp        dword [rsi + 8], 0  ; si_code: a signal sent by a process (0 or less) is not a fault
     *        jle        chain
     *        mov        rax, [rdx + 168]    ; where the fault happened
     *        lea        rcx, [rip + narrow] ; the first loop...
     *        cmp        rax, rcx
     *        jb         chain
     *        lea        rcx, [rip + recover] ; ...to the end of the second
     *        cmp        rax, rcx
     *        jae        chain
     *        mov        [rdx + 168], rcx    ; resume at the recovery
     *        ret
     * chain: jmp        [rip + previous]
     * </pre>
     * A whole gather or scatter goes to one call (or one per {@link #TABLE_CALL_BYTES}), a single
     * copy to a call with one entry: a downcall that passes segments takes and gives back their
     * arenas with an atomic instruction on each side of the call, and the one after a loop of
     * non-temporal stores waits for all of them to reach memory, so a call per piece made every
     * piece wait for its stores (a quarter of a 128-piece gather's time, measured). Summing adds
     * eight vector adds to a pass, which waits on memory anyway: the HOST gathers moved as fast
     * with it (BENCHMARKS.md, "Streaming into the pool").
     */
    private static final byte[] CODE = {
        // FENCE_OFFSET
        0x0F, (byte) 0xAE, (byte) 0xF8,
        (byte) 0xC3,
        // NARROW_OFFSET
        0x48, 0x6B, (byte) 0xC6, 0x20,
        (byte) 0xC5, (byte) 0xFE, 0x6F, 0x24, 0x07,
        (byte) 0xC5, (byte) 0xFE, 0x6F, 0x6C, 0x07, 0x20,
        (byte) 0xC5, (byte) 0xFE, 0x6F, 0x74, 0x07, 0x40,
        (byte) 0xC5, (byte) 0xFE, 0x6F, 0x7C, 0x07, 0x60,
        0x4C, (byte) 0x8B, 0x17,
        0x4C, (byte) 0x8B, 0x5F, 0x08,
        0x48, (byte) 0x8B, 0x57, 0x10,
        0x4C, (byte) 0x89, (byte) 0xD1,
        0x48, (byte) 0x83, (byte) 0xFE, 0x01,
        0x74, 0x04, // to last
        0x48, (byte) 0x8B, 0x4F, 0x20,
        0x4D, (byte) 0x8D, 0x04, 0x12,
        0x49, (byte) 0x8D, (byte) 0x82, 0x00, 0x18, 0x00, 0x00,
        0x49, (byte) 0x89, (byte) 0xC1,
        0x4D, 0x29, (byte) 0xC1,
        0x49, 0x01, (byte) 0xC9,
        0x4C, 0x39, (byte) 0xC0,
        0x49, 0x0F, 0x43, (byte) 0xC1,
        0x0F, 0x18, 0x18,
        0x0F, 0x18, 0x58, 0x40,
        (byte) 0xC4, (byte) 0xC1, 0x7E, 0x6F, 0x02,
        (byte) 0xC4, (byte) 0xC1, 0x7E, 0x6F, 0x4A, 0x20,
        (byte) 0xC4, (byte) 0xC1, 0x7E, 0x6F, 0x52, 0x40,
        (byte) 0xC4, (byte) 0xC1, 0x7E, 0x6F, 0x5A, 0x60,
        (byte) 0xC4, (byte) 0xC1, 0x7D, (byte) 0xE7, 0x03,
        (byte) 0xC4, (byte) 0xC1, 0x7D, (byte) 0xE7, 0x4B, 0x20,
        (byte) 0xC4, (byte) 0xC1, 0x7D, (byte) 0xE7, 0x53, 0x40,
        (byte) 0xC4, (byte) 0xC1, 0x7D, (byte) 0xE7, 0x5B, 0x60,
        (byte) 0xC5, (byte) 0xDD, (byte) 0xD4, (byte) 0xE0,
        (byte) 0xC5, (byte) 0xD5, (byte) 0xD4, (byte) 0xE9,
        (byte) 0xC5, (byte) 0xCD, (byte) 0xD4, (byte) 0xF4,
        (byte) 0xC5, (byte) 0xC5, (byte) 0xD4, (byte) 0xFD,
        (byte) 0xC5, (byte) 0xDD, (byte) 0xD4, (byte) 0xE2,
        (byte) 0xC5, (byte) 0xD5, (byte) 0xD4, (byte) 0xEB,
        (byte) 0xC5, (byte) 0xCD, (byte) 0xD4, (byte) 0xF4,
        (byte) 0xC5, (byte) 0xC5, (byte) 0xD4, (byte) 0xFD,
        0x49, (byte) 0x83, (byte) 0xEA, (byte) 0x80,
        0x49, (byte) 0x83, (byte) 0xEB, (byte) 0x80,
        0x48, (byte) 0x83, (byte) 0xC2, (byte) 0x80,
        0x75, (byte) 0x86, // back 122 bytes, to pass
        0x48, (byte) 0x8B, 0x47, 0x18,
        0x48, (byte) 0x85, (byte) 0xC0,
        0x74, 0x23, // to next
        (byte) 0xC5, (byte) 0xFE, 0x7F, 0x20,
        (byte) 0xC5, (byte) 0xFE, 0x7F, 0x68, 0x20,
        (byte) 0xC5, (byte) 0xFE, 0x7F, 0x70, 0x40,
        (byte) 0xC5, (byte) 0xFE, 0x7F, 0x78, 0x60,
        (byte) 0xC5, (byte) 0xDD, (byte) 0xEF, (byte) 0xE4,
        (byte) 0xC5, (byte) 0xD5, (byte) 0xEF, (byte) 0xED,
        (byte) 0xC5, (byte) 0xCD, (byte) 0xEF, (byte) 0xF6,
        (byte) 0xC5, (byte) 0xC5, (byte) 0xEF, (byte) 0xFF,
        0x48, (byte) 0x83, (byte) 0xC7, 0x20,
        0x48, (byte) 0xFF, (byte) 0xCE,
        0x0F, (byte) 0x85, 0x31, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, // back 207 bytes, to piece
        (byte) 0xC5, (byte) 0xFE, 0x7F, 0x27,
        (byte) 0xC5, (byte) 0xFE, 0x7F, 0x6F, 0x20,
        (byte) 0xC5, (byte) 0xFE, 0x7F, 0x77, 0x40,
        (byte) 0xC5, (byte) 0xFE, 0x7F, 0x7F, 0x60,
        0x31, (byte) 0xC0,
        (byte) 0xC5, (byte) 0xF8, 0x77,
        (byte) 0xC3,
        // WIDE_OFFSET
        0x48, 0x6B, (byte) 0xC6, 0x20,
        0x62, (byte) 0xF1, (byte) 0xFE, 0x48, 0x6F, 0x24, 0x07,
        0x62, (byte) 0xF1, (byte) 0xFE, 0x48, 0x6F, 0x6C, 0x07,
        0x01,
        0x4C, (byte) 0x8B, 0x17,
        0x4C, (byte) 0x8B, 0x5F, 0x08,
        0x48, (byte) 0x8B, 0x57, 0x10,
        0x4C, (byte) 0x89, (byte) 0xD1,
        0x48, (byte) 0x83, (byte) 0xFE, 0x01,
        0x74, 0x04, // to last
        0x48, (byte) 0x8B, 0x4F, 0x20,
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
        0x62, (byte) 0xF1, (byte) 0xDD, 0x48, (byte) 0xD4, (byte) 0xE0,
        0x62, (byte) 0xF1, (byte) 0xD5, 0x48, (byte) 0xD4, (byte) 0xEC,
        0x62, (byte) 0xF1, (byte) 0xDD, 0x48, (byte) 0xD4, (byte) 0xE1,
        0x62, (byte) 0xF1, (byte) 0xD5, 0x48, (byte) 0xD4, (byte) 0xEC,
        0x62, (byte) 0xF1, (byte) 0xDD, 0x48, (byte) 0xD4, (byte) 0xE2,
        0x62, (byte) 0xF1, (byte) 0xD5, 0x48, (byte) 0xD4, (byte) 0xEC,
        0x62, (byte) 0xF1, (byte) 0xDD, 0x48, (byte) 0xD4, (byte) 0xE3,
        0x62, (byte) 0xF1, (byte) 0xD5, 0x48, (byte) 0xD4, (byte) 0xEC,
        0x49, (byte) 0x81, (byte) 0xC2, 0x00, 0x01, 0x00, 0x00,
        0x49, (byte) 0x81, (byte) 0xC3, 0x00, 0x01, 0x00, 0x00,
        0x48, (byte) 0x81, (byte) 0xEA, 0x00, 0x01, 0x00, 0x00,
        0x0F, (byte) 0x85, 0x53, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, // back 173 bytes, to pass
        0x48, (byte) 0x8B, 0x47, 0x18,
        0x48, (byte) 0x85, (byte) 0xC0,
        0x74, 0x19, // to next
        0x62, (byte) 0xF1, (byte) 0xFE, 0x48, 0x7F, 0x20,
        0x62, (byte) 0xF1, (byte) 0xFE, 0x48, 0x7F, 0x68, 0x01,
        0x62, (byte) 0xF1, (byte) 0xDD, 0x48, (byte) 0xEF, (byte) 0xE4,
        0x62, (byte) 0xF1, (byte) 0xD5, 0x48, (byte) 0xEF, (byte) 0xED,
        0x48, (byte) 0x83, (byte) 0xC7, 0x20,
        0x48, (byte) 0xFF, (byte) 0xCE,
        0x0F, (byte) 0x85, 0x08, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, // back 248 bytes, to piece
        0x62, (byte) 0xF1, (byte) 0xFE, 0x48, 0x7F, 0x27,
        0x62, (byte) 0xF1, (byte) 0xFE, 0x48, 0x7F, 0x6F, 0x01,
        0x31, (byte) 0xC0,
        (byte) 0xC5, (byte) 0xF8, 0x77,
        (byte) 0xC3,
        // RECOVER_OFFSET
        (byte) 0xB8, 0x01, 0x00, 0x00, 0x00,
        (byte) 0xC5, (byte) 0xF8, 0x77,
        (byte) 0xC3,
        // GUARD_OFFSET
        (byte) 0x83, 0x7E, 0x08, 0x00,
        0x7E, 0x27, // to chain
        0x48, (byte) 0x8B, (byte) 0x82, (byte) 0xA8, 0x00, 0x00, 0x00,
        0x48, (byte) 0x8D, 0x0D, (byte) 0xC2, (byte) 0xFD, (byte) 0xFF, (byte) 0xFF,
        0x48, 0x39, (byte) 0xC8,
        0x72, 0x14, // to chain
        0x48, (byte) 0x8D, 0x0D, (byte) 0xD7, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF,
        0x48, 0x39, (byte) 0xC8,
        0x73, 0x08, // to chain
        0x48, (byte) 0x89, (byte) 0x8A, (byte) 0xA8, 0x00, 0x00, 0x00,
        (byte) 0xC3,
        (byte) 0xFF, 0x25, 0x07, 0x00, 0x00, 0x00,
        0x0F, 0x1F, (byte) 0x80, 0x00, 0x00, 0x00, 0x00, // seven bytes of padding: the slot is 8-byte aligned
        // PREVIOUS_OFFSET
        0, 0, 0, 0, 0, 0, 0, 0, // the previous SIGBUS handler's address, written at install
    };
    private static final long NARROW_PASS = 128; // bytes moved by one pass of the AVX2 loop
    private static final long WIDE_PASS = 256; // bytes moved by one pass of the AVX-512 loop
    private static final int FENCE_OFFSET = 0;
    private static final int NARROW_OFFSET = 4;
    private static final int WIDE_OFFSET = 263;
    private static final int RECOVER_OFFSET = 549;
    private static final int GUARD_OFFSET = 558;
    private static final int PREVIOUS_OFFSET = 616;
    /** Bytes after a table's entries: the sums a Checksum64 keeps, eight 64-bit word sums then eight sums of those. */
    private static final long SUMS = 128;
    private static final int SUM_WORDS = 8; // longs in each of the two sums
    private static final int SIGBUS = 7; // x86-64 Linux
    private static final int SA_SIGINFO = 4;
    private static final long SIGACTION_BYTES = 152; // struct sigaction, x86-64 Linux: handler 8, mask 128, flags 4 (+4), restorer 8
    private static final long SIGACTION_FLAGS = 136; // offset of the flags
    /** What a fault under the guard throws: the words the JDK uses for a fault in an unsafe copy, which tiers recognise. */
    static final String FAULT_MESSAGE = "a fault occurred in an unsafe memory access operation: a streaming copy met a page"
            + " that its file no longer backs";
    private static final long TABLE_ENTRY = 32; // bytes per piece in a table: source address, destination address, length, own sums' address or 0
    /** Most bytes one call of a loop moves (more pieces take more calls): a critical call holds off safepoints. */
    static final long TABLE_CALL_BYTES = 4L << 20;
    private static final long CODE_PAGE = 4096;

    // the loops: (table, count, anchor, anchor) -> 0, or 1 after a fault the guard caught
    private static final MethodHandle NARROW_LOOP; // the AVX2 loop; null when unavailable
    private static final MethodHandle WIDE_LOOP; // the AVX-512 loop; null where the processor has no AVX-512 (or it failed its check)
    private static final MethodHandle LOOP; // the loop in use: the AVX-512 loop where installed, else the AVX2 loop, else null
    private static final boolean GUARDED; // the SIGBUS guard is installed: the loops may touch file mappings
    private static final String UNGUARDED; // why the guard is not installed (where a loop is), or null
    private static final MethodHandle FENCE; // () -> void; null when unavailable
    private static final String ROUTINE; // the loop in use, named; null when unavailable
    private static final String UNAVAILABLE; // why the loop is not used, or null
    private static final Set<MemorySegment.Scope> ANONYMOUS = ConcurrentHashMap.newKeySet();
    private static final LongAdder STREAMED = new LongAdder(); // bytes moved by the routine
    private static final ThreadLocal<MemorySegment> TABLE = // per thread: [entries * TABLE_ENTRY + SUMS] a loop's pieces, then sums
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(256 * TABLE_ENTRY + SUMS, 8));
    private static final ThreadLocal<MemorySegment> OWN_SUMS = // per thread: [objects * SUMS] each object's own sums from a call
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(64 * SUMS, 8));
    private static volatile Mode mode = Mode.AUTO;

    static {
        MethodHandle[] handles = new MethodHandle[3];
        String[] reasons = new String[2]; // why not the AVX-512 loop; why not the guard
        String reason;
        try {
            reason = install(handles, reasons);
        } catch (Throwable t) {
            reason = "the copy routine could not be installed: " + t;
        }
        NARROW_LOOP = reason == null ? handles[0] : null;
        FENCE = reason == null ? handles[1] : null;
        WIDE_LOOP = reason == null ? handles[2] : null;
        LOOP = WIDE_LOOP != null ? WIDE_LOOP : NARROW_LOOP;
        GUARDED = LOOP != null && reasons[1] == null;
        UNGUARDED = LOOP == null ? null : reasons[1];
        ROUTINE = LOOP == null ? null : (WIDE_LOOP != null ? "AVX-512, " + WIDE_PASS : "AVX2, " + NARROW_PASS)
                + " bytes a pass, prefetching " + PREFETCH_DISTANCE / 1024 + " KiB ahead"
                + (GUARDED ? ", into file mappings too (faults guarded)" : ", not into file mappings (" + UNGUARDED + ")")
                + (reasons[0] == null ? "" : " (" + reasons[0] + ")");
        UNAVAILABLE = reason;
    }

    private NonTemporalCopy() {
    }

    /**
     * Maps and checks the code; returns why it cannot be used, or null with {@code handles} set:
     * the AVX2 loop, the fence, and the AVX-512 loop or null ({@code reasons[0]} then says why,
     * where the processor has AVX-512). Installs the SIGBUS guard in front of the handler the JVM
     * installed, or says in {@code reasons[1]} why not.
     */
    @SuppressWarnings("restricted") // mmap, mprotect, sigaction and downcalls into a page this method fills itself
    private static String install(MethodHandle[] handles, String[] reasons) throws Throwable {
        String arch = System.getProperty("os.arch");
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")
                || !("amd64".equals(arch) || "x86_64".equals(arch))) {
            return "not x86-64 Linux (" + System.getProperty("os.name") + ", " + arch + ")";
        }
        Set<String> flags = cpuFlags();
        if (!flags.contains("avx2")) {
            return "the processor has no AVX2 (no 'avx2' in /proc/cpuinfo)";
        }
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment state = scratch.allocate(Libc.CALL_STATE);
            MemorySegment previous = scratch.allocate(SIGACTION_BYTES, 8);
            int got = (int) Libc.SIGACTION.invokeExact(state, SIGBUS, MemorySegment.NULL, previous);
            long previousHandler = previous.get(ValueLayout.JAVA_LONG, 0);
            reasons[1] = got != 0 ? "sigaction: " + Libc.describe(Libc.errno(state))
                    : (previous.get(ValueLayout.JAVA_INT, SIGACTION_FLAGS) & SA_SIGINFO) == 0 || previousHandler == 0 || previousHandler == 1
                    ? "no SIGBUS handler of the JVM to hand other faults to" : null;
            MemorySegment page = (MemorySegment) Libc.MMAP.invokeExact(state, MemorySegment.NULL, CODE_PAGE,
                    Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS, -1, 0L);
            if (page.address() == -1L) {
                return "mmap of the code page failed: " + Libc.describe(Libc.errno(state));
            }
            page = page.reinterpret(CODE_PAGE);
            MemorySegment.copy(MemorySegment.ofArray(CODE), 0, page, 0, CODE.length);
            page.set(ValueLayout.JAVA_LONG, PREVIOUS_OFFSET, previousHandler); // where the guard sends other faults
            int rc = (int) Libc.MPROTECT.invokeExact(state, page, CODE_PAGE, Libc.PROT_READ | Libc.PROT_EXEC);
            if (rc != 0) {
                String why = Libc.describe(Libc.errno(state));
                Libc.unmap(page.address(), CODE_PAGE);
                return "executable memory was refused (mprotect: " + why + ")";
            }
            // The page lives as long as the process: the handles below and the guard call into it.
            Linker linker = Linker.nativeLinker();
            FunctionDescriptor loop = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.ADDRESS, ValueLayout.ADDRESS);
            handles[0] = linker.downcallHandle(page.asSlice(NARROW_OFFSET), loop, Linker.Option.critical(false));
            handles[1] = linker.downcallHandle(page.asSlice(FENCE_OFFSET), FunctionDescriptor.ofVoid(), Linker.Option.critical(false));
            String failed = selfCheck(handles[0], NARROW_PASS, handles[1]);
            if (failed != null) {
                return "the AVX2 " + failed;
            }
            if (flags.contains("avx512f")) { // the kernel lists it only where it saves the 512-bit registers
                MethodHandle wide = linker.downcallHandle(page.asSlice(WIDE_OFFSET), loop, Linker.Option.critical(false));
                failed = selfCheck(wide, WIDE_PASS, handles[1]);
                reasons[0] = failed == null ? null : "the AVX-512 " + failed;
                handles[2] = failed == null ? wide : null;
            }
            if (reasons[1] == null) {
                MemorySegment guard = scratch.allocate(SIGACTION_BYTES, 8).copyFrom(previous); // same mask and flags
                guard.set(ValueLayout.JAVA_LONG, 0, page.address() + GUARD_OFFSET);
                if ((int) Libc.SIGACTION.invokeExact(state, SIGBUS, guard, MemorySegment.NULL) != 0) {
                    reasons[1] = "sigaction: " + Libc.describe(Libc.errno(state));
                }
            }
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

    /**
     * Runs a loop of {@code pass} bytes a pass on a table of two pieces of a pattern, the first with
     * a place for its own sums, and compares with {@link MemorySegment#copy} and with the sums
     * computed here (the first piece's added to the table's starting sums, the second's from zero);
     * null if they agree.
     */
    private static String selfCheck(MethodHandle table, long pass, MethodHandle fence) throws Throwable {
        long piece = 2 * pass;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(4 * piece, 64);
            MemorySegment dst = arena.allocate(2 * piece + 2 * LINE, 64);
            MemorySegment entries = arena.allocate(2 * TABLE_ENTRY + SUMS, 8);
            MemorySegment own = arena.allocate(SUMS, 8); // the first piece's sums
            for (long i = 0; i < src.byteSize(); i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 37 + 5));
            }
            dst.fill((byte) 0x5A);
            // the second and fourth piece-sized spans of the source, end to end after one line of the destination
            setEntry(entries, 0, src.address() + piece + 1, dst.address() + LINE, piece, own.address());
            setEntry(entries, 1, src.address() + 3 * piece - 1, dst.address() + LINE + piece, piece, 0);
            long[] first = new long[2 * SUM_WORDS]; // a then b, from values of their own
            long[] second = new long[2 * SUM_WORDS]; // from zero, after the first piece's were stored
            for (int j = 0; j < first.length; j++) {
                first[j] = 0x0123_4567_89AB_CDEFL * (j + 1);
                entries.set(ValueLayout.JAVA_LONG, 2 * TABLE_ENTRY + 8L * j, first[j]);
            }
            int status = (int) table.invokeExact(entries, 2L, src, dst);
            fence.invokeExact();
            for (long block = 0; block < 2 * piece; block += 64) { // the moved bytes, summed as the loop should
                long[] sums = block < piece ? first : second;
                for (int j = 0; j < SUM_WORDS; j++) {
                    sums[j] += dst.get(ValueLayout.JAVA_LONG_UNALIGNED, LINE + block + 8L * j);
                    sums[SUM_WORDS + j] += sums[j];
                }
            }
            for (int j = 0; j < first.length; j++) {
                if (own.getAtIndex(ValueLayout.JAVA_LONG, j) != first[j]
                        || entries.get(ValueLayout.JAVA_LONG, 2 * TABLE_ENTRY + 8L * j) != second[j]) {
                    status = 2;
                }
            }
            if (status != 0 || MemorySegment.mismatch(src, piece + 1, 2 * piece + 1, dst, LINE, LINE + piece) != -1
                    || MemorySegment.mismatch(src, 3 * piece - 1, 4 * piece - 1, dst, LINE + piece, LINE + 2 * piece) != -1
                    || dst.get(ValueLayout.JAVA_BYTE, LINE - 1) != 0x5A || dst.get(ValueLayout.JAVA_BYTE, LINE + 2 * piece) != 0x5A) {
                return "copy loop failed its check against MemorySegment.copy";
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
        return LOOP != null && mode == Mode.AUTO;
    }

    /** The copy loop in use on this machine, described, or null where none is installed. */
    public static String routine() {
        return ROUTINE;
    }

    /**
     * True if the SIGBUS guard is installed in front of the JVM's handler, so that the AVX-512
     * loop may read and write file mappings ({@link #gatherSummed}, {@link #scatterSummed}).
     */
    public static boolean guardsMappings() {
        return GUARDED;
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
     * with streaming stores when both segments qualify and {@code length >= MIN_BYTES}. A copy of
     * {@link #JVM_STREAMING_BYTES} or more is the JVM's own, with no fence of this class after it
     * (the JVM keeps its copies ordered as it does for any other): on a 9 MiB expert copied by the
     * expert pager, that fence, which waits for the copy's stores to reach memory, added 5–10 µs
     * to each miss.
     */
    public static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        if (length < MIN_BYTES || length >= JVM_STREAMING_BYTES || !available() || !qualifies(src) || !qualifies(dst)) {
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
     * Copies each {@code sources[i]} into {@code destinations[i]} (the same length, from each
     * segment's start), for {@code i < count}, as {@link #copy} would one by one, then one fence:
     * the pairs the loop can take (every source of the first such pair's arena, every destination
     * of its destination's, whole passes on a cache line, no overlap, no pair of
     * {@link #JVM_STREAMING_BYTES} or more) go through it in calls of up to
     * {@link #TABLE_CALL_BYTES}, every other pair as {@link #copy} takes it, after the pairs
     * before it. For a run of small objects (KV blocks of 16 KiB) this is one downcall and one
     * fence where {@link #copy} pays one of each per object.
     *
     * @throws IllegalArgumentException if a pair's lengths differ (nothing is copied)
     */
    public static void copyPairs(MemorySegment[] sources, MemorySegment[] destinations, int count) {
        requireSameLengths(sources, destinations, count);
        boolean streaming = available() && count > 0;
        MemorySegment.Scope srcScope = null;
        MemorySegment.Scope dstScope = null;
        MemorySegment anchor = null;
        MemorySegment whole = null;
        long pass = streaming ? passBytes() : 0;
        MemorySegment table = streaming ? tableScratch(Math.min(count, 1024)) : null;
        long room = streaming ? (table.byteSize() - SUMS) / TABLE_ENTRY : 0; // entries the table holds
        int entries = 0;
        long bytes = 0;
        long streamed = 0;
        try {
            for (int i = 0; i < count; i++) {
                MemorySegment s = sources[i];
                MemorySegment d = destinations[i];
                long len = d.byteSize();
                boolean takes = streaming && len < JVM_STREAMING_BYTES && loopTakes(s, d, pass);
                if (takes && anchor == null) {
                    takes = qualifies(s) && qualifies(d);
                    if (takes) {
                        anchor = s;
                        whole = d;
                        srcScope = s.scope();
                        dstScope = d.scope();
                    }
                } else if (takes) {
                    takes = s.scope() == srcScope && d.scope() == dstScope;
                }
                if (entries > 0 && (!takes || entries == room || bytes + len > TABLE_CALL_BYTES)) {
                    // a full call; or a pair the loop does not take, after the pairs before it (pairs that
                    // overlap copy in order, and copy() fills this thread's table)
                    callLoop(LOOP, table, entries, anchor, whole, "copy");
                    streamed += bytes;
                    entries = 0;
                    bytes = 0;
                }
                if (!takes) {
                    copy(s, 0, d, 0, len);
                    continue;
                }
                setEntry(table, entries, s.address(), d.address(), len, 0);
                entries++;
                bytes += len;
            }
            if (entries > 0) {
                callLoop(LOOP, table, entries, anchor, whole, "copy");
                streamed += bytes;
            }
        } finally {
            if (streaming) {
                fence();
            }
        }
        STREAMED.add(streamed);
    }

    /**
     * Copies each {@code sources[i]} into {@code destinations[i]} (the same length, from each
     * segment's start), for {@code i < count}, through the guarded loop in use, one side of each
     * pair a file mapping (a POOL's) or both private native memory, and stores each pair's own
     * {@link dev.strata.memory.Checksum64} sums (eight word sums, then eight sums of those, from
     * zero) at {@code sums[16 * i]}; then one fence. The pairs go to one call per
     * {@link #TABLE_CALL_BYTES} (a longer pair in several entries, its sums carried from one to the
     * next), so a run of small objects written to or read from the pool pays one downcall and one
     * wait for its streaming stores where an object each pays one of each. Returns false without
     * copying or summing anything when the run does not qualify: no guarded loop here, the setting
     * {@link Mode#OFF}, no pairs, a source not native memory of the first source's arena or a
     * destination not of the first destination's, a pair not a positive whole number of passes
     * ({@link #passBytes}), a destination off a cache line or read-only, a pair whose sides
     * overlap. The caller then copies each pair another way.
     *
     * @throws IllegalArgumentException if a pair's lengths differ, or {@code sums} holds fewer than
     *                                  {@code 16 * count} words (nothing is copied)
     * @throws InternalError            if a page of a mapping faulted (the file behind it was
     *                                  truncated): the {@link #FAULT_MESSAGE} words; pairs before
     *                                  the fault may have been copied, and no sums are to be used
     */
    public static boolean copyPairsSummed(MemorySegment[] sources, MemorySegment[] destinations, int count, long[] sums) {
        return pairsSummed(LOOP, sources, destinations, count, sums);
    }

    /**
     * {@link #copyPairsSummed} with the AVX-512 loop if {@code wide} else the AVX2 loop, whichever
     * loop is in use. For tests.
     *
     * @throws IllegalStateException if that loop is not installed here
     */
    static boolean copyPairsSummedWithLoop(boolean wide, MemorySegment[] sources, MemorySegment[] destinations, int count,
                                           long[] sums) {
        return pairsSummed(loop(wide), sources, destinations, count, sums);
    }

    private static boolean pairsSummed(MethodHandle loop, MemorySegment[] sources, MemorySegment[] destinations, int count,
                                       long[] sums) {
        if (sums.length < 2L * SUM_WORDS * count) {
            throw new IllegalArgumentException("sums of " + sums.length + " words for " + count + " pairs (" + 2 * SUM_WORDS
                    + " each)");
        }
        requireSameLengths(sources, destinations, count);
        if (!GUARDED || mode != Mode.AUTO || count == 0 || !sources[0].isNative() || !destinations[0].isNative()) {
            return false;
        }
        long pass = passOf(loop);
        MemorySegment.Scope srcScope = sources[0].scope();
        MemorySegment.Scope dstScope = destinations[0].scope();
        int entriesNeeded = 0;
        for (int i = 0; i < count; i++) {
            MemorySegment s = sources[i];
            MemorySegment d = destinations[i];
            if (s.scope() != srcScope || d.scope() != dstScope || !loopTakes(s, d, pass)) {
                return false;
            }
            entriesNeeded += (int) ((d.byteSize() + TABLE_CALL_BYTES - 1) / TABLE_CALL_BYTES);
        }
        int room = Math.min(entriesNeeded, 1024); // entries a call holds
        MemorySegment table = tableScratch(room);
        MemorySegment own = ownSumsScratch(room); // [room * SUMS] each call's objects' own sums
        long[] carried = new long[2 * SUM_WORDS]; // the sums of a pair split across calls, from call to call
        long streamed = 0;
        try {
            int pair = 0;
            long into = 0; // bytes of that pair already in an entry
            while (pair < count) {
                int first = pair; // the first pair whose sums this call stores
                int entries = 0;
                int stored = 0; // pairs ended in this call, whose sums it stores in own
                long bytes = 0;
                while (pair < count && entries < room && bytes < TABLE_CALL_BYTES) {
                    MemorySegment s = sources[pair];
                    MemorySegment d = destinations[pair];
                    long len = Math.min(d.byteSize() - into, TABLE_CALL_BYTES - bytes);
                    boolean ends = into + len == d.byteSize();
                    setEntry(table, entries++, s.address() + into, d.address() + into, len,
                            ends ? own.address() + stored * SUMS : 0);
                    bytes += len;
                    into += len;
                    if (ends) {
                        stored++;
                        pair++;
                        into = 0;
                    }
                }
                long at = entries * TABLE_ENTRY;
                MemorySegment.copy(carried, 0, table, ValueLayout.JAVA_LONG, at, carried.length);
                callLoop(loop, table, entries, sources[first], destinations[first], "run of copies");
                MemorySegment.copy(table, ValueLayout.JAVA_LONG, at, carried, 0, carried.length);
                MemorySegment.copy(own, ValueLayout.JAVA_LONG, 0, sums, first * 2 * SUM_WORDS, stored * 2 * SUM_WORDS);
                streamed += bytes;
            }
        } finally {
            fence();
        }
        STREAMED.add(streamed);
        return true;
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
        if (streaming) {
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
     * A gather or scatter through the loop in use ({@link #runTable}); returns the bytes moved, or
     * -1 without moving anything when the call does not fit a table: fewer than two parts,
     * or parts the loop cannot take ({@link #fitsTable}) or of {@link #JVM_STREAMING_BYTES} or more.
     */
    private static long streamTable(List<MemorySegment> parts, MemorySegment whole, boolean gather) {
        long total = parts.size() < 2 ? -1 : fitsTable(parts, whole, gather, JVM_STREAMING_BYTES, passBytes());
        if (total >= 0) {
            runTable(LOOP, parts, whole, gather, null, null);
        }
        return total;
    }

    /**
     * Copies the concatenation of {@code parts} into the file mapping {@code mapped} from its
     * start, and adds the bytes to the running sums of a {@code Checksum64} ({@code a} and
     * {@code b}, eight words each, updated in place), in one pass of the loop in use under the
     * fault guard, then a fence. Returns the bytes copied, or -1 without copying or summing
     * anything when the call does not qualify: no guarded loop here, the setting
     * {@link Mode#OFF}, fewer than {@link #MIN_BYTES}, parts that are not native memory of one
     * arena, not whole passes of the loop ({@link #passBytes}) or overlap {@code mapped},
     * destination pieces off a cache line, or more bytes than {@code mapped} holds. The caller
     * then copies another way.
     *
     * @throws InternalError if a page of a segment faulted (the file behind a mapping was
     *                       truncated): the {@link #FAULT_MESSAGE} words of the JDK's own copy; bytes before the
     *                       fault may have been copied, and the sums are not to be used
     */
    public static long gatherSummed(List<MemorySegment> parts, MemorySegment mapped, long[] a, long[] b) {
        return moveSummed(LOOP, parts, mapped, true, a, b);
    }

    /**
     * Copies the file mapping {@code mapped}, from its start, into {@code parts} in order, and adds
     * the bytes to the running sums {@code a} and {@code b}, as {@link #gatherSummed} does the
     * other way (same conditions, result and faults).
     */
    public static long scatterSummed(MemorySegment mapped, List<MemorySegment> parts, long[] a, long[] b) {
        return moveSummed(LOOP, parts, mapped, false, a, b);
    }

    private static long moveSummed(MethodHandle loop, List<MemorySegment> parts, MemorySegment mapped, boolean gather,
                                   long[] a, long[] b) {
        if (a.length != SUM_WORDS || b.length != SUM_WORDS) {
            throw new IllegalArgumentException("sums of " + a.length + " and " + b.length + " words, not " + SUM_WORDS);
        }
        if (!GUARDED || mode != Mode.AUTO || parts.isEmpty() || !mapped.isNative() || !parts.get(0).isNative()) {
            return -1;
        }
        long total = fitsTable(parts, mapped, gather, Long.MAX_VALUE, passOf(loop));
        if (total < MIN_BYTES || total > mapped.byteSize()) {
            return -1;
        }
        runTable(loop, parts, mapped, gather, a, b);
        STREAMED.add(total);
        return total;
    }

    /**
     * The bytes in {@code parts} if a loop of {@code pass} bytes a pass can move them to or from
     * {@code whole}, else -1: every part of the first part's arena, a positive whole number of
     * passes and shorter than {@code pieceLimit}, not overlapping {@code whole}; every destination
     * piece on a cache line and writable.
     */
    private static long fitsTable(List<MemorySegment> parts, MemorySegment whole, boolean gather, long pieceLimit,
                                  long pass) {
        if (gather && whole.isReadOnly()) {
            return -1;
        }
        MemorySegment.Scope scope = parts.get(0).scope();
        long w = whole.address();
        long total = 0;
        for (int i = 0, n = parts.size(); i < n; i++) {
            MemorySegment part = parts.get(i);
            long len = part.byteSize();
            long p = part.address();
            long dst = gather ? w + total : p;
            if (part.scope() != scope || len == 0 || len % pass != 0 || len >= pieceLimit
                    || (dst & (LINE - 1)) != 0 || (!gather && part.isReadOnly())
                    || (p < w + whole.byteSize() && w < p + len)) {
                return -1;
            }
            total += len;
        }
        return total;
    }

    /**
     * Moves {@code parts} (checked by {@link #fitsTable}) into {@code whole} from its start, or
     * the reverse if {@code !gather}, through {@code loop}: entries of at most
     * {@link #TABLE_CALL_BYTES}, one call per {@link #TABLE_CALL_BYTES}, then a fence. Adds the
     * bytes to the sums {@code a} and {@code b} unless they are null.
     *
     * @throws InternalError if a load or store faulted and the guard resumed the loop at its recovery
     */
    private static void runTable(MethodHandle loop, List<MemorySegment> parts, MemorySegment whole, boolean gather,
                                 long[] a, long[] b) {
        int n = parts.size();
        MemorySegment table = tableScratch(n); // a call's entries: its parts, the first and last perhaps in part
        long w = whole.address();
        long at = 0; // bytes of whole moved
        try {
            int next = 0; // the part the next entry starts in
            long into = 0; // bytes of that part already in an entry
            while (next < n) {
                MemorySegment anchor = parts.get(next);
                int count = 0;
                long bytes = 0;
                while (next < n && bytes < TABLE_CALL_BYTES) {
                    MemorySegment part = parts.get(next);
                    long len = Math.min(part.byteSize() - into, TABLE_CALL_BYTES - bytes);
                    long p = part.address() + into;
                    setEntry(table, count, gather ? p : w + at, gather ? w + at : p, len, 0);
                    count++;
                    bytes += len;
                    at += len;
                    into += len;
                    if (into == part.byteSize()) {
                        next++;
                        into = 0;
                    }
                }
                long sums = count * TABLE_ENTRY;
                if (a != null) {
                    MemorySegment.copy(a, 0, table, ValueLayout.JAVA_LONG, sums, SUM_WORDS);
                    MemorySegment.copy(b, 0, table, ValueLayout.JAVA_LONG, sums + SUMS / 2, SUM_WORDS);
                }
                callLoop(loop, table, count, anchor, whole, gather ? "gather" : "scatter");
                if (a != null) {
                    MemorySegment.copy(table, ValueLayout.JAVA_LONG, sums, a, 0, SUM_WORDS);
                    MemorySegment.copy(table, ValueLayout.JAVA_LONG, sums + SUMS / 2, b, 0, SUM_WORDS);
                }
            }
        } finally {
            fence();
        }
    }

    /**
     * Runs {@code loop} over the first {@code count} entries of {@code table}; {@code anchor} and
     * {@code whole}, the first piece's segment and the whole's, ride along so that their arenas
     * stay open for the call. No fence.
     *
     * @throws InternalError if a load or store faulted and the guard resumed the loop at its
     *                       recovery (the message names {@code operation})
     */
    private static void callLoop(MethodHandle loop, MemorySegment table, int count, MemorySegment anchor,
                                 MemorySegment whole, String operation) {
        int status;
        try {
            status = (int) loop.invokeExact(table, (long) count, anchor, whole);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("non-temporal copy failed", t);
        }
        if (status != 0) {
            throw new InternalError(FAULT_MESSAGE + " (" + operation + ", a call of " + count + " pieces)");
        }
    }

    /**
     * Whether a loop of {@code pass} bytes a pass can copy {@code src} into {@code dst} (the same
     * length): a positive whole number of passes, the destination writable and on a cache line,
     * the two not overlapping.
     */
    private static boolean loopTakes(MemorySegment src, MemorySegment dst, long pass) {
        long len = dst.byteSize();
        long sa = src.address();
        long da = dst.address();
        return len > 0 && len % pass == 0 && (da & (LINE - 1)) == 0 && !dst.isReadOnly() && !(sa < da + len && da < sa + len);
    }

    /** @throws IllegalArgumentException naming the first of the {@code count} pairs whose lengths differ */
    private static void requireSameLengths(MemorySegment[] sources, MemorySegment[] destinations, int count) {
        for (int i = 0; i < count; i++) {
            if (sources[i].byteSize() != destinations[i].byteSize()) {
                throw new IllegalArgumentException("copy of " + sources[i].byteSize() + " bytes into "
                        + destinations[i].byteSize() + " (pair " + i + " of " + count + ")");
            }
        }
    }

    /** Fills entry {@code index} of {@code table}: copy {@code length} bytes from {@code src} to {@code dst}, store the entry's own sums at {@code sums} (0: keep summing). */
    private static void setEntry(MemorySegment table, int index, long src, long dst, long length, long sums) {
        long at = index * TABLE_ENTRY;
        table.set(ValueLayout.JAVA_LONG, at, src);
        table.set(ValueLayout.JAVA_LONG, at + 8, dst);
        table.set(ValueLayout.JAVA_LONG, at + 16, length);
        table.set(ValueLayout.JAVA_LONG, at + 24, sums);
    }

    /** The calling thread's table of at least {@code entries} entries and the sums after them (native; it grows, never shrinks). */
    private static MemorySegment tableScratch(int entries) {
        MemorySegment table = TABLE.get();
        if (table.byteSize() < entries * TABLE_ENTRY + SUMS) {
            long room = Math.max(entries, 2L * table.byteSize() / TABLE_ENTRY);
            table = Arena.ofAuto().allocate(room * TABLE_ENTRY + SUMS, 8);
            TABLE.set(table);
        }
        return table;
    }

    /** The calling thread's place for the own sums of at least {@code objects} objects (native; it grows, never shrinks). */
    private static MemorySegment ownSumsScratch(int objects) {
        MemorySegment own = OWN_SUMS.get();
        if (own.byteSize() < objects * SUMS) {
            own = Arena.ofAuto().allocate(Math.max(objects, 2 * own.byteSize() / SUMS) * SUMS, 8);
            OWN_SUMS.set(own);
        }
        return own;
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
        return stream(LOOP, src, dst);
    }

    /** {@link #stream(MemorySegment, MemorySegment)} with {@code loop}. */
    private static long stream(MethodHandle loop, MemorySegment src, MemorySegment dst) {
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
        long body = (length - head) & -passOf(loop);
        if (head > 0) {
            MemorySegment.copy(src, 0, dst, 0, head);
        }
        if (body > 0) {
            MemorySegment table = tableScratch(1);
            setEntry(table, 0, s + head, d + head, body, 0);
            callLoop(loop, table, 1, src, dst, "copy");
        }
        long done = head + body;
        if (done < length) {
            MemorySegment.copy(src, done, dst, done, length - done);
        }
        return body;
    }

    /** Bytes one pass of {@code loop} moves. */
    private static long passOf(MethodHandle loop) {
        return loop == WIDE_LOOP ? WIDE_PASS : NARROW_PASS;
    }

    /** Bytes one pass of the loop in use moves; the copy's last bytes short of a pass go through {@link MemorySegment#copy}. For tests. */
    static long passBytes() {
        return passOf(LOOP);
    }

    /** The AVX-512 loop if {@code wide}, else the AVX2 loop. @throws IllegalStateException if it is not installed here */
    private static MethodHandle loop(boolean wide) {
        MethodHandle loop = wide ? WIDE_LOOP : NARROW_LOOP;
        if (loop == null) {
            throw new IllegalStateException((wide ? "the AVX-512" : "the AVX2") + " loop is not installed here");
        }
        return loop;
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
        MethodHandle loop = loop(wide);
        try {
            return stream(loop, src, dst);
        } finally {
            fence();
        }
    }

    /**
     * {@link #gatherSummed} ({@code gather}) or {@link #scatterSummed} with the AVX-512 loop if
     * {@code wide} else the AVX2 loop, whichever loop is in use. For tests.
     *
     * @throws IllegalStateException if that loop is not installed here
     */
    static long moveSummedWithLoop(boolean wide, List<MemorySegment> parts, MemorySegment mapped, boolean gather,
                                   long[] a, long[] b) {
        return moveSummed(loop(wide), parts, mapped, gather, a, b);
    }

    /** True if the AVX-512 loop is installed here. For tests. */
    static boolean hasWideLoop() {
        return WIDE_LOOP != null;
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
