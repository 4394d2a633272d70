package dev.strata.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;

/**
 * One run of the {@code strata} command inside the test JVM: its exit status and what it wrote
 * to standard output and standard error: {@code err} holds picocli's error writer (usage errors and
 * the line that ends a failed command), {@code log} what the run logged to {@link System#err}.
 *
 * <p>Threads: swaps {@link System#out} and {@link System#err} for the duration of the run; tests
 * that use it must not run in parallel with other tests that print.
 */
record CliRun(int status, String out, String err, String log) {

    /** Runs {@code strata args...} as {@code bin/strata} would, capturing both streams. */
    static CliRun of(String... args) {
        PrintStream savedOut = System.out;
        PrintStream savedErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
        try { // built after the swap, so that every writer picocli makes reaches the captured streams
            var cli = StrataCommand.commandLine();
            StringWriter err = new StringWriter();
            cli.setErr(new PrintWriter(err, true));
            int status = cli.execute(args);
            return new CliRun(status, out.toString(StandardCharsets.UTF_8), err.toString(), log.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(savedOut);
            System.setErr(savedErr);
        }
    }
}
