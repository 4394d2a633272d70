package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.routing.RoutingPhase;
import dev.strata.cache.routing.RoutingTraceHeader;
import dev.strata.cache.routing.RoutingTraceWriter;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PlanSplitCommandTest {
    @TempDir
    Path dir;

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    /** A binary routing trace: 4 layers of 32 experts, top-2, decode steps drawn mostly from a hot set of 9. */
    private Path routingTrace() {
        Path file = dir.resolve("routing.trace");
        RoutingTraceHeader header = new RoutingTraceHeader(4, 32, 2, "test-moe");
        SplittableRandom r = new SplittableRandom(5);
        try (RoutingTraceWriter w = RoutingTraceWriter.create(file, header)) {
            for (int burst = 0; burst < 40; burst++) {
                w.startBurst();
                for (int step = 0; step < 13; step++) {
                    int[] ids = new int[4 * 2];
                    for (int l = 0; l < 4; l++) {
                        int a = r.nextInt(10) < 8 ? r.nextInt(9) : r.nextInt(32);
                        int b;
                        do {
                            b = r.nextInt(10) < 8 ? r.nextInt(9) : r.nextInt(32);
                        } while (b == a);
                        ids[l * 2] = a;
                        ids[l * 2 + 1] = b;
                    }
                    w.step(RoutingPhase.DECODE, 1, ids);
                }
            }
        }
        return file;
    }

    /** A Mooncake-format trace: 7 sessions whose requests share growing prefixes. */
    private Path kvTrace() throws Exception {
        Path file = dir.resolve("kv.jsonl");
        SplittableRandom r = new SplittableRandom(6);
        List<String> lines = new ArrayList<>();
        int[] length = new int[7];
        for (int i = 0; i < 90; i++) {
            int s = r.nextInt(7);
            length[s] += 1 + r.nextInt(3);
            StringBuilder ids = new StringBuilder();
            for (int b = 0; b < length[s]; b++) {
                ids.append(b == 0 ? "" : ", ").append(s * 1000 + b);
            }
            lines.add("{\"timestamp\": " + i * 100 + ", \"input_length\": " + (length[s] * 512 - 37)
                    + ", \"output_length\": 40, \"hash_ids\": [" + ids + "]}");
        }
        Files.write(file, lines);
        return file;
    }

    @Test
    void printsTheChosenSplitBesideTheOracleAndTheFixedSplits() throws Exception {
        CliRun r = run("plan-split", "--routing-trace", routingTrace().toString(), "--trace", kvTrace().toString(), "--split-budget", "9GiB",
                "--expert-bytes", "12MiB", "--kv-block-bytes", "24MiB", "--host-link", "25GB/s", "--recompute-us-per-token", "40",
                "--concurrency", "2", "--show-grid");
        assertThat(r.err()).isEmpty();
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("expert stream: 520 steps, 4 layers x 32 experts, top-2").contains("MV-WSA")
                .contains("oracle (every cap)").contains("50-50").contains("KV-blind (Flux-prop)").contains("admission floor");
        String mvwsa = line(r.out(), "MV-WSA ");
        String oracle = line(r.out(), "oracle (every cap)");
        // the solver's split is the oracle's: same cap, same blocks, ratio 1
        assertThat(mvwsa.substring(30)).isEqualTo(oracle.substring(30));
        assertThat(mvwsa).contains("1.000x");
        assertThat(r.out()).contains("grid (finite differences");
    }

    @Test
    void aBaselineBelowTheFloorIsShownClampedWithTheRulesOwnSplitUnderIt() throws Exception {
        // 35 sequences of 10 blocks: a floor of 350 blocks (8400 MiB) leaves room for 17 expert slots per layer
        CliRun r = run("plan-split", "--routing-trace", routingTrace().toString(), "--trace", kvTrace().toString(), "--split-budget", "9GiB",
                "--expert-bytes", "12MiB", "--kv-block-bytes", "24MiB", "--concurrency", "35", "--context-tokens", "5120");
        assertThat(r.err()).isEmpty();
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("admission floor 350 blocks");
        List<String> lines = r.out().lines().toList();
        // both rules give experts more than 17 slots: each is shown clamped, its own split under it
        for (String name : List.of("50-50", "KV-blind (Flux-prop)")) {
            int at = lines.indexOf(line(r.out(), name));
            int words = name.split(" ").length;
            String deployable = lines.get(at);
            String proposed = lines.get(at + 1);
            assertThat(deployable).as(name).doesNotEndWith("*");
            assertThat(word(deployable, words + 1)).as(name).isEqualTo(17);
            assertThat(word(deployable, words + 2)).as(name).isGreaterThanOrEqualTo(350);
            assertThat(proposed).as(name).startsWith("  as the rule has it").endsWith("*");
            assertThat(word(proposed, 6)).as(name).isGreaterThan(17);
            assertThat(word(proposed, 7)).as(name).isLessThan(350);
        }
    }

    /** The {@code n}-th whitespace-separated word of a row (1-based), as a number. */
    private static long word(String row, int n) {
        return Long.parseLong(row.strip().split("\\s+")[n - 1]);
    }

    @Test
    void badInputEndsWithOneLineAndStatus2() throws Exception {
        Path routing = routingTrace();
        Path kv = kvTrace();
        Path broken = dir.resolve("broken.jsonl");
        Files.writeString(broken, """
                {"timestamp": 0, "input_length": 1024, "output_length": 4, "hash_ids": [1, 2]}
                {"timestamp": 9, "input_length": 1024, "output_length": 4, "hash_ids": [3, "four"]}
                """);
        CliRun bad = run("plan-split", "--routing-trace", routing.toString(), "--trace", broken.toString(), "--split-budget", "9GiB");
        assertThat(bad.status()).isEqualTo(2);
        assertThat(bad.err().strip()).startsWith("strata: ").contains("broken.jsonl:2").contains("hash_ids[1]").contains("four").doesNotContain("\n");
        CliRun size = run("plan-split", "--routing-trace", routing.toString(), "--trace", kv.toString(), "--split-budget", "lots");
        assertThat(size.status()).isEqualTo(2);
        assertThat(size.err().strip()).isEqualTo("strata: --split-budget: not a size: 'lots' (expected e.g. 4096, 64KiB, 8GiB, 2GB)");
        CliRun tiny = run("plan-split", "--routing-trace", routing.toString(), "--trace", kv.toString(), "--split-budget", "64MiB");
        assertThat(tiny.status()).isEqualTo(2);
        assertThat(tiny.err()).startsWith("strata: budget of 67108864 bytes cannot hold the KV floor");
        CliRun missing = run("plan-split", "--routing-trace", dir.resolve("nope.trace").toString(), "--trace", kv.toString(), "--split-budget", "9GiB");
        assertThat(missing.status()).isEqualTo(2);
        assertThat(missing.err().strip()).startsWith("strata: routing trace file not found");
        Path garbage = dir.resolve("garbage.trace");
        Files.write(garbage, new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20});
        CliRun corrupt = run("plan-split", "--routing-trace", garbage.toString(), "--trace", kv.toString(), "--split-budget", "9GiB");
        assertThat(corrupt.status()).isEqualTo(2);
        assertThat(corrupt.err()).startsWith("strata: ").contains("garbage.trace");
    }

    /** --budget is the peer agent's lending budget, --block-tokens the KV cache's block: plan-split refuses both by name. */
    @Test
    void oldSpellingsAreRefused() throws Exception {
        String routing = routingTrace().toString();
        String kv = kvTrace().toString();
        for (String[] old : new String[][] {{"--block-tokens", "512"}, {"--link-bandwidth", "25"}, {"--min-cap", "2"}}) {
            CliRun r = run("plan-split", "--routing-trace", routing, "--trace", kv, "--split-budget", "9GiB", old[0], old[1]);
            assertThat(r.status()).as(old[0]).isEqualTo(2);
            assertThat(r.err()).contains("Unknown option").contains("'" + old[0] + "'");
            assertThat(r.out()).isEmpty();
        }
        CliRun budget = run("plan-split", "--routing-trace", routing, "--trace", kv, "--budget", "9GiB");
        assertThat(budget.status()).isEqualTo(2);
        assertThat(budget.err()).as("picocli names the required spelling first").contains("Missing required option: '--split-budget=SIZE'");
    }

    private static String line(String text, String prefix) {
        return text.lines().filter(l -> l.startsWith(prefix)).findFirst().orElseThrow();
    }
}
