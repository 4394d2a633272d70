package dev.strata.memory.disk;

import dev.strata.memory.TierIoException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InterruptedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Interrupting a thread that reads or writes the tier fails that thread's operation (cleanly: a
 * failed write leaves its object unreadable, the flag stays set) and nothing else: the data files
 * stay open and every other thread's transfers carry on.
 */
class DiskTierInterruptTest {

    private static DiskTierOptions options(Path dir) {
        return DiskTierOptions.in(dir, 32L << 20).name("disk-int").stagingBuffers(6)
                .stagingBufferSize(64 * 1024).deleteOnClose(true);
    }

    @Test
    void anInterruptedWriteFailsAloneAndTheTierCarriesOn(@TempDir Path dir) {
        try (DiskTier tier = DiskTier.open(options(dir))) {
            SplittableRandom r = new SplittableRandom(41);
            byte[] a = DiskTestSupport.randomBytes(50_001, r);
            byte[] b = DiskTestSupport.randomBytes(70_001, r);
            long ha = tier.allocate(a.length);
            long hb = tier.allocate(b.length);
            tier.write(ha, MemorySegment.ofArray(a));

            Thread.currentThread().interrupt();
            assertThatThrownBy(() -> tier.write(hb, MemorySegment.ofArray(b)))
                    .isInstanceOf(TierIoException.class).hasMessageContaining("handle " + hb)
                    .hasCauseInstanceOf(InterruptedIOException.class);
            assertThat(Thread.interrupted()).as("the interrupt is kept for the caller").isTrue();
            assertThat(tier.read(hb, MemorySegment.ofArray(new byte[b.length]))).as("failed write").isFalse();

            byte[] back = new byte[a.length];
            assertThat(tier.read(ha, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(a);
            tier.write(hb, MemorySegment.ofArray(b));
            byte[] backB = new byte[b.length];
            assertThat(tier.read(hb, MemorySegment.ofArray(backB))).isTrue();
            assertThat(backB).isEqualTo(b);

            Thread.currentThread().interrupt();
            assertThatThrownBy(() -> tier.read(ha, MemorySegment.ofArray(back))).isInstanceOf(TierIoException.class)
                    .hasCauseInstanceOf(InterruptedIOException.class);
            assertThat(Thread.interrupted()).isTrue();
            assertThat(tier.read(ha, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(a);
        }
    }

    @Test
    void otherThreadsTransfersSurviveRepeatedInterruptsOfOneThread(@TempDir Path dir) throws Exception {
        try (DiskTier tier = DiskTier.open(options(dir)); Arena arena = Arena.ofShared()) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> bystanderFailure = new AtomicReference<>();
            AtomicLong victimFailures = new AtomicLong();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                boolean victim = t == 0;
                long seed = 500 + t;
                threads.add(Thread.ofPlatform().name(victim ? "victim" : "bystander-" + t).start(() -> {
                    SplittableRandom r = new SplittableRandom(seed);
                    long h = tier.allocate(200_000);
                    MemorySegment src = arena.allocate(200_000, 4096);
                    MemorySegment dst = arena.allocate(200_000, 4096);
                    boolean written = false;
                    while (!stop.get()) {
                        try {
                            long size = 1 + r.nextLong(200_000);
                            MemorySegment s = src.asSlice(0, size);
                            DiskTestSupport.fillRandom(s, r);
                            written = false;
                            tier.write(h, s);
                            written = true;
                            MemorySegment d = dst.asSlice(0, size);
                            if (!tier.read(h, d) || d.mismatch(s) != -1) {
                                throw new AssertionError(Thread.currentThread().getName() + ": wrong bytes");
                            }
                        } catch (TierIoException e) {
                            Thread.interrupted();
                            boolean interruptCause = e.getCause() instanceof InterruptedIOException;
                            if (!victim || !interruptCause) {
                                bystanderFailure.compareAndSet(null, e);
                                return;
                            }
                            victimFailures.incrementAndGet();
                            if (!written && tier.read(h, dst.asSlice(0, 1))) {
                                bystanderFailure.compareAndSet(null, new AssertionError("a failed write left a readable object"));
                            }
                        } catch (Throwable e) {
                            bystanderFailure.compareAndSet(null, e);
                            return;
                        }
                    }
                    Thread.interrupted();
                    tier.free(h);
                }));
            }
            Thread victim = threads.getFirst();
            for (int i = 0; i < 40; i++) {
                Thread.sleep(10);
                victim.interrupt();
            }
            stop.set(true);
            for (Thread t : threads) {
                t.join(60_000);
            }
            assertThat(bystanderFailure.get()).as("bystanders and victim invariants").isNull();
            assertThat(victimFailures.get()).as("interrupts reached the victim's I/O").isPositive();
            assertThat(tier.used()).isZero();
        }
    }
}
