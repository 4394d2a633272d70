package dev.strata.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One {@code strata} subcommand running as a child JVM: started with this JVM's own {@code java}
 * binary and class path (so the child runs exactly the code the parent runs, under
 * {@code bin/strata}, an IDE or a test), its standard output and error merged and read by a
 * daemon thread that keeps the last lines for error messages and waits for a ready line.
 *
 * <p>Design note (no orphans): {@link #stop} asks the child to stop with SIGTERM (the
 * subcommands close cleanly on it), waits, and kills it with SIGKILL after the grace period;
 * children are also told the parent's pid ({@code --exit-with}) so that they end themselves when
 * the parent dies without running its shutdown hooks.
 *
 * <p>Threads: {@link #start} and {@link #stop} from any thread; {@link #stop} is idempotent.
 */
final class ChildProcess {
    private static final int TAIL_LINES = 40;

    private final String name;
    private final Process process;
    private final ArrayDeque<String> tail = new ArrayDeque<>(); // last lines of output, guarded by itself
    private final List<Watch> watches = new ArrayList<>(); // guarded by tail

    private record Watch(Pattern pattern, CompletableFuture<Matcher> found) {
    }

    private ChildProcess(String name, Process process) {
        this.name = name;
        this.process = process;
        Thread.ofPlatform().daemon().name("strata-child-" + name).start(this::pump);
    }

    /**
     * The command line that runs {@code strata args...} in a new JVM like this one: this JVM's
     * {@code java}, the flags Strata needs, {@code $STRATA_JAVA_OPTS}, {@code -Dstrata.home} when set,
     * and this JVM's class path (absolute or relative to the working directory, which the child shares).
     *
     * @throws IllegalStateException if this JVM's class path is unknown
     */
    static List<String> command(List<String> args) {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        String classPath = System.getProperty("java.class.path");
        if (classPath == null || classPath.isBlank()) {
            throw new IllegalStateException("cannot start child processes: this JVM's class path (java.class.path) is empty");
        }
        if (!Files.isExecutable(java)) {
            throw new IllegalStateException("cannot start child processes: " + java + " (this JVM's java) is not executable");
        }
        List<String> cmd = new ArrayList<>(List.of(java.toString(), "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-XX:+UseSerialGC", "-Xmx512m"));
        String extra = System.getenv("STRATA_JAVA_OPTS"); // bin/strata's extra JVM flags reach the children too
        if (extra != null && !extra.isBlank()) {
            cmd.addAll(List.of(extra.strip().split("\\s+")));
        }
        String home = System.getProperty("strata.home");
        if (home != null) {
            cmd.add("-Dstrata.home=" + home);
        }
        cmd.addAll(List.of("-cp", classPath, StrataCommand.class.getName()));
        cmd.addAll(args);
        return cmd;
    }

    /** Starts {@code strata args...} as a child; {@code name} labels its errors. */
    static ChildProcess start(String name, List<String> args) {
        ProcessBuilder pb = new ProcessBuilder(command(args)).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.PIPE);
        try {
            return new ChildProcess(name, pb.start());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + " (" + String.join(" ", args) + "): " + e.getMessage(), e);
        }
    }

    String name() {
        return name;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /**
     * Waits for a line of the child's output that matches {@code pattern} (lines already printed
     * count).
     *
     * @throws IllegalStateException naming the child, its exit status and its last lines if it ends
     *                               first or the time runs out
     */
    Matcher awaitLine(Pattern pattern, long timeoutMillis) {
        CompletableFuture<Matcher> found = new CompletableFuture<>();
        synchronized (tail) {
            for (String line : tail) {
                Matcher m = pattern.matcher(line);
                if (m.find()) {
                    return m;
                }
            }
            watches.add(new Watch(pattern, found));
        }
        process.onExit().thenRun(() -> found.completeExceptionally(new IllegalStateException("exited")));
        try {
            return found.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            String why = e instanceof TimeoutException ? "did not get ready within " + timeoutMillis / 1000 + " s"
                    : "ended with status " + exitStatus();
            throw new IllegalStateException(name + " (pid " + pid() + ") " + why + "; its last output:\n" + tail());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + name, e);
        }
    }

    /** The child's last lines of output, indented. */
    String tail() {
        synchronized (tail) {
            StringBuilder s = new StringBuilder();
            for (String line : tail) {
                s.append("    ").append(line).append('\n');
            }
            return s.toString();
        }
    }

    private String exitStatus() {
        try {
            return process.waitFor(2, TimeUnit.SECONDS) ? Integer.toString(process.exitValue()) : "unknown (still running)";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }

    /**
     * Stops the child: SIGTERM, up to {@code graceMillis} for it to close, then SIGKILL.
     *
     * @return true if it had to be killed
     */
    boolean stop(long graceMillis) {
        if (!process.isAlive()) {
            return false;
        }
        process.destroy();
        try {
            if (process.waitFor(graceMillis, TimeUnit.MILLISECONDS)) {
                return false;
            }
            process.destroyForcibly();
            process.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        return true;
    }

    private void pump() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                synchronized (tail) {
                    if (tail.size() == TAIL_LINES) {
                        tail.removeFirst();
                    }
                    tail.addLast(line);
                    for (var it = watches.iterator(); it.hasNext(); ) {
                        Watch w = it.next();
                        Matcher m = w.pattern().matcher(line);
                        if (m.find()) {
                            w.found().complete(m);
                            it.remove();
                        }
                    }
                }
            }
        } catch (IOException e) {
            // the child is gone; its exit status tells the rest
        }
    }
}
