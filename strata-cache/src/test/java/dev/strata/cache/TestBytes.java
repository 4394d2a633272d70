package dev.strata.cache;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

/** Seeded random, never all-zero, object bytes for store tests. */
final class TestBytes {
    private TestBytes() {
    }

    static byte[] random(SplittableRandom random, int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) random.nextInt(256);
        }
        b[0] = (byte) (b[0] | 1); // never all zero
        return b;
    }

    static MemorySegment segment(byte[] bytes) {
        return MemorySegment.ofArray(bytes);
    }

    static byte[] toArray(MemorySegment s) {
        return s.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }
}
