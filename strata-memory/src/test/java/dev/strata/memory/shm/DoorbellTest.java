package dev.strata.memory.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Rings and waits across two real processes, the timeout path, and rings racing waits. */
class DoorbellTest {
    static final long FILE_BYTES = 4096;
    /** Each wait's timeout: far beyond any ring's delivery, so a wait that runs it out means a lost wake-up. */
    static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    @TempDir
    Path tmp;

    /**
     * Waits once on {@code bell} for a change from {@code seen}; true if the wait slept out its whole
     * timeout without the word changing: a lost wake-up (a wait may also end early with nothing
     * rung, a spurious wake-up, which the caller's loop simply waits again after).
     */
    static boolean ranOut(Doorbell bell, int seen) {
        long t0 = System.nanoTime();
        return !bell.await(seen, WAIT_NANOS) && System.nanoTime() - t0 >= WAIT_NANOS;
    }

    @Test
    void aRingWakesAWaiterInAnotherProcessEveryRoundWithoutLosingOne() throws Exception {
        assumeThat(Doorbell.available()).as(Doorbell.unavailableReason()).isTrue();
        int rounds = 300;
        Path file = sharedFile();
        try (Arena arena = Arena.ofShared();
             FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment mapped = ch.map(FileChannel.MapMode.READ_WRITE, 0, FILE_BYTES, arena);
            Doorbell ping = Doorbell.at(mapped, 0);
            Doorbell pong = Doorbell.at(mapped, 64);
            Process child = startChild(file, rounds);
            try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                assertThat(out.readLine()).isEqualTo("ready");
                int timeouts = 0;
                for (int i = 0; i < rounds; i++) {
                    int seen = pong.sequence();
                    ping.ring();
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (pong.sequence() == seen) {
                        if (ranOut(pong, seen)) {
                            timeouts++;
                        }
                        assertThat(System.nanoTime()).as("round %d answered within 30 s", i).isLessThan(deadline);
                    }
                }
                assertThat(out.readLine()).as("the child's waits that ran out their timeout").isEqualTo("done 0");
                assertThat(timeouts).as("this process's waits that ran out their timeout").isZero();
                assertThat(ping.sequence()).isEqualTo(rounds);
                assertThat(pong.sequence()).isEqualTo(rounds);
                assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
                assertThat(child.exitValue()).isZero();
            } finally {
                child.destroyForcibly();
            }
        }
    }

    @Test
    void aWaitNobodyRingsEndsAtItsTimeoutAndSaysSo() {
        try (Arena arena = Arena.ofConfined()) {
            Doorbell bell = Doorbell.at(arena.allocate(64, 64), 0);
            int seen = bell.sequence();
            assertThat(bell.await(seen, TimeUnit.MILLISECONDS.toNanos(20))).isFalse();
            assertThat(bell.sequence()).isEqualTo(seen);
        }
    }

    @Test
    void aRingBeforeTheWaitMakesTheWaitReturnAtOnce() {
        try (Arena arena = Arena.ofConfined()) {
            Doorbell bell = Doorbell.at(arena.allocate(64, 64), 0);
            int seen = bell.sequence();
            bell.ring();
            // the timeout is the test's limit: the wait must not sleep at all
            assertThat(bell.await(seen, WAIT_NANOS)).isTrue();
            assertThat(bell.sequence()).isEqualTo(seen + 1);
        }
    }

    @Test
    void ringsRacingWaitsBetweenThreadsAreNeverLost() throws Exception {
        assumeThat(Doorbell.available()).as(Doorbell.unavailableReason()).isTrue();
        int rounds = 2000;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment words = arena.allocate(128, 64);
            Doorbell request = Doorbell.at(words, 0);
            Doorbell answer = Doorbell.at(words, 64);
            AtomicInteger timeouts = new AtomicInteger();
            CountDownLatch started = new CountDownLatch(1);
            Thread ringer = Thread.ofPlatform().start(() -> {
                int seen = request.sequence();
                started.countDown();
                for (int i = 0; i < rounds; i++) {
                    while (request.sequence() == seen) {
                        if (ranOut(request, seen)) {
                            timeouts.incrementAndGet();
                        }
                    }
                    seen = request.sequence();
                    answer.ring(); // races the other thread's read of the answer and its wait
                }
            });
            started.await();
            for (int i = 0; i < rounds; i++) {
                int seen = answer.sequence();
                request.ring();
                while (answer.sequence() == seen) {
                    if (ranOut(answer, seen)) {
                        timeouts.incrementAndGet();
                    }
                }
            }
            ringer.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(ringer.isAlive()).isFalse();
            assertThat(timeouts.get()).as("waits that slept out their timeout (lost wake-ups)").isZero();
            assertThat(answer.sequence()).isEqualTo(rounds);
        }
    }

    @Test
    void aWordOutsideTheMappingOrOffItsBoundaryIsRefusedNamingTheOffset() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(64, 64);
            assertThatThrownBy(() -> Doorbell.at(m, 2)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("offset 2").hasMessageContaining("4-byte aligned");
            assertThatThrownBy(() -> Doorbell.at(m, 62)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("offset 62");
            assertThatThrownBy(() -> Doorbell.at(MemorySegment.ofArray(new int[4]), 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("native");
            Doorbell bell = Doorbell.at(m, 60);
            assertThatThrownBy(() -> bell.await(bell.sequence(), 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("timeout 0 ns");
        }
    }

    private Path sharedFile() throws Exception {
        Path dir = Files.isDirectory(Path.of("/dev/shm")) && Files.isWritable(Path.of("/dev/shm")) ? Path.of("/dev/shm") : tmp;
        Path file = Files.createTempFile(dir, "strata-doorbell-", ".bell");
        file.toFile().deleteOnExit();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(FILE_BYTES);
            ch.write(java.nio.ByteBuffer.allocate((int) FILE_BYTES));
        }
        return file;
    }

    private static Process startChild(Path file, int rounds) throws Exception {
        String java = System.getProperty("strata.java");
        if (java == null || java.isBlank()) {
            java = ProcessHandle.current().info().command().orElse("java");
        }
        List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx64m",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                DoorbellChild.class.getName(), file.toString(), Integer.toString(rounds)));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }
}
