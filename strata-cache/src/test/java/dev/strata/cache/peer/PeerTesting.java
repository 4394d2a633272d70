package dev.strata.cache.peer;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.function.BooleanSupplier;

/** Helpers for the peer tests: seeded bytes (never all zero) and bounded waits. */
final class PeerTesting {
    private PeerTesting() {
    }

    static byte[] random(SplittableRandom random, int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) random.nextInt(256);
        }
        b[0] = (byte) (b[0] | 1);
        return b;
    }

    static MemorySegment segment(byte[] bytes) {
        return MemorySegment.ofArray(bytes);
    }

    /** Waits up to {@code timeoutMillis} for {@code condition}; fails naming {@code what} if it never holds. */
    static void await(String what, long timeoutMillis, BooleanSupplier condition) {
        long until = System.nanoTime() + timeoutMillis * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > until) {
                throw new AssertionError("timed out after " + timeoutMillis + " ms waiting for: " + what);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for: " + what, e);
            }
        }
    }
}
