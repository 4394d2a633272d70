package dev.strata.bench;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Progress lines on standard error for anything that takes more than a few seconds: the step
 * being measured, its number out of the total and the time elapsed.
 *
 * <p>Confined to the thread running the scenario.
 */
public final class Progress {
    private final PrintStream out;
    private final int total;
    private final long start = System.nanoTime();
    private int done;

    public Progress(PrintStream out, int totalSteps) {
        this.out = out;
        this.total = totalSteps;
    }

    /** Announces the next step. */
    public void step(String what) {
        done++;
        out.printf(Locale.ROOT, "[%3d/%d %6.1fs] %s%n", done, total, (System.nanoTime() - start) / 1e9, what);
        out.flush();
    }
}
