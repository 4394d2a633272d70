package dev.strata.memory;

import dev.strata.memory.transfer.NonTemporalCopy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The checksum of objects in framed tiers (POOL, DISK), computed in the same pass as the copy
 * that moves the bytes, so that checksumming costs no extra trip through memory.
 *
 * <h2>Design note</h2>
 * A checksum computed after the copy reads every byte a second time: measured here, a copy
 * followed by CRC32C runs at ~0.7x the plain copy. This checksum is computed by the copy loop
 * itself from the vector registers the copy already holds, and the fused loop runs at the speed
 * of {@link MemorySegment#copy}.
 *
 * <p>The data is read as little-endian 64-bit words in 64-byte blocks. Each of the 8 word
 * positions {@code j} of a block has two running sums modulo 2<sup>64</sup>, Fletcher style:
 * {@code a[j] += word[j]; b[j] += a[j]}, so {@code b} weights every word by its distance from the
 * end. A last partial block is padded with zero bytes. The value mixes the 16 sums and the total
 * length through a 64-bit finaliser. Properties: any single-bit error changes {@code a} (an odd
 * difference cannot vanish modulo 2<sup>64</sup>); moving a block changes {@code b}; a truncated
 * or extended object changes the length term. It is a corruption check, not a cryptographic hash.
 *
 * <p>Mapped files: the fused vector loop must never read or write a file mapping (the POOL). A
 * page the file no longer backs (truncated, or its file system full) raises SIGBUS, which the JDK
 * turns into an {@link InternalError} for {@link MemorySegment#copy} and plain segment accesses,
 * but which kills the whole JVM inside compiled Vector API code. The {@code ...Mapped...} variants
 * ({@link #copyFromMappedAndUpdate}, {@link #copyToMappedAndUpdate}, {@link #updateMapped}) therefore
 * touch the mapping only through {@link MemorySegment#copy} and sum the bytes on the private side,
 * in steps of {@value #MAPPED_STEP} bytes: each step is copied first (its reads and writes stream
 * together, as in a plain copy) and then summed on the private side while it is still in the
 * first-level cache: one pass through memory still, a little over the cost of the copy (summing
 * first made the sum wait for memory and the copy wait for the sum: 0.86–0.94 of a raw copy into
 * a pool mapping at 16 KiB and 0.91–1.00 at 256 KiB, against 0.87–1.02 and 0.99–1.07 copying first).
 * Where {@link NonTemporalCopy} guards file mappings (x86-64 with AVX2, see its class note),
 * {@link #copyPartsToMappedAndUpdate} and {@link #copyMappedToPartsAndUpdate} hand parts of whole
 * passes of its loop to that streaming loop instead, which sums the bytes from the registers it copies
 * them through; a fault there is an {@link InternalError} in the same words.
 *
 * <p>Only private native memory reaches the vector loop. The Vector API compiles a load or store
 * of a memory segment to vector instructions only where the compiler can tell the segment is
 * native: a loop that has also seen heap segments (arrays wrapped by
 * {@link MemorySegment#ofArray}) falls back, at that call site and for every caller, to a
 * per-lane Java path about a hundred times slower. {@link #run} therefore sends heap and mapped
 * segments through the stepped path: the bytes pass through a native scratch of
 * {@value #MAPPED_STEP} bytes (or are summed on the private native side of a copy), one step at a
 * time, so that a process mixing heap values (the cluster tier's) with native slots keeps the
 * fused loop at memory speed.
 *
 * <p>Streaming: {@link #update} and {@link #copyAndUpdate} may split the bytes anywhere; the value
 * depends only on the concatenated bytes. A scalar reference ({@link #referenceValue}) defines the
 * value and the tests check the vector path against it.
 *
 * <p>Threads: an instance is confined to one thread at a time (reuse it per worker); the static
 * helpers are safe from any thread.
 */
public final class Checksum64 {

    private static final VectorSpecies<Long> HALF = LongVector.SPECIES_256; // 4 words = 32 bytes
    private static final VectorSpecies<Long> WHOLE = LongVector.SPECIES_512; // 8 words = one block
    /**
     * Whether this machine's preferred vectors hold a whole block (AVX-512): one load and two adds
     * per block instead of two and four, which halves the instructions of the summing that a stepped
     * copy adds after each step (measured on an AVX-512 machine, copies of 256 KiB and 2 MiB into a
     * pool mapping with the sum, six alternating runs of each width: 0.89–0.95 of the raw copy,
     * mean 0.92, against 0.87–0.92, mean 0.90). Elsewhere the 512-bit species would run as Java
     * code, far slower: only tests construct a checksum of the other width.
     */
    static final boolean WHOLE_BLOCK_VECTORS = LongVector.SPECIES_PREFERRED.vectorBitSize() >= WHOLE.vectorBitSize();
    private static final int BLOCK = 64; // bytes per block: 8 words
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(LE);
    /**
     * Bytes per step of the stepped path: the step is copied, then summed from the private side
     * while it is still in the first-level cache, and a longer step pays the per-step work (a copy
     * call, the sums' loads and stores) less often. Measured on an Intel Xeon with AVX-512 (48 KiB
     * first-level data cache), copies into a pool mapping against a raw copy, two alternating runs
     * of each step: 16 KiB steps 0.98–0.995 at 2 MiB and 256 KiB and 0.91–0.93 at 16 KiB, 8 KiB
     * 0.97–0.98 and 0.88–0.89, 4 KiB 0.94–0.95 and 0.86. (4 KiB was best when the path summed
     * each step before copying it; 64 KiB steps spill the cache.)
     */
    static final int MAPPED_STEP = 16 * 1024;
    /** Per thread, MAPPED_STEP bytes of native memory the stepped path copies through (no call keeps it across calls). */
    private static final ThreadLocal<MemorySegment> SCRATCH = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(MAPPED_STEP, BLOCK));

    private final long[] a = new long[8]; // running word sums, one per word position
    private final long[] b = new long[8]; // running sums of a
    private final long[] finalA = new long[8]; // scratch for value(): a with the last partial block
    private final long[] finalB = new long[8]; // scratch for value(): b with the last partial block
    private final byte[] carry = new byte[BLOCK]; // bytes of an incomplete block
    private final MemorySegment carrySegment = MemorySegment.ofArray(carry);
    private int carryLength; // bytes held in carry, 0..63
    private long totalLength; // bytes seen since reset
    private final boolean wholeBlocks; // sum with one 512-bit vector per block, else two 256-bit ones

    /** A checksum that sums with the widest vectors this machine runs natively. */
    public Checksum64() {
        this(WHOLE_BLOCK_VECTORS);
    }

    /**
     * A checksum that sums with one 512-bit vector per block ({@code wholeBlocks}) or two 256-bit
     * ones; both give the same value. For tests, which check each against the scalar reference on
     * any machine.
     */
    Checksum64(boolean wholeBlocks) {
        this.wholeBlocks = wholeBlocks;
    }

    /** Starts a new checksum. */
    public Checksum64 reset() {
        java.util.Arrays.fill(a, 0);
        java.util.Arrays.fill(b, 0);
        carryLength = 0;
        totalLength = 0;
        return this;
    }

    /** Adds {@code length} bytes of {@code src} starting at {@code offset}. */
    public Checksum64 update(MemorySegment src, long offset, long length) {
        run(src, offset, null, 0, length);
        return this;
    }

    /**
     * Copies {@code length} bytes from {@code src} to {@code dst} and adds them to the checksum, in
     * one pass. The ranges must not overlap.
     */
    public Checksum64 copyAndUpdate(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        run(src, srcOffset, dst, dstOffset, length);
        return this;
    }

    /**
     * As {@link #copyAndUpdate}, from a file mapping {@code mapped} into private memory
     * {@code dst}: a fault on the mapping surfaces as the JDK's {@link InternalError} from the copy
     * (see the class note), with the checksum holding only the bytes before it.
     */
    public Checksum64 copyFromMappedAndUpdate(MemorySegment mapped, long srcOffset, MemorySegment dst, long dstOffset,
                                              long length) {
        for (long done = 0; done < length; ) {
            long n = Math.min(MAPPED_STEP, length - done);
            MemorySegment.copy(mapped, srcOffset + done, dst, dstOffset + done, n);
            run(dst, dstOffset + done, null, 0, n);
            done += n;
        }
        return this;
    }

    /**
     * As {@link #copyAndUpdate}, from private memory {@code src} into a file mapping
     * {@code mapped}: a fault on the mapping surfaces as the JDK's {@link InternalError} from the
     * copy (see the class note).
     */
    public Checksum64 copyToMappedAndUpdate(MemorySegment src, long srcOffset, MemorySegment mapped, long dstOffset,
                                            long length) {
        for (long done = 0; done < length; ) {
            long n = Math.min(MAPPED_STEP, length - done);
            MemorySegment.copy(src, srcOffset + done, mapped, dstOffset + done, n); // reads and writes streamed together
            run(src, srcOffset + done, null, 0, n); // then sums the step while it is in the first-level cache
            done += n;
        }
        return this;
    }

    /**
     * Copies the concatenation of {@code parts} into the file mapping {@code mapped} at
     * {@code dstOffset} and adds them to the checksum, in one pass: where
     * {@link NonTemporalCopy#gatherSummed} takes the parts (private native memory of one arena,
     * whole passes of its loop, on a machine whose loop guards file mappings) with
     * streaming stores that sum as they copy, else part by part as {@link #copyToMappedAndUpdate}.
     * A fault on the mapping is an {@link InternalError} either way (see the class note).
     */
    public Checksum64 copyPartsToMappedAndUpdate(List<MemorySegment> parts, MemorySegment mapped, long dstOffset) {
        long total = streamed(parts, mapped, dstOffset, true);
        for (int i = 0, n = parts.size(); total < 0 && i < n; i++) {
            MemorySegment p = parts.get(i);
            copyToMappedAndUpdate(p, 0, mapped, dstOffset, p.byteSize());
            dstOffset += p.byteSize();
        }
        return this;
    }

    /**
     * Copies bytes of the file mapping {@code mapped} from {@code srcOffset} into {@code parts} in
     * order and adds them to the checksum, in one pass, as {@link #copyPartsToMappedAndUpdate}
     * does the other way ({@link NonTemporalCopy#scatterSummed}, else part by part as
     * {@link #copyFromMappedAndUpdate}).
     */
    public Checksum64 copyMappedToPartsAndUpdate(MemorySegment mapped, long srcOffset, List<MemorySegment> parts) {
        long total = streamed(parts, mapped, srcOffset, false);
        for (int i = 0, n = parts.size(); total < 0 && i < n; i++) {
            MemorySegment p = parts.get(i);
            copyFromMappedAndUpdate(mapped, srcOffset, p, 0, p.byteSize());
            srcOffset += p.byteSize();
        }
        return this;
    }

    /**
     * Moves {@code parts} to ({@code gather}) or from {@code mapped} at {@code offset} with the
     * summing streaming loop and adds them to the checksum; returns the bytes moved, or -1 with
     * nothing moved where that loop does not take them (or a block is incomplete).
     */
    private long streamed(List<MemorySegment> parts, MemorySegment mapped, long offset, boolean gather) {
        if (carryLength != 0 || offset < 0 || offset > mapped.byteSize()) {
            return -1;
        }
        MemorySegment span = mapped.asSlice(offset);
        long moved = gather ? NonTemporalCopy.gatherSummed(parts, span, a, b) : NonTemporalCopy.scatterSummed(span, parts, a, b);
        if (moved > 0) {
            totalLength += moved;
        }
        return moved;
    }

    /**
     * As {@link #update}, over bytes of a file mapping {@code mapped}, read through a private
     * scratch buffer: a fault on the mapping surfaces as the JDK's {@link InternalError} (see the
     * class note).
     */
    public Checksum64 updateMapped(MemorySegment mapped, long offset, long length) {
        MemorySegment buffer = scratch();
        for (long done = 0; done < length; ) {
            long n = Math.min(MAPPED_STEP, length - done);
            MemorySegment.copy(mapped, offset + done, buffer, 0, n);
            run(buffer, 0, null, 0, n);
            done += n;
        }
        return this;
    }

    /** The calling thread's native scratch of the stepped path, {@value #MAPPED_STEP} bytes. */
    private static MemorySegment scratch() {
        return SCRATCH.get();
    }

    /** Whether the vector loop may read or write {@code m}: private native memory (see the class note). */
    private static boolean vectorSafe(MemorySegment m) {
        return m.isNative() && !m.isMapped();
    }

    /** The checksum of the bytes added since the last reset. */
    public long value() {
        long[] fa = finalA;
        long[] fb = finalB;
        System.arraycopy(a, 0, fa, 0, 8);
        System.arraycopy(b, 0, fb, 0, 8);
        if (carryLength > 0) {
            java.util.Arrays.fill(carry, carryLength, BLOCK, (byte) 0);
            blockScalar(carrySegment, 0, fa, fb);
        }
        return finish(fa, fb, totalLength);
    }

    /**
     * The checksum of {@code length} bytes, a whole number of 64-byte blocks, whose running sums
     * from zero are {@code sums[offset...offset+15]}: eight word sums, then eight sums of those
     * (as {@link NonTemporalCopy#copyPairsSummed} stores each object's).
     *
     * @throws IllegalArgumentException if {@code length} is negative or not a whole number of blocks
     */
    public static long ofSums(long[] sums, int offset, long length) {
        if (length < 0 || length % BLOCK != 0) {
            throw new IllegalArgumentException("sums cover whole blocks of " + BLOCK + " bytes, not " + length + " bytes");
        }
        return finish(sums, offset, sums, offset + 8, length);
    }

    /** The checksum of {@code length} bytes of {@code src} at {@code offset}. */
    public static long of(MemorySegment src, long offset, long length) {
        return new Checksum64().update(src, offset, length).value();
    }

    /** Copies {@code length} bytes and returns their checksum, in one pass. */
    public static long copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        return new Checksum64().copyAndUpdate(src, srcOffset, dst, dstOffset, length).value();
    }

    /** The defining scalar computation, kept simple; used by tests to check the vector path. */
    public static long referenceValue(byte[] data) {
        long[] ra = new long[8];
        long[] rb = new long[8];
        byte[] padded = java.util.Arrays.copyOf(data, (data.length + BLOCK - 1) / BLOCK * BLOCK);
        MemorySegment seg = MemorySegment.ofArray(padded);
        for (long off = 0; off < padded.length; off += BLOCK) {
            blockScalar(seg, off, ra, rb);
        }
        return finish(ra, rb, data.length);
    }

    private void run(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        if (length < 0) {
            throw new IllegalArgumentException("negative length " + length);
        }
        totalLength += length;
        long done = 0;
        if (carryLength > 0) { // complete the pending block first
            int take = (int) Math.min(BLOCK - carryLength, length);
            MemorySegment.copy(src, srcOffset, carrySegment, carryLength, take);
            if (dst != null) {
                MemorySegment.copy(src, srcOffset, dst, dstOffset, take);
            }
            carryLength += take;
            done = take;
            if (carryLength < BLOCK) {
                return;
            }
            blockScalar(carrySegment, 0, a, b);
            carryLength = 0;
        }
        long blocks = (length - done) / BLOCK;
        if (blocks > 0) {
            if (vectorSafe(src) && (dst == null || vectorSafe(dst))) {
                vectorBlocks(src, srcOffset + done, dst, dstOffset + done, blocks);
            } else {
                steppedBlocks(src, srcOffset + done, dst, dstOffset + done, blocks * BLOCK);
            }
            done += blocks * BLOCK;
        }
        int tail = (int) (length - done);
        if (tail > 0) {
            MemorySegment.copy(src, srcOffset + done, carrySegment, 0, tail);
            if (dst != null) {
                MemorySegment.copy(src, srcOffset + done, dst, dstOffset + done, tail);
            }
            carryLength = tail;
        }
    }

    /**
     * Sums {@code length} bytes (whole blocks) of which {@code src} or {@code dst} is heap or
     * mapped memory, in steps of {@value #MAPPED_STEP}: the vector loop sums a private native side
     * (the source, or the destination after {@link MemorySegment#copy} filled it), else the native
     * scratch the step was copied through.
     */
    private void steppedBlocks(MemorySegment src, long so, MemorySegment dst, long doff, long length) {
        for (long done = 0; done < length; ) {
            long n = Math.min(MAPPED_STEP, length - done);
            if (vectorSafe(src)) {
                MemorySegment.copy(src, so + done, dst, doff + done, n); // dst is not vector-safe here
                vectorBlocks(src, so + done, null, 0, n / BLOCK);
            } else if (dst != null && vectorSafe(dst)) {
                MemorySegment.copy(src, so + done, dst, doff + done, n);
                vectorBlocks(dst, doff + done, null, 0, n / BLOCK);
            } else {
                MemorySegment buffer = scratch();
                MemorySegment.copy(src, so + done, buffer, 0, n);
                vectorBlocks(buffer, 0, null, 0, n / BLOCK);
                if (dst != null) {
                    MemorySegment.copy(buffer, 0, dst, doff + done, n);
                }
            }
            done += n;
        }
    }

    /** The hot loop: sums {@code blocks} 64-byte blocks, copying them when {@code dst != null}; private native memory only. */
    private void vectorBlocks(MemorySegment src, long so, MemorySegment dst, long doff, long blocks) {
        if (wholeBlocks) {
            wholeVectorBlocks(src, so, dst, doff, blocks, a, b);
        } else {
            halfVectorBlocks(src, so, dst, doff, blocks, a, b);
        }
    }

    /** {@link #vectorBlocks} with one 512-bit vector per block: word position j is lane j. */
    private static void wholeVectorBlocks(MemorySegment src, long so, MemorySegment dst, long doff, long blocks,
                                          long[] a, long[] b) {
        LongVector va = LongVector.fromArray(WHOLE, a, 0);
        LongVector vb = LongVector.fromArray(WHOLE, b, 0);
        long end = so + blocks * BLOCK;
        if (dst != null) {
            for (long s = so, d = doff; s < end; s += BLOCK, d += BLOCK) {
                LongVector v = LongVector.fromMemorySegment(WHOLE, src, s, LE);
                v.intoMemorySegment(dst, d, LE);
                va = va.add(v);
                vb = vb.add(va);
            }
        } else {
            for (long s = so; s < end; s += BLOCK) {
                va = va.add(LongVector.fromMemorySegment(WHOLE, src, s, LE));
                vb = vb.add(va);
            }
        }
        va.intoArray(a, 0);
        vb.intoArray(b, 0);
    }

    /** {@link #vectorBlocks} with two 256-bit vectors per block: words 0–3 and 4–7. */
    private static void halfVectorBlocks(MemorySegment src, long so, MemorySegment dst, long doff, long blocks,
                                         long[] a, long[] b) {
        LongVector a0 = LongVector.fromArray(HALF, a, 0);
        LongVector a1 = LongVector.fromArray(HALF, a, 4);
        LongVector b0 = LongVector.fromArray(HALF, b, 0);
        LongVector b1 = LongVector.fromArray(HALF, b, 4);
        long end = so + blocks * BLOCK;
        if (dst != null) {
            for (long s = so, d = doff; s < end; s += BLOCK, d += BLOCK) {
                LongVector v = LongVector.fromMemorySegment(HALF, src, s, LE);
                LongVector w = LongVector.fromMemorySegment(HALF, src, s + 32, LE);
                v.intoMemorySegment(dst, d, LE);
                w.intoMemorySegment(dst, d + 32, LE);
                a0 = a0.add(v);
                a1 = a1.add(w);
                b0 = b0.add(a0);
                b1 = b1.add(a1);
            }
        } else {
            for (long s = so; s < end; s += BLOCK) {
                a0 = a0.add(LongVector.fromMemorySegment(HALF, src, s, LE));
                a1 = a1.add(LongVector.fromMemorySegment(HALF, src, s + 32, LE));
                b0 = b0.add(a0);
                b1 = b1.add(a1);
            }
        }
        a0.intoArray(a, 0);
        a1.intoArray(a, 4);
        b0.intoArray(b, 0);
        b1.intoArray(b, 4);
    }

    private static void blockScalar(MemorySegment seg, long off, long[] a, long[] b) {
        for (int j = 0; j < 8; j++) {
            a[j] += seg.get(WORD, off + 8L * j);
            b[j] += a[j];
        }
    }

    private static long finish(long[] a, long[] b, long length) {
        return finish(a, 0, b, 0, length);
    }

    /** The value of sums {@code a[aAt...aAt+7]} and {@code b[bAt...bAt+7]} over {@code length} bytes. */
    private static long finish(long[] a, int aAt, long[] b, int bAt, long length) {
        long h = 0x27D4EB2F165667C5L ^ length;
        for (int j = 0; j < 8; j++) {
            h = mix(h ^ a[aAt + j]) + j;
            h = mix(h ^ b[bAt + j]);
        }
        return mix(h ^ (length * 0x9E3779B97F4A7C15L));
    }

    private static long mix(long z) { // 64-bit finaliser (xor-shift-multiply)
        z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
        z = (z ^ (z >>> 33)) * 0xC4CEB9FE1A85EC53L;
        return z ^ (z >>> 33);
    }
}
