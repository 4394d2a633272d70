package dev.strata.cache.peer;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/** Helpers for the peer tests: seeded bytes (never all zero), bounded waits and accesses held open. */
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

    /**
     * An access to {@code [0, length)} of a lease held open on its own thread, as a long copy
     * holds it: {@link #start} returns once the access is inside the lease (failing if it is not
     * within 5 s); {@link #release} lets it go on, runs {@code atRelease} on the view, and waits
     * for the thread.
     */
    static final class HeldAccess {
        private final CountDownLatch release = new CountDownLatch(1);
        private final Thread thread;

        private HeldAccess(PeerClient client, PeerLease lease, long length, Consumer<MemorySegment> atRelease)
                throws InterruptedException {
            CountDownLatch inside = new CountDownLatch(1);
            thread = Thread.ofPlatform().start(() -> client.access(lease, 0, length, view -> {
                inside.countDown();
                await("released", 10_000, () -> release.getCount() == 0);
                atRelease.accept(view);
            }));
            if (!inside.await(5, TimeUnit.SECONDS)) {
                throw new AssertionError("the access did not get inside lease " + lease + " within 5 s");
            }
        }

        static HeldAccess start(PeerClient client, PeerLease lease, long length) throws InterruptedException {
            return new HeldAccess(client, lease, length, view -> {
            });
        }

        static HeldAccess start(PeerClient client, PeerLease lease, long length, Consumer<MemorySegment> atRelease)
                throws InterruptedException {
            return new HeldAccess(client, lease, length, atRelease);
        }

        /** Lets the access finish and waits up to {@code joinMillis} for its thread. */
        void release(long joinMillis) throws InterruptedException {
            release.countDown();
            thread.join(joinMillis);
        }
    }
}
