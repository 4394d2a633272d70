package dev.strata.node.peer;

import dev.strata.cache.peer.LenderEvents;
import dev.strata.cache.peer.LentRegion;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.SplittableRandom;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/** Shared pieces of the peer tests: files, a settable demand, a clock that can jump, stamped data, recorded events. */
final class PeerTestSupport {
    private PeerTestSupport() {
    }

    static Path newFile(String tag) {
        return Path.of("/dev/shm", "strata-peer-" + tag + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + ".lend");
    }

    static void delete(Path file) throws IOException {
        Files.deleteIfExists(file);
        Files.deleteIfExists(file.resolveSibling(file.getFileName() + ".lock"));
    }

    /** A demand the test sets. */
    static final class SettableDemand implements DemandSignal {
        final AtomicLong bytes = new AtomicLong();

        @Override
        public long demandBytes(long elapsedNanos) {
            return bytes.get();
        }

        @Override
        public String describe() {
            return "set by the test";
        }
    }

    /** The wall clock plus an offset the test advances (heartbeats stay fresh, deadlines pass at once). */
    static final class JumpingClock implements InstantSource {
        final AtomicLong offsetMillis = new AtomicLong();

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(millis());
        }

        @Override
        public long millis() {
            return System.currentTimeMillis() + offsetMillis.get();
        }
    }

    /**
     * Fills {@code memory} with data stamped by lease: the first three longs are region, epoch and
     * sequence, the rest seeded random bytes of that triple; returns nothing, see {@link #verify}.
     */
    static void stamp(MemorySegment memory, long region, long epoch, long sequence) {
        SplittableRandom random = new SplittableRandom(region * 1_000_003L ^ epoch * 7919L ^ sequence);
        long n = memory.byteSize();
        for (long i = 0; i < n; i++) {
            memory.set(ValueLayout.JAVA_BYTE, i, (byte) (random.nextInt(255) + 1));
        }
        if (n >= 24) {
            memory.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, region);
            memory.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, epoch);
            memory.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, sequence);
        }
    }

    /** Null if {@code memory} holds exactly {@link #stamp}'s bytes for the triple, else what differs. */
    static String verify(MemorySegment memory, long region, long epoch, long sequence) {
        SplittableRandom random = new SplittableRandom(region * 1_000_003L ^ epoch * 7919L ^ sequence);
        long n = memory.byteSize();
        for (long i = 0; i < n; i++) {
            byte expected = (byte) (random.nextInt(255) + 1);
            if (i >= 24 || n < 24) {
                byte actual = memory.get(ValueLayout.JAVA_BYTE, i);
                if (actual != expected) {
                    return "byte " + i + " of region " + region + " epoch " + epoch + " sequence " + sequence + " is "
                            + actual + ", expected " + expected + (n >= 24 ? " (stamp found: region "
                            + memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) + ", epoch "
                            + memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 8) + ", sequence "
                            + memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 16) + ")" : "");
                }
            }
        }
        if (n >= 24 && (memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) != region
                || memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 8) != epoch
                || memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 16) != sequence)) {
            return "stamp of region " + region + " epoch " + epoch + " sequence " + sequence + " reads region "
                    + memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) + ", epoch " + memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 8)
                    + ", sequence " + memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 16);
        }
        return null;
    }

    /** One event as a string: {@code revoke <region>}, {@code fenced <region>}, {@code lost <peer>}. */
    static final class RecordedEvents implements LenderEvents {
        final LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();
        final LinkedBlockingQueue<LentRegion> revoked = new LinkedBlockingQueue<>();
        final LinkedBlockingQueue<long[]> revokedAt = new LinkedBlockingQueue<>(); // [revokedAtNanos, received], System.nanoTime

        @Override
        public void revocationRequested(LentRegion region, long revokedAtNanos, long deadlineNanos) {
            revokedAt.add(new long[] {revokedAtNanos, System.nanoTime()});
            revoked.add(region);
            events.add("revoke " + region.lease().region());
        }

        @Override
        public void fenced(LentRegion region) {
            events.add("fenced " + region.lease().region());
        }

        @Override
        public void peerLost(int peer) {
            events.add("lost " + peer);
        }

        String next(long timeoutMillis) throws InterruptedException {
            String e = events.poll(timeoutMillis, TimeUnit.MILLISECONDS);
            if (e == null) {
                throw new AssertionError("no lender event within " + timeoutMillis + " ms");
            }
            return e;
        }
    }
}
