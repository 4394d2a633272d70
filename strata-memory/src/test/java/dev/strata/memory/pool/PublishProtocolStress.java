package dev.strata.memory.pool;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import dev.strata.memory.CorruptObjectException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;
import org.openjdk.jcstress.infra.results.I_Result;

/**
 * JCStress tests of the pool's publish protocol ({@link PublishProtocol}) on the real protocol
 * and allocator code, over heap-backed tables (the code is the same for mapped files).
 *
 * <p>Run in the regular suite in JCStress's sanity mode by {@code PublishProtocolStressTest};
 * run fully with {@code -Dstrata.jcstress.mode=default} (or {@code tough}).
 */
public final class PublishProtocolStress {
    static final int PAYLOAD = 200; // bytes: several cache lines, an odd size
    static final byte[] A = pattern(0x3B);
    static final byte[] B = pattern(0x71);

    private PublishProtocolStress() {
    }

    static byte[] pattern(int seed) {
        return pattern(seed, PAYLOAD);
    }

    static byte[] pattern(int seed, int length) {
        byte[] b = new byte[length];
        int x = seed;
        for (int i = 0; i < b.length; i++) {
            x = x * 1103515245 + 12345;
            b[i] = (byte) ((x >>> 16) | 1);
        }
        return b;
    }

    /**
     * A pool of two 256-byte chunks whose tables live on the heap, and its data too unless
     * {@code nativeData}: then in native memory, where runs of objects go through the streaming
     * loop (on machines where it guards mappings; elsewhere each object takes the single path).
     */
    static final class MiniPool {
        static final long CHUNK = 256;
        static final long CHUNKS = 2;
        final ChunkTable chunks = new ChunkTable(MemorySegment.ofArray(new long[(int) CHUNKS]), 0, CHUNKS);
        final ObjectDescriptorTable descriptors = new ObjectDescriptorTable(
                MemorySegment.ofArray(new long[(int) (CHUNKS * ObjectDescriptorTable.DESCRIPTOR_SIZE / 8)]), 0, CHUNKS);
        final MemorySegment data;
        final PoolAllocator allocator = new PoolAllocator("stress", chunks, descriptors,
                AllocationCounters.onHeap(), CHUNK, 0);
        final PublishProtocol protocol;

        MiniPool() {
            this(false);
        }

        MiniPool(boolean nativeData) {
            data = nativeData ? Arena.ofAuto().allocate(CHUNK * CHUNKS, 64) : MemorySegment.ofArray(new byte[(int) (CHUNK * CHUNKS)]);
            protocol = new PublishProtocol("stress", descriptors, data, allocator);
        }
    }

    static final int RUN_PAYLOAD = 256; // bytes: one chunk, whole passes of either streaming loop
    static final MemorySegment RUN_A = nativeCopy(pattern(0x2D, RUN_PAYLOAD));
    static final MemorySegment RUN_B = nativeCopy(pattern(0x55, RUN_PAYLOAD));

    private static MemorySegment nativeCopy(byte[] bytes) {
        return Arena.ofAuto().allocate(bytes.length, 64).copyFrom(MemorySegment.ofArray(bytes));
    }

    /** Writes {@code payloads[i]} to {@code handles[i]} in one run. */
    static void writeRun(MiniPool pool, long[] handles, MemorySegment... payloads) {
        Throwable[] failures = new Throwable[handles.length];
        pool.protocol.writeRun(handles, payloads, handles.length, failures);
        for (Throwable f : failures) {
            if (f != null) {
                throw new IllegalStateException(f);
            }
        }
    }

    /**
     * Reads {@code handles} in one run into {@code into} (native, {@link #RUN_PAYLOAD} bytes each)
     * and classifies each as {@link #classify} does, against {@link #RUN_A} and {@link #RUN_B}.
     */
    static int[] classifyRun(MiniPool pool, long[] handles, MemorySegment[] into) {
        boolean[] found = new boolean[handles.length];
        Throwable[] failures = new Throwable[handles.length];
        pool.protocol.readRun(handles, into, handles.length, found, failures);
        int[] out = new int[handles.length];
        for (int i = 0; i < handles.length; i++) {
            out[i] = failures[i] instanceof CorruptObjectException ? 4 : failures[i] != null ? 5 : !found[i] ? 0
                    : into[i].mismatch(RUN_A) == -1 ? 1 : into[i].mismatch(RUN_B) == -1 ? 2 : 3;
        }
        return out;
    }

    /** Reads {@code handle} and classifies: 0 nothing, 1 A whole, 2 B whole, 3 other bytes, 4 checksum failure. */
    static int classify(MiniPool pool, long handle) {
        byte[] dst = new byte[PAYLOAD];
        try {
            if (!pool.protocol.read(handle, List.of(MemorySegment.ofArray(dst)))) {
                return 0;
            }
        } catch (CorruptObjectException e) {
            return 4;
        }
        if (Arrays.equals(dst, A)) {
            return 1;
        }
        return Arrays.equals(dst, B) ? 2 : 3;
    }

    /** A reader that sees an object published sees all of its bytes. */
    @JCStressTest
    @Outcome(id = "0", expect = ACCEPTABLE, desc = "not published yet: nothing to read")
    @Outcome(id = "1", expect = ACCEPTABLE_INTERESTING, desc = "published: the whole payload was read")
    @Outcome(id = "3", expect = FORBIDDEN, desc = "read succeeded with bytes that are not the payload")
    @Outcome(id = "4", expect = FORBIDDEN, desc = "published state seen before the payload: checksum failed")
    @State
    public static class Publish {
        final MiniPool pool = new MiniPool();
        final long handle = pool.allocator.allocate(PAYLOAD);

        @Actor
        public void writer() {
            pool.protocol.write(handle, List.of(MemorySegment.ofArray(A)));
        }

        @Actor
        public void reader(I_Result r) {
            r.r1 = classify(pool, handle);
        }
    }

    /**
     * An object freed and its space reused for another while a reader copies it: the reader gets
     * the old object whole, the new one whole, or nothing, never a mix.
     */
    @JCStressTest
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "reader saw nothing (between free and republish, or copy overlapped the reuse)")
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "reader read the old object whole")
    @Outcome(id = "2, 1", expect = ACCEPTABLE_INTERESTING, desc = "reader read the new object whole")
    @Outcome(id = "3, 1", expect = FORBIDDEN, desc = "reader returned a mix of old and new bytes")
    @Outcome(id = "4, 1", expect = FORBIDDEN, desc = "reader hit a checksum failure: reuse not detected")
    @Outcome(id = ".*, 0", expect = FORBIDDEN, desc = "the freed space was not reused at the same handle")
    @State
    public static class Reuse {
        final MiniPool pool = new MiniPool();
        final long handle;

        public Reuse() {
            handle = pool.allocator.allocate(PAYLOAD * 2); // both chunks: reuse must land on the same handle
            pool.protocol.write(handle, List.of(MemorySegment.ofArray(A)));
        }

        @Actor
        public void writer(II_Result r) {
            pool.allocator.free(handle);
            long again = pool.allocator.allocate(PAYLOAD * 2);
            r.r2 = again == handle ? 1 : 0;
            pool.protocol.write(again, List.of(MemorySegment.ofArray(B)));
        }

        @Actor
        public void reader(II_Result r) {
            r.r1 = classify(pool, handle);
        }
    }

    /**
     * Two objects written in one run while a reader reads both in one run: each object the reader
     * sees published, it sees whole, with the checksum its own bytes give.
     */
    @JCStressTest
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "neither published yet")
    @Outcome(id = "1, 0", expect = ACCEPTABLE_INTERESTING, desc = "the first published, the second not yet")
    @Outcome(id = "0, 2", expect = ACCEPTABLE_INTERESTING, desc = "the second seen, the first not (the reader checked it earlier)")
    @Outcome(id = "1, 2", expect = ACCEPTABLE_INTERESTING, desc = "both published: both read whole")
    @Outcome(id = "[2345], .*", expect = FORBIDDEN, desc = "the first: other bytes, a checksum failure or an error")
    @Outcome(id = ".*, [1345]", expect = FORBIDDEN, desc = "the second: other bytes, a checksum failure or an error")
    @State
    public static class RunPublish {
        final MiniPool pool = new MiniPool(true);
        final long[] handles = {pool.allocator.allocate(RUN_PAYLOAD), pool.allocator.allocate(RUN_PAYLOAD)};
        final MemorySegment[] into = {Arena.ofAuto().allocate(RUN_PAYLOAD, 64), Arena.ofAuto().allocate(RUN_PAYLOAD, 64)};

        @Actor
        public void writer() {
            writeRun(pool, handles, RUN_A, RUN_B);
        }

        @Actor
        public void reader(II_Result r) {
            int[] seen = classifyRun(pool, handles, into);
            r.r1 = seen[0];
            r.r2 = seen[1];
        }
    }

    /**
     * An object freed and its space reused for another, written in a run, while a reader reads it
     * in a run: the old object whole, the new one whole, or nothing, never a mix.
     */
    @JCStressTest
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "reader saw nothing (between free and republish, or copy overlapped the reuse)")
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "reader read the old object whole")
    @Outcome(id = "2, 1", expect = ACCEPTABLE_INTERESTING, desc = "reader read the new object whole")
    @Outcome(id = "[345], 1", expect = FORBIDDEN, desc = "a mix of old and new bytes, a checksum failure or an error")
    @Outcome(id = ".*, 0", expect = FORBIDDEN, desc = "the freed space was not reused at the same handle")
    @State
    public static class RunReuse {
        final MiniPool pool = new MiniPool(true);
        final long handle;
        final MemorySegment[] into = {Arena.ofAuto().allocate(RUN_PAYLOAD, 64)};

        public RunReuse() {
            handle = pool.allocator.allocate(RUN_PAYLOAD * 2); // both chunks: reuse must land on the same handle
            writeRun(pool, new long[] {handle}, RUN_A.asSlice(0, RUN_PAYLOAD));
        }

        @Actor
        public void writer(II_Result r) {
            pool.allocator.free(handle);
            long again = pool.allocator.allocate(RUN_PAYLOAD * 2);
            r.r2 = again == handle ? 1 : 0;
            writeRun(pool, new long[] {again}, RUN_B);
        }

        @Actor
        public void reader(II_Result r) {
            r.r1 = classifyRun(pool, new long[] {handle}, into)[0];
        }
    }
}
