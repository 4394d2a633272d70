package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.engine.serve.ServeEngine;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelCommandTest {
    @TempDir
    Path dir;

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    @Test
    void synthThenInspect() throws Exception {
        Path m = dir.resolve("m");
        CliRun s = run("model", "synth", "--arch", "mixtral", "--layers", "2", "--experts", "6", "--top-k", "2", "--hidden", "48",
                "--intermediate", "40", "--heads", "6", "--kv-heads", "2", "--vocab", "400", "--shards", "2",
                "--topic-clusters", "3", "--dtype", "f16", "--seed", "9", "--out", m.toString());
        assertThat(s.status()).as(s.err()).isZero();
        assertThat(s.out()).contains("wrote mixtral model to " + m).contains("in 2 file(s), vocabulary 400 (tokenizer 400), seed 9");
        assertThat(s.out().lines()).as("stdout holds the report only").hasSize(1).noneMatch(l -> l.startsWith("strata "));
        assertThat(s.log().lines()).as("progress goes to stderr, one format").isNotEmpty()
                .allMatch(l -> l.startsWith("strata model: writing weights: ")).anyMatch(l -> l.contains("100%"));
        assertThat(Files.exists(m.resolve("model.safetensors.index.json"))).isTrue();
        CliRun i = run("model", "inspect", m.toString());
        assertThat(i.status()).as(i.err()).isZero();
        assertThat(i.out()).contains("MixtralForCausalLM (mixtral)")
                .contains("layers 2, hidden 48, heads 6 (kv 2, head_dim 8), vocab 400")
                .contains("MoE: 2 of 2 layers, 6 experts, top-2, expert width 40, norm_topk_prob true")
                .contains("one expert: 11.3 KiB (3 tensors)")
                .contains("chat template default")
                .contains("model.layers.0.block_sparse_moe.experts.0.w1.weight")
                .doesNotContain("experts.1.w1")
                .contains("model-00001-of-00002.safetensors");
        assertThat(i.out()).contains("model fingerprint " + ServeEngine.fingerprint(m, 16) + " for 16-token blocks");
        CliRun other = run("model", "inspect", "--block-tokens", "32", m.toString());
        assertThat(other.status()).as(other.err()).isZero();
        assertThat(other.out()).contains("model fingerprint " + ServeEngine.fingerprint(m, 32) + " for 32-token blocks");
        CliRun all = run("model", "inspect", "--tensors", m.toString());
        assertThat(all.out()).contains("model.layers.1.block_sparse_moe.experts.5.w2.weight");
    }

    @Test
    void badInputEndsWithOneClearLine() throws Exception {
        CliRun a = run("model", "synth", "--arch", "gpt2", "--out", dir.resolve("x").toString());
        assertThat(a.status()).isEqualTo(2);
        assertThat(a.err()).contains("architecture 'gpt2' is not supported");
        CliRun b = run("model", "synth", "--arch", "llama", "--heads", "4", "--kv-heads", "3", "--out", dir.resolve("y").toString());
        assertThat(b.status()).isEqualTo(2);
        assertThat(b.err()).contains("--kv-heads 3 must divide --heads 4");
        Files.createDirectories(dir.resolve("empty"));
        CliRun c = run("model", "inspect", dir.resolve("empty").toString());
        assertThat(c.status()).isEqualTo(2);
        assertThat(c.err()).contains("config.json").contains("no such file");
    }
}
