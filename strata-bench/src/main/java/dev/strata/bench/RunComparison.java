package dev.strata.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Several full runs of one scenario side by side: each figure's judged quantity, spread and
 * verdict in every run, and whether the figure kept one verdict in all of them. A verdict must
 * survive a second run; this is how a reader checks that it did ({@code strata bench compare}).
 *
 * <p>A row shows what its goal judges: the ratio to the baseline, or the value when the goal
 * names a unit. Rounds are shown where a figure has more than {@link Trials#FULL_ROUNDS}: it was
 * measured on after a first look ({@link Trials#pairedUntilDecided}), or its measure counts many
 * short rounds. A figure missing from some run, or measured in one and not
 * in another, has not kept its verdict. A goal stated from the run's own measurement (the expert
 * pager's step "within 1 µs of the raw copy" measured in that run) can differ between runs; such a
 * row's goal column reads {@value #GOAL_PER_RUN} and each cell carries its run's goal, so that no
 * verdict is shown beside a goal it was not judged against.
 *
 * <p>Immutable; any thread.
 *
 * @param scenario the scenario the runs are of
 * @param runs     a label per run (its file), in the order given
 * @param rows     one per figure, in the order figures first appear across the runs
 */
public record RunComparison(String scenario, List<String> runs, List<Row> rows) {
    /** The goal column of a row whose runs state different goals. */
    public static final String GOAL_PER_RUN = "per run";

    /**
     * One figure across the runs.
     *
     * @param name    the figure's name
     * @param goal    its goal, as every run that has it states it, or {@link #GOAL_PER_RUN} when the runs differ
     * @param figures the figure in each run, in run order; null where a run lacks it
     */
    public record Row(String name, String goal, List<Figure> figures) {
        /** Immutable copy; nulls kept (a run without the figure). */
        public Row {
            figures = java.util.Collections.unmodifiableList(new ArrayList<>(figures));
        }

        /** True when the runs state different goals: each cell shows its own. */
        public boolean goalPerRun() {
            return GOAL_PER_RUN.equals(goal);
        }

        /** The cell of run {@code i} ({@link RunComparison#cell}), with the run's goal when goals differ per run. */
        String cell(int i, boolean markdown) {
            Figure f = figures.get(i);
            String goalText = f == null || !goalPerRun() ? "" : ", goal " + (markdown ? RunComparison.markdownGoal(f.goal()) : f.goal());
            return RunComparison.cell(f) + goalText;
        }

        /** True if every run has the figure, with the same verdict (a figure no run could measure keeps {@code not judged}). */
        public boolean kept() {
            Figure first = figures.get(0);
            return first != null && figures.stream().allMatch(f -> f != null && f.verdict() == first.verdict());
        }
    }

    /** Immutable copies. */
    public RunComparison {
        runs = List.copyOf(runs);
        rows = List.copyOf(rows);
    }

    /**
     * Compares full runs of one scenario.
     *
     * @param labels  a label per report (e.g. its file name), same order
     * @param reports at least two full (not quick) reports of the same scenario
     * @throws IllegalArgumentException naming the label and the problem: fewer than two reports, a
     *                                  quick run (its figures are not judged), or reports of
     *                                  different scenarios
     */
    public static RunComparison of(List<String> labels, List<BenchReport> reports) {
        if (labels.size() != reports.size()) {
            throw new IllegalArgumentException(labels.size() + " labels for " + reports.size() + " reports");
        }
        if (reports.size() < 2) {
            throw new IllegalArgumentException("comparing runs needs at least two reports, got " + reports.size());
        }
        String scenario = reports.get(0).scenario();
        for (int i = 0; i < reports.size(); i++) {
            BenchReport r = reports.get(i);
            if (r.quick()) {
                throw new IllegalArgumentException(labels.get(i) + " is a quick run of '" + r.scenario()
                        + "': its figures are not judged, so it has no verdicts to compare");
            }
            if (!Objects.equals(r.scenario(), scenario)) {
                throw new IllegalArgumentException(labels.get(i) + " is a run of '" + r.scenario() + "', "
                        + labels.get(0) + " of '" + scenario + "': compare runs of one scenario");
            }
        }
        Map<String, Figure[]> byName = new LinkedHashMap<>(); // figure name -> [run] the figure, null if absent
        for (int i = 0; i < reports.size(); i++) {
            for (Figure f : reports.get(i).figures()) {
                byName.computeIfAbsent(f.name(), k -> new Figure[reports.size()])[i] = f;
            }
        }
        List<Row> rows = new ArrayList<>(byName.size());
        for (Map.Entry<String, Figure[]> e : byName.entrySet()) {
            List<String> goals = java.util.Arrays.stream(e.getValue()).filter(Objects::nonNull).map(Figure::goal).distinct().toList();
            String goal = goals.size() == 1 ? goals.getFirst() : GOAL_PER_RUN;
            rows.add(new Row(e.getKey(), goal, java.util.Arrays.asList(e.getValue())));
        }
        return new RunComparison(scenario, labels, rows);
    }

    /**
     * Reads the reports written by {@link ReportWriter#write} and compares them.
     *
     * @throws IOException              when a file cannot be read or is not a report (the message names it)
     * @throws IllegalArgumentException as {@link #of}
     */
    public static RunComparison read(List<Path> files) throws IOException {
        List<BenchReport> reports = new ArrayList<>(files.size());
        List<String> labels = new ArrayList<>(files.size());
        for (Path p : files) {
            try {
                reports.add(ReportWriter.read(p));
            } catch (IOException e) {
                throw new IOException(p + " is not a readable benchmark report: " + e.getMessage(), e);
            }
            labels.add(p.toString());
        }
        return of(labels, reports);
    }

    /** Figures that kept one verdict in every run. */
    public long kept() {
        return rows.stream().filter(Row::kept).count();
    }

    /** E.g. {@code tiers, 3 runs: 33 of 35 figures kept one verdict; changed: a, b}. */
    public String summary() {
        List<String> changed = rows.stream().filter(r -> !r.kept()).map(Row::name).toList();
        return scenario + ", " + runs.size() + " runs: " + kept() + " of " + rows.size() + " figures kept one verdict"
                + (changed.isEmpty() ? "" : "; changed: " + String.join(", ", changed));
    }

    /** One cell: the judged quantity, its spread and the verdict, with the rounds when more than {@link Trials#FULL_ROUNDS}; a dash when absent. */
    static String cell(Figure f) {
        if (f == null) {
            return "—";
        }
        boolean onValue = Goal.parse(f.goal()).onValue();
        double x = onValue ? f.value() : f.ratio();
        double low = onValue ? f.valueLow() : f.ratioLow();
        double high = onValue ? f.valueHigh() : f.ratioHigh();
        String spread = Double.isNaN(low) || Double.isNaN(high) || (low == x && high == x) ? ""
                : " (" + ReportWriter.num(low) + "–" + ReportWriter.num(high) + ")";
        String rounds = f.rounds() > Trials.FULL_ROUNDS ? ", " + f.rounds() + " rounds" : "";
        return ReportWriter.num(x) + spread + " " + f.verdict().label() + rounds;
    }

    /** A goal as the Markdown tables print it: {@code ≥} and {@code ≤} for {@code >=} and {@code <=}. */
    static String markdownGoal(String goal) {
        return goal.replace(">=", "≥").replace("<=", "≤");
    }

    /** The rows a table shows: all, or ({@code changedOnly}) those that did not keep one verdict. */
    private List<Row> shown(boolean changedOnly) {
        return changedOnly ? rows.stream().filter(r -> !r.kept()).toList() : rows;
    }

    /** Prints the rows ({@code changedOnly}: those that did not keep one verdict) as an aligned table, then the summary. */
    public void printTable(PrintStream out, boolean changedOnly) {
        int width = Math.max(6, rows.stream().mapToInt(r -> r.name().length()).max().orElse(6));
        int cellWidth = Math.max(42, rows.stream().flatMap(r -> java.util.stream.IntStream.range(0, runs.size())
                .mapToObj(i -> r.cell(i, false))).mapToInt(String::length).max().orElse(42));
        for (int i = 0; i < runs.size(); i++) {
            out.printf(Locale.ROOT, "run %d: %s%n", i + 1, runs.get(i));
        }
        StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "%-" + width + "s", "figure"));
        for (int i = 0; i < runs.size(); i++) {
            head.append(String.format(Locale.ROOT, "  %-" + cellWidth + "s", "run " + (i + 1)));
        }
        out.println(head.append("  goal").toString().stripTrailing());
        for (Row r : shown(changedOnly)) {
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-" + width + "s", r.name()));
            for (int i = 0; i < runs.size(); i++) {
                line.append(String.format(Locale.ROOT, "  %-" + cellWidth + "s", r.cell(i, false)));
            }
            out.println(line.append("  ").append(r.goal()).append(r.kept() ? "" : "  (changed)"));
        }
        out.println(summary());
    }

    /** The rows ({@code changedOnly}: those that did not keep one verdict) as a Markdown table, as docs/BENCHMARKS.md shows runs. */
    public String markdown(boolean changedOnly) {
        StringBuilder md = new StringBuilder("| figure |");
        for (int i = 0; i < runs.size(); i++) {
            md.append(" run ").append(i + 1).append(" |");
        }
        md.append(" goal |\n|---|");
        md.append("---|".repeat(runs.size())).append("---|\n");
        for (Row r : shown(changedOnly)) {
            md.append("| `").append(r.name()).append("` |");
            for (int i = 0; i < runs.size(); i++) {
                md.append(' ').append(r.cell(i, true)).append(" |");
            }
            md.append(' ').append(markdownGoal(r.goal())).append(" |\n");
        }
        return md.toString();
    }
}
