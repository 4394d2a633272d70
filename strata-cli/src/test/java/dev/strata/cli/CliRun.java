package dev.strata.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;

/**
 * One run of the {@code strata} command inside the test JVM: its exit status and what it wrote
 * to standard output and standard error.
 *
 * <p>Threads: swaps {@link System#out} for the duration of the run; tests that use it must not run
 * in parallel with other tests that print.
 */
record CliRun(int status, String out, String err) {

    /** Runs {@code strata args...} as {@code bin/strata} would, capturing both streams. */
    static CliRun of(String... args) {
        var cli = StrataCommand.commandLine();
        StringWriter err = new StringWriter();
        cli.setErr(new PrintWriter(err, true));
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            int status = cli.execute(args);
            return new CliRun(status, out.toString(StandardCharsets.UTF_8), err.toString());
        } finally {
            System.setOut(saved);
        }
    }
}
