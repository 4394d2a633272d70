package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.bench.BenchReport;
import dev.strata.bench.Figure;
import dev.strata.bench.Paired;
import dev.strata.bench.ReportWriter;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchCommandTest {
    @TempDir
    Path dir;

    @Test
    void aMissingTraceFailsTheKvScenarioBeforeAnythingIsMeasured() {
        Path missing = dir.resolve("nope.jsonl");
        Path results = dir.resolve("results");
        CliRun r = CliRun.of("bench", "kv", "--trace", missing.toString(), "--out", results.toString(), "--work-dir",
                dir.resolve("work").toString());
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err().strip()).isEqualTo("strata: --trace " + missing + ": no such file");
        assertThat(r.out()).isEmpty();
        assertThat(results).doesNotExist();
    }

    @Test
    void helpOffersAllBesideTheScenariosAndSaysQuickRunsAreNotJudged() {
        CliRun r = CliRun.of("bench", "--help");
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("tiers, all").contains("its figures are not judged").contains("index.html");
        CliRun unknown = CliRun.of("bench", "nosuch");
        assertThat(unknown.err()).contains("all runs every one");
    }

    /** Writes a full run of 'tiers' with one copy figure of nine rounds at {@code ratio} of its baseline; returns the JSON. */
    private Path tiersRun(String name, double ratio, boolean quick) {
        double[] ones = {1, 1, 1, 1, 1, 1, 1, 1, 1};
        double[] subject = ones.clone();
        java.util.Arrays.fill(subject, ratio);
        Figure f = Figure.paired("host_to_device_copy_16KiB", "GB/s", "raw MemorySegment.copy", Paired.of(ones, subject), ">= 0.9");
        return ReportWriter.write(new BenchReport("tiers", "test machine", quick, List.of(quick ? f.unjudged() : f), List.of()),
                dir.resolve(name));
    }

    @Test
    void compareSetsRunsSideBySideAndSaysWhichFiguresChangedTheirVerdict() {
        Path met = tiersRun("one", 0.95, false);
        Path missed = tiersRun("two", 0.85, false);
        CliRun r = CliRun.of("bench", "compare", met.toString(), missed.toString(), "--markdown");
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("| `host_to_device_copy_16KiB` | 0.950 met | 0.850 missed | ≥ 0.9 |")
                .contains("tiers, 2 runs: 0 of 1 figures kept one verdict; changed: host_to_device_copy_16KiB");
        assertThat(CliRun.of("bench", "compare", met.toString(), missed.toString(), "--strict").status()).isEqualTo(1);
        Path again = tiersRun("three", 0.96, false);
        CliRun kept = CliRun.of("bench", "compare", met.toString(), again.toString(), "--strict");
        assertThat(kept.status()).isZero();
        assertThat(kept.out()).contains("tiers, 2 runs: 1 of 1 figures kept one verdict");
    }

    @Test
    void compareRefusesAQuickRunAMissingFileAndASingleRun() {
        Path full = tiersRun("one", 0.95, false);
        Path quick = tiersRun("quick", 0.95, true);
        CliRun q = CliRun.of("bench", "compare", full.toString(), quick.toString());
        assertThat(q.status()).isEqualTo(2);
        assertThat(q.err().strip()).isEqualTo("strata: " + quick + " is a quick run of 'tiers': its figures are not judged, "
                + "so it has no verdicts to compare");
        Path missing = dir.resolve("nope.json");
        CliRun m = CliRun.of("bench", "compare", full.toString(), missing.toString());
        assertThat(m.status()).isEqualTo(2);
        assertThat(m.err().strip()).isEqualTo("strata: RUN " + missing + ": no such file");
        assertThat(CliRun.of("bench", "compare", full.toString()).err()).contains("requires at least 2 values");
        CliRun none = CliRun.of("bench");
        assertThat(none.status()).isEqualTo(2);
        assertThat(none.err()).contains("Missing required parameter: 'SCENARIO'");
    }
}
