package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimulateCommandTest {
    @TempDir
    Path dir;

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    private Path trace() throws IOException {
        Path p = dir.resolve("t.jsonl");
        Files.writeString(p, """
                {"timestamp": 0, "input_length": 1500, "output_length": 9, "hash_ids": [1, 2, 3]}
                {"timestamp": 10, "input_length": 600, "output_length": 9, "hash_ids": [7, 8]}
                {"timestamp": 20, "input_length": 1100, "output_length": 9, "hash_ids": [1, 2, 4]}
                {"timestamp": 30, "input_length": 1536, "output_length": 9, "hash_ids": [1, 2, 3]}
                """);
        return p;
    }

    @Test
    void printsTheTierTableLinksAndBeladyForEachPolicy() throws IOException {
        CliRun r = run("simulate", "kv", "--trace", trace().toString(), "--device-blocks", "2", "--host-blocks", "2",
                "--disk-blocks", "0", "--policy", "lru,prefix-aware", "--bytes-per-token", "128KiB");
        assertThat(r.err()).isEmpty();
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("4 requests, 11 block references, 6 distinct blocks; block 512 tokens x 128KiB/token = 64 MiB")
                .contains("policy lru:").contains("policy prefix-aware:")
                .contains("device -> host").contains("host -> device").contains("disabled")
                .contains("Belady (optimal, one cache of 4 blocks = the tiers' sum)");
    }

    @Test
    void theTracesBlockSizeIsTraceBlockTokensAndTheCacheFlagIsRefused() throws IOException {
        CliRun r = run("simulate", "kv", "--trace", trace().toString(), "--trace-block-tokens", "512", "--policy", "lru");
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains("block 512 tokens x 128KiB/token = 64 MiB");
        CliRun other = run("simulate", "kv", "--trace", trace().toString(), "--trace-block-tokens", "256", "--policy", "lru");
        assertThat(other.status()).as("the trace's hash_ids are blocks of 512 tokens").isEqualTo(2);
        assertThat(other.err()).contains("spans 6 blocks of 256 tokens");
        CliRun zero = run("simulate", "kv", "--trace", trace().toString(), "--trace-block-tokens", "0");
        assertThat(zero.status()).isEqualTo(2);
        assertThat(zero.err().strip()).isEqualTo("strata: --trace-block-tokens must be positive, got 0");
        CliRun old = run("simulate", "kv", "--trace", trace().toString(), "--block-tokens", "512");
        assertThat(old.status()).isEqualTo(2);
        assertThat(old.err()).contains("Unknown option").contains("'--block-tokens'");
    }

    @Test
    void aBadTraceLineOrArgumentEndsWithOneLineAndStatus2() throws IOException {
        Path bad = dir.resolve("bad.jsonl");
        Files.writeString(bad, "{\"timestamp\": 0, \"input_length\": 1500, \"output_length\": 9, \"hash_ids\": [1, 2, 3]}\n"
                + "{\"timestamp\": 5, \"input_length\": -1, \"output_length\": 9, \"hash_ids\": []}\n");
        CliRun r = run("simulate", "kv", "--trace", bad.toString());
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err().strip()).isEqualTo("strata: " + bad + ":2: input_length -1 is negative");
        CliRun policy = run("simulate", "kv", "--trace", trace().toString(), "--policy", "mru");
        assertThat(policy.status()).isEqualTo(2);
        assertThat(policy.err()).contains("unknown eviction policy 'mru'");
        CliRun missing = run("simulate", "kv", "--trace", dir.resolve("none.jsonl").toString());
        assertThat(missing.status()).isEqualTo(2);
        assertThat(missing.err()).contains("none.jsonl: no such trace file");
        CliRun negative = run("simulate", "kv", "--trace", trace().toString(), "--host-blocks", "-3");
        assertThat(negative.status()).isEqualTo(2);
        assertThat(negative.err()).contains("host capacity must not be negative, got -3 blocks");
    }
}
