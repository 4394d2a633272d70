package dev.strata.node.rpc;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A test main class run in its own JVM on this test's classpath, with its output lines queued. */
public final class ChildJvm implements AutoCloseable {
    public final Process process;
    private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();

    private ChildJvm(Process process) {
        this.process = process;
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // the child is gone
            }
        });
    }

    /** The java binary: {@code strata.java} (set by surefire), else the one running this JVM. */
    static String javaBinary() {
        String configured = System.getProperty("strata.java");
        if (configured != null && !configured.isBlank()) {
            return configured;
        }
        return ProcessHandle.current().info().command().orElse("java");
    }

    public static ChildJvm start(Class<?> main, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(javaBinary(), "--enable-native-access=ALL-UNNAMED",
                "--add-modules=jdk.incubator.vector", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        return new ChildJvm(new ProcessBuilder(command).redirectErrorStream(true).start());
    }

    /** Waits for a line starting with {@code prefix}; fails naming what came instead. */
    public String expect(String prefix, long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        List<String> seen = new ArrayList<>();
        while (true) {
            long left = deadline - System.nanoTime();
            String line = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
            if (line == null) {
                throw new AssertionError("no line starting with '" + prefix + "' within " + timeoutMillis + " ms from pid "
                        + process.pid() + " (" + (process.isAlive() ? "alive" : "exit status " + process.exitValue()) + "); saw " + seen);
            }
            if (line.startsWith(prefix)) {
                return line;
            }
            seen.add(line);
        }
    }

    /** SIGKILL, and reap. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    public long pid() {
        return process.pid();
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
