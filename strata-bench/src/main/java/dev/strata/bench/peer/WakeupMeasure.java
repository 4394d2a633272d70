package dev.strata.bench.peer;

import dev.strata.bench.Figure;
import dev.strata.memory.shm.Doorbell;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * The physical floor of a cross-process revocation: one thread of this process waking a thread of
 * another that sleeps on a futex ({@link Doorbell}) on a word of a shared file. The revocation
 * path makes at least one such wake-up (the agent's ring to the borrower's event thread), so
 * revoke-to-callback is judged as a ratio to it.
 *
 * <p>Design: a child JVM maps a small file in the same directory as the lending file and sleeps on
 * the {@code ping} bell. Each round this process waits {@link #IDLE_NANOS} (so the child is
 * asleep in the kernel, as an event thread between polls is), writes {@link System#nanoTime()}
 * into the file and rings {@code ping}; the child reads the clock as soon as it wakes, writes the
 * difference back and rings {@code pong}. {@code System.nanoTime()} is {@code CLOCK_MONOTONIC} on
 * Linux, one clock for every process of the machine, so the difference is the one-way wake-up.
 * {@link #sample} may be called several times (before and after the revocation rounds, so both
 * see the same machine state); the histogram accumulates.
 *
 * <p>Threads: the measuring thread.
 */
public final class WakeupMeasure implements AutoCloseable {
    /** How long the waker waits before each ring, ns: long enough for the other side to be asleep in the kernel. */
    static final long IDLE_NANOS = 100_000;
    private static final long FILE_BYTES = 4096;
    private static final long PING = 0;       // int: rung by this process
    private static final long PONG = 64;      // int: rung by the child
    private static final long SENT_AT = 128;  // long: System.nanoTime() just before the ring
    private static final long WOKE_IN = 192;  // long: ns from SENT_AT to the child's wake-up
    private static final long STOP = 256;     // long: 1 asks the child to end
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(5);

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final Path file;
    private final Process child;
    private final Arena arena;
    private final MemorySegment mapped; // FILE_BYTES, shared with the child
    private final Doorbell ping;
    private final Doorbell pong;
    private final Histogram wakeups = new Histogram(3); // ns per one-way wake-up
    private boolean warmed;

    private WakeupMeasure(Path file, Process child, Arena arena, MemorySegment mapped) {
        this.file = file;
        this.child = child;
        this.arena = arena;
        this.mapped = mapped;
        this.ping = mapped != null ? Doorbell.at(mapped, PING) : null;
        this.pong = mapped != null ? Doorbell.at(mapped, PONG) : null;
    }

    /**
     * Starts the child JVM and waits until it sleeps on the bell.
     *
     * Where doorbells are unavailable ({@link Doorbell#available}) nothing is started: {@link #sample}
     * does nothing and {@link #ratios} reports the figures missing, with the reason.
     *
     * @param dir where the shared file goes (the lending file's directory, a tmpfs such as /dev/shm)
     */
    public static WakeupMeasure start(Path dir) throws IOException {
        if (!Doorbell.available()) {
            return new WakeupMeasure(null, null, null, null);
        }
        Path file = dir.resolve("strata-bench-wakeup-" + ProcessHandle.current().pid() + ".bell");
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            ch.write(java.nio.ByteBuffer.allocate((int) FILE_BYTES), 0);
        }
        String java = System.getProperty("strata.java");
        if (java == null || java.isBlank()) {
            java = ProcessHandle.current().info().command().orElse("java");
        }
        Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx64m", "-cp",
                System.getProperty("java.class.path"), WakeupMeasure.class.getName(), file.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        Arena arena = Arena.ofShared();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            if (!"ready".equals(line)) {
                throw new IllegalStateException("the wake-up child JVM (pid " + child.pid() + ") said " + line + " instead of ready");
            }
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                return new WakeupMeasure(file, child, arena, ch.map(FileChannel.MapMode.READ_WRITE, 0, FILE_BYTES, arena));
            }
        } catch (IOException | RuntimeException e) {
            arena.close();
            child.destroyForcibly();
            Files.deleteIfExists(file);
            throw e;
        }
    }

    /** Adds {@code rounds} wake-ups to the histogram; the first call first runs a tenth as many unrecorded (warm-up). */
    public void sample(int rounds) {
        if (child == null) {
            return;
        }
        if (!warmed) {
            warmed = true;
            for (int i = 0; i < Math.max(1, rounds / 10); i++) {
                once();
            }
        }
        for (int i = 0; i < rounds; i++) {
            wakeups.recordValue(Math.max(1, once()));
        }
    }

    /** One round: idle, ring, wait for the answer; returns the child's one-way wake-up, ns. */
    private long once() {
        LockSupport.parkNanos(IDLE_NANOS);
        int seen = pong.sequence();
        mapped.set(ValueLayout.JAVA_LONG, SENT_AT, System.nanoTime());
        ping.ring();
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (pong.sequence() == seen) {
            if (System.nanoTime() > deadline || !child.isAlive()) {
                throw new IllegalStateException("the wake-up child JVM (pid " + child.pid() + ", "
                        + (child.isAlive() ? "alive" : "exited") + ") did not answer within 5 s");
            }
            pong.await(seen, TimeUnit.MILLISECONDS.toNanos(100));
        }
        return (long) LONG.getVolatile(mapped, WOKE_IN);
    }

    /** The one-way wake-ups recorded so far, ns. */
    public Histogram histogram() {
        return wakeups.copy();
    }

    /**
     * The cross-process revoke-to-callback figures of {@code revocation} (as
     * {@link RevocationLatencyMeasure#figures} names them for {@code label}) again, as ratios to
     * this wake-up: p50 against its p50 (goal {@code <= 3}), p99 against its p99 (goal {@code <= 10}).
     */
    public List<Figure> ratios(List<Figure> revocation, String label) {
        List<Figure> out = new ArrayList<>();
        long n = wakeups.getTotalCount();
        for (String[] p : new String[][] {{"p50", "50", "<= 3"}, {"p99", "99", "<= 10"}}) {
            String name = "peer_revoke_to_callback_" + p[0] + "_" + label;
            Figure f = revocation.stream().filter(x -> x.name().equals(name)).findFirst().orElse(null);
            String ratioName = name + "_vs_wakeup";
            String baseline = "cross-process futex wake-up " + p[0];
            if (f == null || n == 0) {
                out.add(Figure.missing(ratioName, "us", baseline, p[2], f == null ? "no figure " + name
                        : "no cross-process wake-up measured: " + (Doorbell.available() ? "no rounds" : Doorbell.unavailableReason())));
                continue;
            }
            Figure r = Figure.against(f, ratioName, baseline, wakeups.getValueAtPercentile(Double.parseDouble(p[1])) / 1e3, p[2]);
            out.add(p[0].equals("p50") ? r.withNote(n + " one-way wake-ups of a thread of another process asleep on a futex in a "
                    + "shared file, sampled before and after the revocation rounds") : r);
        }
        return out;
    }

    /** Stops the child, unmaps and removes the file. */
    @Override
    public void close() {
        if (child == null) {
            return;
        }
        try {
            mapped.set(ValueLayout.JAVA_LONG, STOP, 1L);
            ping.ring();
            if (!child.waitFor(10, TimeUnit.SECONDS)) {
                child.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            child.destroyForcibly();
        } finally {
            arena.close();
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot remove " + file + ": " + e.getMessage(), e);
            }
        }
    }

    /** The child JVM: {@code FILE}; answers every ring of ping with its wake-up time and a ring of pong until asked to stop. */
    public static void main(String[] args) throws IOException {
        try (Arena arena = Arena.ofShared();
             FileChannel ch = FileChannel.open(Path.of(args[0]), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, FILE_BYTES, arena);
            Doorbell ping = Doorbell.at(m, PING);
            Doorbell pong = Doorbell.at(m, PONG);
            int seen = ping.sequence();
            System.out.println("ready");
            System.out.flush();
            while (true) {
                while (ping.sequence() == seen) {
                    ping.await(seen, TimeUnit.SECONDS.toNanos(1));
                    if (ProcessHandle.current().parent().map(p -> !p.isAlive()).orElse(true)) {
                        return; // the measuring process is gone
                    }
                }
                long woke = System.nanoTime();
                seen = ping.sequence();
                if ((long) LONG.getVolatile(m, STOP) != 0) {
                    return;
                }
                m.set(ValueLayout.JAVA_LONG, WOKE_IN, woke - (long) LONG.getVolatile(m, SENT_AT));
                pong.ring();
            }
        }
    }
}
