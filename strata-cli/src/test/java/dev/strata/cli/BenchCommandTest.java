package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
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
}
