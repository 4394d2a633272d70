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
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

    /** The numbers of the single-machine report: hits of device, host, disk, then recomputed blocks. */
    private static long[] singleNumbers(String out) {
        long[] n = new long[4];
        Matcher tier = Pattern.compile("(?m)^  (device|host|disk) +\\d+ +\\S+ +(\\d+) ").matcher(out);
        while (tier.find()) {
            n[List.of("device", "host", "disk").indexOf(tier.group(1))] = Long.parseLong(tier.group(2));
        }
        Matcher recompute = Pattern.compile("prefill +recompute +(\\d+) blocks").matcher(out);
        assertThat(recompute.find()).as(out).isTrue();
        n[3] = Long.parseLong(recompute.group(1));
        return n;
    }

    /** The numbers of the multi-machine report's "all" row: hits of device, host, disk ("-": 0), then cluster, recomputed. */
    private static long[] allRow(String out) {
        Matcher all = Pattern.compile("(?m)^  all +\\d+ +\\d+ +(\\S+) +(\\S+) +(\\S+) +(\\d+) +(\\d+) ").matcher(out);
        assertThat(all.find()).as(out).isTrue();
        long[] n = new long[5];
        for (int i = 0; i < 5; i++) {
            String v = all.group(i + 1);
            n[i] = v.equals("-") ? 0 : Long.parseLong(v);
        }
        return n;
    }

    @Test
    void oneMachineWithoutAClusterPrintsTheSameNumbersAsTheSingleMachineReport() throws IOException {
        String[] common = {"simulate", "kv", "--trace", trace().toString(), "--device-blocks", "2", "--host-blocks", "1",
                "--policy", "lru"};
        CliRun single = run(common);
        String[] multiArgs = java.util.Arrays.copyOf(common, common.length + 4);
        System.arraycopy(new String[] {"--machines", "1", "--cluster-blocks", "0"}, 0, multiArgs, common.length, 4);
        CliRun multi = run(multiArgs);
        assertThat(single.status()).as(single.err()).isZero();
        assertThat(multi.status()).as(multi.err()).isZero();
        long[] s = singleNumbers(single.out());
        long[] m = allRow(multi.out());
        assertThat(s[0] + s[1] + s[2]).as("some hits to compare").isPositive();
        assertThat(new long[] {m[0], m[1], m[2], m[4]}).containsExactly(s[0], s[1], s[2], s[3]);
        assertThat(m[3]).as("cluster hits").isZero();
        assertThat(multi.out()).contains("policy lru, router round-robin, 1 machine x (device 2, host 1, disk 0 blocks), "
                + "cluster disabled, write-through: 4 requests, 11 block references")
                .contains("total 0 B");
    }

    @Test
    void twoMachinesReadASharedPrefixFromTheCluster() throws IOException {
        // round-robin: r0 [1,2,3] -> m0 computes 3; r1 [7,8] -> m1 computes 2; r2 [1,2,4] -> m0 hits 1,2 locally and
        // computes 4; r3 [1,2,3] -> m1 reads 1,2,3 from the cluster. Every computed block is written once.
        CliRun r = run("simulate", "kv", "--trace", trace().toString(), "--device-blocks", "10", "--policy", "lru",
                "--machines", "2", "--cluster-blocks", "10", "--router", "round-robin");
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains("policy lru, router round-robin, 2 machines x (device 10, host 0, disk 0 blocks), "
                        + "cluster 10 blocks, write-through: 4 requests, 11 block references")
                .contains("cluster reads 3 blocks = 192 MiB, writes 6 blocks = 384 MiB (6 stored, 0 already held), total 576 MiB")
                .contains("cluster of 10 blocks: 6 stored at the end, 0 evicted");
        assertThat(allRow(r.out())).containsExactly(2, 0, 0, 3, 6);
    }

    @Test
    void badMachineAndClusterOptionsEndWithOneLineNamingTheOption() throws IOException {
        String file = trace().toString();
        CliRun zero = run("simulate", "kv", "--trace", file, "--machines", "0");
        assertThat(zero.status()).isEqualTo(2);
        assertThat(zero.err().strip()).isEqualTo("strata: --machines must be at least 1, got 0");
        CliRun negative = run("simulate", "kv", "--trace", file, "--machines", "2", "--cluster-blocks", "-5");
        assertThat(negative.status()).isEqualTo(2);
        assertThat(negative.err().strip()).isEqualTo("strata: --cluster-blocks must not be negative, got -5");
        CliRun router = run("simulate", "kv", "--trace", file, "--machines", "2", "--router", "hash-ring");
        assertThat(router.status()).isEqualTo(2);
        assertThat(router.err().strip()).isEqualTo(
                "strata: --router: unknown router 'hash-ring' (choose round-robin, random, prefix-affinity or least-loaded)");
        CliRun write = run("simulate", "kv", "--trace", file, "--machines", "2", "--cluster-write", "around");
        assertThat(write.status()).isEqualTo(2);
        assertThat(write.err().strip()).isEqualTo("strata: --cluster-write: unknown cluster write policy 'around' (choose through or behind)");
    }
}
