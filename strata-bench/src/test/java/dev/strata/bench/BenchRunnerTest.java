package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code bench all} and quick runs, end to end over small scenarios (no speed asserted). */
class BenchRunnerTest {
    @TempDir
    Path dir;

    /** A scenario of two paired figures over cheap work, one failing scenario. */
    private static Map<String, Supplier<Scenario>> scenarios() {
        Map<String, Supplier<Scenario>> m = new LinkedHashMap<>();
        m.put("tiny", () -> new Scenario() {
            @Override
            public String name() {
                return "tiny";
            }

            @Override
            public String description() {
                return "two cheap figures";
            }

            @Override
            public List<Figure> run(Options options, List<String> notes) {
                long[] sink = {0};
                Paired p = Trials.paired(3, () -> work(20_000, sink), () -> work(10_000, sink));
                return List.of(Figure.paired("tiny_ratio", "ops/s", "twice the work", p, ">= 0.01"),
                        Figure.exact("tiny_exact", 2, "", "one", 1, ">= 1"));
            }

            @Override
            public List<Series> series() {
                return List.of(new Series("tiny plot", "line", "x", "y", false, new double[] {1, 2}, new double[] {3, 4}));
            }
        });
        m.put("broken", () -> new Scenario() {
            @Override
            public String name() {
                return "broken";
            }

            @Override
            public String description() {
                return "fails";
            }

            @Override
            public List<Figure> run(Options options, List<String> notes) {
                throw new IllegalStateException("no such device");
            }
        });
        return m;
    }

    private static double work(int n, long[] sink) {
        long t0 = System.nanoTime();
        sink[0] += NoiseProbe.computeLoop(n, sink[0]);
        return n / ((System.nanoTime() - t0 + 1) / 1e9);
    }

    @Test
    void benchAllQuickRunsEveryScenarioWritesEachReportAndAnIndexWithoutVerdicts() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Path results = dir.resolve("results");
        List<BenchRunner.Outcome> outcomes = BenchRunner.runAll(scenarios(), new Scenario.Options(true, dir, false), results,
                new PrintStream(bytes, true, StandardCharsets.UTF_8));
        assertThat(outcomes).extracting(BenchRunner.Outcome::scenario).containsExactly("tiny", "broken");
        BenchReport tiny = outcomes.getFirst().report();
        assertThat(tiny.quick()).isTrue();
        assertThat(tiny.figures()).extracting(Figure::verdict).containsOnly(Verdict.NOT_JUDGED);
        assertThat(tiny.figures().getFirst().rounds()).isEqualTo(3);
        assertThat(tiny.noise()).extracting(NoiseProbe.NoiseReading::when).containsExactly("start", "start", "end", "end");
        assertThat(tiny.series()).hasSize(1);
        assertThat(outcomes.get(1).report()).isNull();
        assertThat(outcomes.get(1).failure()).isEqualTo("IllegalStateException: no such device");
        assertThat(results.resolve("tiny.json")).isRegularFile();
        assertThat(results.resolve("tiny.html")).isRegularFile();
        assertThat(ReportWriter.read(results.resolve("tiny.json")).figures()).extracting(Figure::verdict)
                .containsOnly(Verdict.NOT_JUDGED);
        String index = Files.readString(results.resolve("index.html"));
        ReportWriterTest.parse(index);
        assertThat(index).contains("tiny.html").contains("failed: IllegalStateException: no such device");
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(out).contains("=== strata bench tiny --quick ===").contains("not judged (quick)")
                .contains("2 figures measured, not judged (quick)").contains("scenario broken failed");
        assertThat(Files.readString(results.resolve("tiny.html"))).contains("not judged (quick)");
    }

    @Test
    void aFullRunJudgesItsFigures() throws Exception {
        Path results = dir.resolve("full");
        BenchReport r = BenchRunner.run("tiny", scenarios().get("tiny").get(), new Scenario.Options(false, dir, false), results,
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        assertThat(r.figures()).extracting(Figure::verdict).doesNotContain(Verdict.NOT_JUDGED);
        assertThat(r.figures().get(1).verdict()).isEqualTo(Verdict.MET);
        assertThat(r.summary()).startsWith("2 figures: ");
    }
}
