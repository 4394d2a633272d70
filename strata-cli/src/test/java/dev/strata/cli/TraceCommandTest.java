package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TraceCommandTest {
    @TempDir
    Path dir;

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    private static final String[] SMALL = {"--layers", "6", "--experts", "32", "--top-k", "4", "--sessions", "2",
            "--requests", "2", "--decode-steps", "40", "--burst-steps", "10", "--burst-set", "8", "--path-set", "6", "--seed", "5"};

    private static String[] with(String[] head, String... tail) {
        String[] all = Arrays.copyOf(head, head.length + tail.length);
        System.arraycopy(tail, 0, all, head.length, tail.length);
        return all;
    }

    @Test
    void generateThenStatsBinaryAndText() throws Exception {
        Path bin = dir.resolve("t.strace");
        CliRun g = run(with(new String[] {"trace", "generate", "--out", bin.toString()}, SMALL));
        assertThat(g.status()).as(g.err()).isZero();
        assertThat(g.out()).contains("steps").contains("6 layers × 32 experts, top-4, seed 5");
        CliRun s = run("trace", "stats", bin.toString(), "--predict");
        assertThat(s.status()).as(s.err()).isZero();
        assertThat(s.out()).contains("6 layers × 32 experts, top-4").contains("ending clean")
                .contains("steps 164 (4 prefill)").contains("requests 4, sessions 2").contains("per-layer LRU hit ratio by cap")
                .contains("next-layer precision@k");

        Path text = dir.resolve("t.jsonl");
        assertThat(run(with(new String[] {"trace", "generate", "--out", text.toString()}, SMALL)).status()).isZero();
        CliRun st = run("trace", "stats", text.toString());
        assertThat(st.status()).as(st.err()).isZero();
        // the same trace in both forms gives the same summary
        assertThat(st.out().lines().skip(1).toList()).isEqualTo(s.out().lines().skip(1).limit(4).toList());
    }

    @Test
    void theHeadersModelIsNamedByModelId() throws Exception {
        Path bin = dir.resolve("named.strace");
        CliRun g = run(with(new String[] {"trace", "generate", "--out", bin.toString(), "--model-id", "qwen3-test"}, SMALL));
        assertThat(g.status()).as(g.err()).isZero();
        assertThat(run("trace", "stats", bin.toString()).out()).contains("model 'qwen3-test'");
        CliRun old = run(with(new String[] {"trace", "generate", "--out", dir.resolve("old.strace").toString(), "--model", "x"}, SMALL));
        assertThat(old.status()).as("--model is a model directory in serve").isEqualTo(2);
        assertThat(old.err()).contains("Unknown option").contains("'--model'");
    }

    @Test
    void badInputEndsWithOneLineAndStatus2() throws Exception {
        CliRun knob = run(with(new String[] {"trace", "generate", "--out", dir.resolve("x").toString(), "--skew", "-1"}, SMALL));
        assertThat(knob.status()).isEqualTo(2);
        assertThat(knob.err().strip()).isEqualTo("strata: skew must be in [0.0, 8.0], got -1.0");
        CliRun drift = run("trace", "generate", "--out", dir.resolve("y").toString(), "--drift", "sideways");
        assertThat(drift.err().strip()).isEqualTo("strata: --drift must be none, abrupt or gradual, got 'sideways'");

        Path bin = dir.resolve("cut.strace");
        assertThat(run(with(new String[] {"trace", "generate", "--out", bin.toString()}, SMALL)).status()).isZero();
        byte[] all = Files.readAllBytes(bin);
        Files.write(bin, Arrays.copyOf(all, all.length - 30));
        CliRun cut = run("trace", "stats", bin.toString());
        assertThat(cut.status()).isEqualTo(2);
        assertThat(cut.err()).startsWith("strata: routing trace " + bin).contains("ends inside a record");
        assertThat(cut.err().strip().lines().count()).isOne();
        CliRun tolerant = run("trace", "stats", bin.toString(), "--tolerate-truncation");
        assertThat(tolerant.status()).isZero();
        assertThat(tolerant.out()).contains("ending truncated");

        CliRun missing = run("trace", "stats", dir.resolve("absent").toString());
        assertThat(missing.status()).isEqualTo(2);
        assertThat(missing.err()).contains("absent: no such file");
        Path notJson = dir.resolve("bad.jsonl");
        Files.writeString(notJson, "{\"layers\": 2, \"experts\": 4, \"top_k\": 2}\n{\"step\": [[[0, 9], [1, 2]]]}\n");
        CliRun bad = run("trace", "stats", notJson.toString());
        assertThat(bad.status()).isEqualTo(2);
        assertThat(bad.err()).contains("at offset 2, record 0").contains("expert id 9");
    }

    @Test
    void kvStreamsFromTheSyntheticGeneratorAndAMooncakeTrace() throws Exception {
        CliRun syn = run("trace", "kv");
        assertThat(syn.status()).as(syn.err()).isZero();
        assertThat(syn.out()).contains("synthetic KV").contains("LRU hit ratio by capacity");
        Path mc = dir.resolve("mc.jsonl");
        Files.writeString(mc, """
                {"timestamp": 0, "input_length": 1500, "output_length": 10, "hash_ids": [1, 2, 3]}
                {"timestamp": 5, "input_length": 2000, "output_length": 10, "hash_ids": [1, 2, 3, 4]}
                """);
        CliRun m = run("trace", "kv", "--trace", mc.toString());
        assertThat(m.status()).as(m.err()).isZero();
        assertThat(m.out()).contains("7 references, 4 distinct blocks").contains("4: 0.429");
        Files.writeString(mc, "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, \"x\"]}\n");
        CliRun bad = run("trace", "kv", "--trace", mc.toString());
        assertThat(bad.status()).isEqualTo(2);
        assertThat(bad.err()).contains("mc.jsonl:1: hash_ids[1] is \"x\", not an integer");
    }
}
