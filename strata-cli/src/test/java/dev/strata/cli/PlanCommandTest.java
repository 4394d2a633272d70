package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code strata plan}: the seed's capacity table, JSON, config.json input and one-line errors with status 2. */
class PlanCommandTest {
    private static final String[] SEED = {"plan", "--preset", "llama-2-70b", "--tp", "4", "--device-capacity", "80GB",
            "--weights-per-device", "32.5GB", "--overhead", "2GB", "--host-kv", "256GB"};

    @TempDir
    Path dir;

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    private static String[] with(String[] base, String... more) {
        String[] all = java.util.Arrays.copyOf(base, base.length + more.length);
        System.arraycopy(more, 0, all, base.length, more.length);
        return all;
    }

    @Test
    void reproducesTheSeedsTable() {
        CliRun r = run(SEED);
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains("llama-2-70b: 80 layers, 64 attention heads, 8 KV heads x 128 dims, fp16 KV")
                .contains("tp 4: 2 KV heads per rank")
                .contains("block     16 tokens = 1.31 MB per rank")
                .containsPattern("device\\s+45\\.50 GB\\s+34,713\\s+135\\n")
                .containsPattern("host\\s+256\\.00 GB\\s+195,312\\s+762\\n")
                .containsPattern("host->device\\s+24\\.00 GB/s\\s+54\\.6 us\\s+274\\s+4,384");
        assertThat(r.err()).isEmpty();
    }

    @Test
    void jsonOutput() throws Exception {
        CliRun r = run(with(SEED, "--disk-kv-size", "1TB", "--decode-step", "20ms", "--disk-link", "3.5GB/s", "--json"));
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.log()).as("nothing is logged beside the report").isEmpty();
        JsonNode j = new ObjectMapper().readTree(r.out()); // the whole of standard output is the JSON report
        assertThat(j.get("tiers").get(0).get("blocks").asLong()).isEqualTo(34_713L);
        assertThat(j.get("tiers").get(2).get("tier").asText()).isEqualTo("disk");
        assertThat(j.get("decode_step_ns").asLong()).isEqualTo(20_000_000L);
        // 20 ms × 3.5 GB/s / 1,310,720 B = 53.4
        assertThat(j.get("links").get(1).get("blocks_per_step").asLong()).isEqualTo(53L);
    }

    @Test
    void theClusterTierIsSharedByTheMachinesAndReachedOverTheNetwork() throws Exception {
        CliRun r = run(with(SEED, "--cluster-capacity", "1TB", "--machines", "8"));
        assertThat(r.status()).as(r.err()).isZero();
        // 250 GB per rank in values of 1,310,776 bytes (a rank's block and the 56-byte header); 10 Gbit/s by default
        assertThat(r.out()).containsPattern("cluster\\s+250\\.00 GB\\s+190,726\\s+745\\n")
                .contains("cluster   1.00 TB shared by 8 machines: 190,726 blocks of the model (745 sequences)")
                .contains("23,840 blocks (93 sequences) per machine when they share no prefix")
                .containsPattern("cluster->device\\s+1\\.25 GB/s\\s+1\\.0 ms\\s+14\\s+224");
        CliRun json = run(with(SEED, "--cluster-capacity", "1TB", "--machines", "8", "--cluster-bandwidth", "100Gbit/s", "--json"));
        assertThat(json.status()).as(json.err()).isZero();
        JsonNode j = new ObjectMapper().readTree(json.out());
        assertThat(j.get("cluster").get("blocks").asLong()).isEqualTo(190_726L);
        assertThat(j.get("cluster").get("machines").asInt()).isEqualTo(8);
        assertThat(j.get("cluster").get("blocks_per_machine").asLong()).isEqualTo(23_840L);
        JsonNode link = j.get("links").get(1);
        assertThat(link.get("link").asText()).isEqualTo("cluster->device");
        assertThat(link.get("bytes_per_second").asLong()).isEqualTo(12_500_000_000L);
        assertThat(link.get("blocks_per_step").asLong()).isEqualTo(143L); // 15 ms × 12.5 GB/s / 1,310,776 B
        assertError(run(with(SEED, "--machines", "2")), "strata: --machines 2 shares a cluster: give its memory with --cluster-capacity SIZE");
        assertError(run(with(SEED, "--cluster-capacity", "1TB", "--cluster-link", "fast")),
                "strata: --cluster-link: not a bandwidth: 'fast' (expected e.g. 24GB/s, 900MiB/s, 10Gbit/s)");
    }

    @Test
    void readsAConfigJson() throws Exception {
        Path config = Files.writeString(dir.resolve("config.json"), """
                {"hidden_size": 8192, "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
                 "torch_dtype": "bfloat16"}
                """);
        CliRun r = run("plan", "--model-config", config.toString(), "--tp", "4", "--device-capacity", "80GB",
                "--weights-per-device", "32.5GB", "--overhead", "2GB", "--host-kv", "256GB", "--kv-dtype", "fp8");
        assertThat(r.status()).as(r.err()).isZero();
        // fp8 halves the block: twice the blocks of the fp16 table
        assertThat(r.out()).contains("fp8_e4m3 KV").contains("655.36 KB per rank").containsPattern("device\\s+45\\.50 GB\\s+69,427\\s+271");
        CliRun fromDir = run("plan", "--model", dir.toString(), "--tp", "4", "--device-capacity", "80GB",
                "--weights-per-device", "32.5GB", "--overhead", "2GB", "--host-kv", "256GB", "--kv-dtype", "fp8");
        assertThat(fromDir.status()).as(fromDir.err()).isZero();
        assertThat(fromDir.out()).as("--model DIR reads DIR/config.json").isEqualTo(r.out());
    }

    @Test
    void errorsAreOneLineAndStatus2() throws Exception {
        assertError(run("plan", "--preset", "llama-2-70b", "--tp", "4", "--device-capacity", "30GB", "--weights-per-device", "32.5GB",
                "--overhead", "2GB"),
                "strata: weights (32.50 GB) + overhead (2.00 GB) = 34.50 GB leave no room for KV on a device of 30.00 GB");
        assertError(run("plan", "--preset", "gpt-5", "--device-capacity", "80GB", "--weights-per-device", "1GB"),
                "strata: unknown model preset 'gpt-5' (choose llama-2-7b, llama-2-70b, llama-3-8b, llama-3-70b, mixtral-8x7b, "
                        + "qwen3-30b-a3b, qwen3-32b)");
        assertError(run("plan", "--preset", "llama-2-70b", "--tp", "3", "--device-capacity", "80GB", "--weights-per-device", "1GB"),
                "strata: tensor-parallel degree 3 does not divide the 64 attention heads of llama-2-70b");
        assertError(run("plan", "--device-capacity", "80GB", "--weights-per-device", "1GB"),
                "strata: give the model with exactly one of --preset NAME, --model DIR or --model-config FILE");
        assertError(run("plan", "--model", dir.resolve("nope").toString(), "--device-capacity", "80GB", "--weights-per-device", "1GB"),
                "strata: --model " + dir.resolve("nope") + " is not a directory");
        assertError(run(with(SEED, "--pool-capacity", "lots")),
                "strata: --pool-capacity: not a size: 'lots' (expected e.g. 4096, 64KiB, 8GiB, 2GB)");
        assertError(run(with(SEED, "--host-link", "fast")),
                "strata: --host-link: not a bandwidth: 'fast' (expected e.g. 24GB/s, 900MiB/s, 10Gbit/s)");
        assertError(run(with(SEED, "--kv-dtype", "fp64")),
                "strata: unknown KV dtype 'fp64' (choose fp32, fp16, bf16, fp8_e4m3, fp8_e5m2 or int8)");
        Path bad = Files.writeString(dir.resolve("config.json"), "{\"hidden_size\": 4096, \"num_attention_heads\": 32}");
        assertError(run("plan", "--model-config", bad.toString(), "--device-capacity", "80GB", "--weights-per-device", "1GB"),
                "strata: model config " + bad + ": field 'num_hidden_layers' is missing");
    }

    /** The old spellings (a bind address in serve, the YAML file elsewhere) are refused by name. */
    @Test
    void oldSpellingsAreRefused() {
        String[] modern = {"--preset", "llama-2-70b", "--device-capacity", "80GB", "--weights-per-device", "32.5GB"};
        for (String[] old : new String[][] {{"--host", "256GB"}, {"--pool", "1TB"}, {"--disk", "1TB"}, {"--seq-tokens", "4096"}}) {
            CliRun r = run(with(with(new String[] {"plan"}, modern), old));
            assertThat(r.status()).as(old[0]).isEqualTo(2);
            assertThat(r.err()).contains("Unknown option").contains("'" + old[0] + "'");
            assertThat(r.out()).isEmpty();
        }
        CliRun device = run("plan", "--preset", "llama-2-70b", "--device", "80GB", "--weights-per-device", "32.5GB");
        assertThat(device.status()).isEqualTo(2);
        assertThat(device.err()).as("picocli names the required spelling first").contains("Missing required option: '--device-capacity=SIZE'");
        CliRun config = run("plan", "--config", dir.resolve("config.json").toString(), "--device-capacity", "80GB",
                "--weights-per-device", "32.5GB");
        assertThat(config.status()).isEqualTo(2);
        assertThat(config.err()).contains("Unknown option").contains("'--config'");
    }

    private static void assertError(CliRun r, String line) {
        assertThat(r.status()).as(r.out()).isEqualTo(2);
        assertThat(r.err()).isEqualTo(line + System.lineSeparator());
        assertThat(r.out()).isEmpty();
    }
}
