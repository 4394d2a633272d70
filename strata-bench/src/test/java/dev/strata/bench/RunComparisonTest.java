package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs of one scenario side by side: which figures kept their verdict, and how each cell reads. */
class RunComparisonTest {
    @TempDir
    Path dir;

    /** A figure of nine paired rounds against a baseline of 1 whose ratios are {@code ratios}. */
    private static Figure copy(String name, double... ratios) {
        double[] ones = new double[ratios.length];
        java.util.Arrays.fill(ones, 1);
        return Figure.paired(name, "GB/s", "raw", Paired.of(ones, ratios), ">= 0.9");
    }

    private static double[] nine(double low, double high) {
        return new double[] {low, low, low, low, (low + high) / 2, high, high, high, high};
    }

    private static BenchReport run(String scenario, boolean quick, Figure... figures) {
        return new BenchReport(scenario, "test machine", quick, List.of(figures), List.of());
    }

    @Test
    void aFigureKeepsItsVerdictOnlyWhenEveryRunJudgedItTheSame() {
        Figure unmeasured = Figure.missing("e", "GB/s", "fio", ">= 0.9", "fio absent");
        BenchReport one = run("tiers", false, copy("a", nine(0.95, 0.97)), copy("b", nine(0.85, 0.95)), copy("c", nine(0.5, 0.6)),
                Figure.exact("d", 3, "ops/s", "none", Double.NaN, ">= 2 ops/s"), unmeasured, copy("f", nine(0.5, 0.6)));
        BenchReport two = run("tiers", false, copy("a", nine(0.93, 0.99)), copy("b", nine(0.8, 0.85)), copy("c", nine(0.5, 0.6)),
                unmeasured, Figure.missing("f", "GB/s", "raw", ">= 0.9", "not measured: the pool could not be created"));
        RunComparison c = RunComparison.of(List.of("r1", "r2"), List.of(one, two));
        assertThat(c.rows()).extracting(RunComparison.Row::name).containsExactly("a", "b", "c", "d", "e", "f");
        assertThat(c.rows()).extracting(RunComparison.Row::kept).containsExactly(true, false, true, false, true, false);
        assertThat(c.kept()).isEqualTo(3);
        assertThat(c.summary()).isEqualTo("tiers, 2 runs: 3 of 6 figures kept one verdict; changed: b, d, f");
        assertThat(c.rows().get(3).figures().get(1)).as("d is missing from the second run").isNull();
    }

    @Test
    void aCellShowsWhatTheGoalJudgesAndTheRoundsOfASecondLook() {
        Figure ratio = copy("a", nine(0.85, 0.95));
        assertThat(RunComparison.cell(ratio)).isEqualTo("0.900 (0.850–0.950) inconclusive");
        double[] ones = new double[27];
        double[] subject = new double[27];
        java.util.Arrays.fill(ones, 1);
        java.util.Arrays.fill(subject, 0.8);
        Figure looked = Figure.paired("b", "GB/s", "raw", new Paired(ones, subject, 2), ">= 0.9");
        assertThat(RunComparison.cell(looked)).isEqualTo("0.800 missed, 27 rounds");
        Figure onValue = Figure.sampled("store", "ops/s", "map", new Sample(new double[] {4.2e6, 4.4e6, 4.3e6}), 1.7e7,
                ">= 5000000 ops/s");
        assertThat(RunComparison.cell(onValue)).isEqualTo("4.30e+06 (4.20e+06–4.40e+06) missed");
        assertThat(RunComparison.cell(null)).isEqualTo("—");
        assertThat(RunComparison.cell(Figure.missing("e", "GB/s", "fio", ">= 0.9", "fio absent"))).isEqualTo("- not judged");
    }

    @Test
    void theTablesListEveryFigureOrOnlyThoseThatChanged() {
        BenchReport one = run("kv", false, copy("a", nine(0.95, 0.97)), copy("b", nine(0.85, 0.95)));
        BenchReport two = run("kv", false, copy("a", nine(0.95, 0.97)), copy("b", nine(0.95, 0.97)));
        RunComparison c = RunComparison.of(List.of("first.json", "second.json"), List.of(one, two));
        assertThat(c.markdown(true)).isEqualTo("""
                | figure | run 1 | run 2 | goal |
                |---|---|---|---|
                | `b` | 0.900 (0.850–0.950) inconclusive | 0.960 (0.950–0.970) met | ≥ 0.9 |
                """);
        assertThat(c.markdown(false)).contains("| `a` | 0.960 (0.950–0.970) met | 0.960 (0.950–0.970) met | ≥ 0.9 |");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        c.printTable(new PrintStream(bytes, true, StandardCharsets.UTF_8), true);
        String table = bytes.toString(StandardCharsets.UTF_8);
        assertThat(table).contains("run 1: first.json").contains("run 2: second.json").doesNotContain("\na ");
        assertThat(table.lines().filter(l -> l.startsWith("b "))).singleElement().asString()
                .contains("inconclusive").contains("met").endsWith("(changed)");
        assertThat(table.strip()).endsWith("kv, 2 runs: 1 of 2 figures kept one verdict; changed: b");
    }

    @Test
    void aGoalThatDependsOnTheRunIsShownInEachRunsCell() {
        // a goal stated from the run's own baseline (e.g. "within 1 us of the raw copy"): 480 us misses
        // the second run's bound and would meet the first run's, so one goal column would misstate a verdict
        Figure first = Figure.sampled("step", "ns", "raw copy", new Sample(new double[] {569e3, 570e3, 571e3}), 570e3,
                "<= 571000 ns");
        Figure second = Figure.sampled("step", "ns", "raw copy", new Sample(new double[] {487e3, 488e3, 489e3}), 476e3,
                "<= 477000 ns");
        Figure same = copy("a", nine(0.95, 0.97));
        RunComparison c = RunComparison.of(List.of("r1", "r2"), List.of(run("experts", false, first, same),
                run("experts", false, second, same)));
        RunComparison.Row step = c.rows().get(0);
        assertThat(step.goal()).isEqualTo("per run");
        assertThat(c.markdown(false)).isEqualTo("""
                | figure | run 1 | run 2 | goal |
                |---|---|---|---|
                | `step` | 570000.000 (569000.000–571000.000) met, goal ≤ 571000 ns | 488000.000 (487000.000–489000.000) missed, goal ≤ 477000 ns | per run |
                | `a` | 0.960 (0.950–0.970) met | 0.960 (0.950–0.970) met | ≥ 0.9 |
                """);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        c.printTable(new PrintStream(bytes, true, StandardCharsets.UTF_8), false);
        assertThat(bytes.toString(StandardCharsets.UTF_8).lines().filter(l -> l.startsWith("step "))).singleElement()
                .asString().contains("missed, goal <= 477000 ns").contains("met, goal <= 571000 ns")
                .contains("per run");
    }

    @Test
    void reportsAreReadFromTheFilesTheRunsWrote() throws IOException {
        Path first = ReportWriter.write(run("tiers", false, copy("a", nine(0.95, 0.97))), dir.resolve("one"));
        Path second = ReportWriter.write(run("tiers", false, copy("a", nine(0.5, 0.6))), dir.resolve("two"));
        RunComparison c = RunComparison.read(List.of(first, second));
        assertThat(c.runs()).containsExactly(first.toString(), second.toString());
        assertThat(c.rows()).singleElement().satisfies(r -> {
            assertThat(r.kept()).isFalse();
            assertThat(r.figures()).extracting(Figure::verdict).containsExactly(Verdict.MET, Verdict.MISSED);
        });
        Path notAReport = Files.writeString(dir.resolve("notes.json"), "[1, 2]");
        assertThatThrownBy(() -> RunComparison.read(List.of(first, notAReport)))
                .isInstanceOf(IOException.class).hasMessageStartingWith(notAReport + " is not a readable benchmark report");
    }

    @Test
    void quickRunsOtherScenariosAndSingleRunsAreRefusedNamingTheRun() {
        BenchReport full = run("tiers", false, copy("a", nine(0.95, 0.97)));
        assertThatThrownBy(() -> RunComparison.of(List.of("a.json", "q.json"), List.of(full, run("tiers", true))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("q.json is a quick run of 'tiers': its figures are not judged, so it has no verdicts to compare");
        assertThatThrownBy(() -> RunComparison.of(List.of("a.json", "k.json"), List.of(full, run("kv", false))))
                .hasMessage("k.json is a run of 'kv', a.json of 'tiers': compare runs of one scenario");
        assertThatThrownBy(() -> RunComparison.of(List.of("a.json"), List.of(full)))
                .hasMessage("comparing runs needs at least two reports, got 1");
    }
}
