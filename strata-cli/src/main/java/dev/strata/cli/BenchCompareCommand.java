package dev.strata.cli;

import dev.strata.bench.RunComparison;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata bench compare RUN.json RUN.json...}: full runs of one scenario side by side, each
 * figure's judged quantity, spread and verdict per run, and how many figures kept one verdict
 * ({@link RunComparison}). Runs on the main thread.
 */
@Command(name = "compare", mixinStandardHelpOptions = true,
        description = "Sets full runs of one scenario side by side (the bench-results/<scenario>.json of each run): every"
                + " figure's ratio (or value, for a goal on the value), spread and verdict in each run, and how many figures kept"
                + " one verdict in all of them.")
final class BenchCompareCommand implements Callable<Integer> {

    @Parameters(arity = "2..*", paramLabel = "RUN", description = "a report written by 'strata bench <scenario>' (two or more)")
    List<Path> runs;

    @Option(names = "--changed", description = "show only the figures whose verdict changed (or that are missing from a run)")
    boolean changedOnly;

    @Option(names = "--markdown", description = "print a Markdown table, as docs/BENCHMARKS.md shows runs")
    boolean markdown;

    @Option(names = "--strict", description = "exit with status 1 when a figure did not keep one verdict")
    boolean strict;

    @Override
    public Integer call() throws Exception {
        for (Path p : runs) {
            if (!java.nio.file.Files.isRegularFile(p)) {
                throw new IllegalArgumentException("RUN " + p + ": no such file");
            }
        }
        RunComparison c;
        try {
            c = RunComparison.read(runs);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e.getMessage(), e);
        }
        if (markdown) {
            System.out.print(c.markdown(changedOnly));
            System.out.println();
            System.out.println(c.summary());
        } else {
            c.printTable(System.out, changedOnly);
        }
        return strict && c.kept() < c.rows().size() ? 1 : 0;
    }
}
