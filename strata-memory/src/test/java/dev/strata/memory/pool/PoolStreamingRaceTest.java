package dev.strata.memory.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.strata.memory.Sizes;
import dev.strata.memory.transfer.NonTemporalCopy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The publish protocol's promise (a reader returns a whole object or nothing) where both sides
 * copy with the streaming loop: one thread rewrites an object in the pool, alternating between
 * two contents, while another reads it over and over; every read that succeeds holds one of the
 * two contents whole, and none fails its checksum.
 */
class PoolStreamingRaceTest {

    private static final int PIECES = 16; // a KV block's layer pieces
    private static final int PIECE_BYTES = 4096; // whole passes of the loop: the streaming case
    private static final long RUN_NANOS = 1_500_000_000L;

    @Test
    void aReaderGetsOneWholeContentOrNothingWhileTheWriterStreamsTheOther() throws Exception {
        assumeTrue(NonTemporalCopy.guardsMappings(), "no guarded streaming loop on this machine");
        try (PoolFiles files = new PoolFiles("race", 1); Arena arena = Arena.ofShared();
             PoolTier pool = PoolTier.open(files.config().capacity(4 * Sizes.MiB).conclude())) {
            SplittableRandom random = new SplittableRandom(23);
            List<List<MemorySegment>> contents = List.of(pieces(arena, random), pieces(arena, random));
            List<MemorySegment> back = new ArrayList<>();
            for (int i = 0; i < PIECES; i++) {
                back.add(arena.allocate(PIECE_BYTES, 64));
            }
            long handle = pool.allocate((long) PIECES * PIECE_BYTES);
            pool.gatherWrite(handle, contents.get(0));
            long streamed = NonTemporalCopy.bytesStreamed();

            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> writerFailure = new AtomicReference<>();
            Thread writer = Thread.ofPlatform().name("pool-race-writer").start(() -> {
                try {
                    for (int i = 1; !stop.get(); i++) {
                        pool.gatherWrite(handle, contents.get(i & 1));
                        LockSupport.parkNanos(20_000); // published for a while, so that some reads fit between writes
                    }
                } catch (Throwable t) {
                    writerFailure.set(t);
                }
            });
            int whole = 0;
            int refused = 0;
            int[] seen = new int[2];
            try {
                for (long end = System.nanoTime() + RUN_NANOS; System.nanoTime() < end; ) {
                    if (!pool.scatterRead(handle, back)) { // changed during the copy: reported, not returned
                        refused++;
                        continue;
                    }
                    int which = matches(back, contents.get(0)) ? 0 : matches(back, contents.get(1)) ? 1 : -1;
                    assertThat(which).as("read %d returned a mix of the two contents", whole + refused).isNotNegative();
                    seen[which]++;
                    whole++;
                }
            } finally {
                stop.set(true);
                writer.join(10_000);
            }
            assertThat(writerFailure.get()).isNull();
            assertThat(whole).as("reads that returned an object (%d refused)", refused).isPositive();
            assertThat(seen[0] + seen[1]).isEqualTo(whole);
            assertThat(NonTemporalCopy.bytesStreamed() - streamed).as("both sides streamed")
                    .isGreaterThanOrEqualTo((long) whole * PIECES * PIECE_BYTES);
        }
    }

    private static List<MemorySegment> pieces(Arena arena, SplittableRandom random) {
        List<MemorySegment> pieces = new ArrayList<>();
        for (int i = 0; i < PIECES; i++) {
            MemorySegment piece = arena.allocate(PIECE_BYTES, 64);
            MemorySegment.copy(PoolTierTest.randomBytes(random, PIECE_BYTES), 0, piece, ValueLayout.JAVA_BYTE, 0, PIECE_BYTES);
            pieces.add(piece);
        }
        return pieces;
    }

    private static boolean matches(List<MemorySegment> read, List<MemorySegment> content) {
        for (int i = 0; i < read.size(); i++) {
            if (read.get(i).mismatch(content.get(i)) != -1) {
                return false;
            }
        }
        return true;
    }
}
