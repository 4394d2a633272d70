package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ServeCommandTest {
    @TempDir
    Path dir;

    @Test
    void servesTheModelDirectoryWithTheGivenOptions() throws Exception {
        Path model = dir.resolve("tiny-llama");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.LLAMA, 3), model, (d, t, b, tb) -> { });
        ServeCommand cmd = new ServeCommand();
        new CommandLine(cmd).parseArgs("--model", model.toString(), "--port", "0", "--api-key", "k1", "--threads", "1",
                "--kv-blocks", "8", "--block-tokens", "16", "--header-timeout-ms", "5000", "--max-idle-connections", "32");
        try (ServeCommand.Running r = cmd.start()) {
            assertThat(r.config().host()).isEqualTo("127.0.0.1");
            assertThat(r.config().headerTimeoutMillis()).isEqualTo(5000);
            assertThat(r.config().maxIdleConnections()).isEqualTo(32);
            HttpClient client = HttpClient.newHttpClient();
            String base = "http://127.0.0.1:" + r.port();
            HttpResponse<String> models = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/models"))
                    .header("Authorization", "Bearer k1").timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(models.statusCode()).isEqualTo(200);
            assertThat(new ObjectMapper().readTree(models.body()).get("data").get(0).get("id").asText()).isEqualTo("tiny-llama");
            HttpResponse<String> tooMany = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                    .header("Authorization", "Bearer k1").timeout(Duration.ofSeconds(10))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"hello\",\"max_tokens\":128}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(tooMany.statusCode()).isEqualTo(400); // 8 blocks × 16 tokens − 1 is the limit
            assertThat(tooMany.body()).contains("max_tokens").contains("127");
            HttpResponse<String> ok = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                    .header("Authorization", "Bearer k1").timeout(Duration.ofSeconds(10))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"hello\",\"max_tokens\":5}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
            JsonNode usage = new ObjectMapper().readTree(ok.body()).get("usage");
            assertThat(usage.get("completion_tokens").asInt()).isBetween(1, 5);
        }
    }

    @Test
    void splitBudgetServesWithALiveExpertKvSplitAndExportsIt() throws Exception {
        Path model = dir.resolve("tiny-moe");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3_MOE, 5), model, (d, t, b, tb) -> { });
        ServeCommand cmd = new ServeCommand();
        new CommandLine(cmd).parseArgs("--model", model.toString(), "--port", "0", "--api-key", "k2", "--threads", "1",
                "--kv-blocks", "8", "--block-tokens", "16", "--expert-cap", "4", "--split-budget", "256KiB");
        try (ServeCommand.Running r = cmd.start()) {
            assertThat(r.engine().split()).isNotNull();
            assertThat(r.engine().split().tier().capacity()).isEqualTo(256 * 1024);
            assertThat(r.engine().pager().units()).isEqualTo(4);
            HttpClient client = HttpClient.newHttpClient();
            String base = "http://127.0.0.1:" + r.port();
            HttpResponse<String> ok = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                    .header("Authorization", "Bearer k2").timeout(Duration.ofSeconds(10))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"hello\",\"max_tokens\":5}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
            HttpResponse<String> metrics = client.send(HttpRequest.newBuilder(URI.create(base + "/metrics"))
                    .header("Authorization", "Bearer k2").timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(metrics.statusCode()).isEqualTo(200);
            long expertBytes = 4L * r.engine().pager().bytesPerUnit();
            assertThat(metrics.body()).contains("strata_split_budget_bytes 262144\n")
                    .contains("strata_split_bytes{side=\"experts\"} " + expertBytes + "\n")
                    .contains("strata_split_bytes{side=\"kv\"} " + (262144 - expertBytes) + "\n")
                    .contains("strata_split_resizes_total{outcome=\"applied\"}");
        }
    }

    /** A small synthesized Llama in the test's directory. */
    private Path tinyModel() throws java.io.IOException {
        Path model = dir.resolve("tiny-llama");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.LLAMA, 3), model, (d, t, b, tb) -> { });
        return model;
    }

    /** {@code strata serve} of {@code model} on a free port, one thread, 8 KV blocks, and {@code more} arguments. */
    private static ServeCommand.Running serveTiny(Path model, String... more) {
        java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of("--model", model.toString(), "--port", "0", "--threads",
                "1", "--kv-blocks", "8"));
        args.addAll(java.util.List.of(more));
        ServeCommand cmd = new ServeCommand();
        new CommandLine(cmd).parseArgs(args.toArray(String[]::new));
        return cmd.start();
    }

    @Test
    void modelLoadChoosesWhetherTheWeightsAreCopiedOrMapped() throws Exception {
        Path model = tinyModel();
        try (ServeCommand.Running r = serveTiny(model)) {
            assertThat(r.engine().model().files().load()).isEqualTo(dev.strata.engine.model.WeightLoad.COPY);
        }
        try (ServeCommand.Running r = serveTiny(model, "--model-load", "map")) {
            assertThat(r.engine().model().files().load()).isEqualTo(dev.strata.engine.model.WeightLoad.MAP);
        }
        CliRun inspect = CliRun.of("inspect", "config", "--model", model.toString(), "--set", "model.load=map");
        assertThat(inspect.status()).isZero();
        assertThat(inspect.out()).contains("weights mapped");
        CliRun bad = CliRun.of("serve", "--model", model.toString(), "--port", "0", "--model-load", "mmap");
        assertThat(bad.status()).isEqualTo(2);
        assertThat(bad.err().strip()).isEqualTo("strata: --model-load (model.load): unknown value 'mmap' (expected one of [copy, map])");
    }

    @Test
    void kvPolicyPicksThePolicyOfTheServedEnginesKvSlots() throws Exception {
        Path model = tinyModel();
        try (ServeCommand.Running r = serveTiny(model)) {
            assertThat(r.engine().kv().policyName()).isEqualTo("adaptive-reach");
            assertThat(r.engine().kv().recomputeWhenFaster()).as("kv.recompute-when-faster by default").isTrue();
        }
        try (ServeCommand.Running r = serveTiny(model, "--set", "kv.recompute-when-faster=false")) {
            assertThat(r.engine().kv().recomputeWhenFaster()).isFalse();
        }
        try (ServeCommand.Running r = serveTiny(model, "--set", "kv.policy=lru")) {
            assertThat(r.engine().kv().policyName()).isEqualTo("lru");
            assertThat(r.engine().kv().stats().policy()).isEqualTo("lru");
        }
        try (ServeCommand.Running r = serveTiny(model, "--set", "kv.policy=lru", "--kv-policy", "tiny-lfu")) {
            assertThat(r.engine().kv().policyName()).as("the shorthand flag over --set").isEqualTo("tiny-lfu");
        }
        CliRun inspect = CliRun.of("inspect", "config", "--model", model.toString(), "--set", "kv.policy=prefix-aware");
        assertThat(inspect.status()).isZero();
        assertThat(inspect.out()).contains("kv: { block-tokens: 16, device-blocks: 256, policy: prefix-aware, recompute-when-faster: true }");
        assertThat(CliRun.of("inspect", "config", "--model", model.toString(), "--kv-policy", "priority-lru").out())
                .contains("policy: priority-lru, ");
        assertThat(CliRun.of("inspect", "config", "--model", model.toString()).out()).contains("policy: adaptive-reach, ");
        CliRun bad = CliRun.of("serve", "--model", model.toString(), "--port", "0", "--set", "kv.policy=fifo");
        assertThat(bad.status()).isEqualTo(2);
        assertThat(bad.err().strip()).isEqualTo("strata: kv.policy: unknown eviction policy 'fifo'"
                + " (choose priority-lru, lru, tiny-lfu, prefix-aware or adaptive-reach)");
        CliRun badFlag = CliRun.of("serve", "--model", model.toString(), "--port", "0", "--kv-policy", "fifo");
        assertThat(badFlag.status()).isEqualTo(2);
        assertThat(badFlag.err().strip()).isEqualTo("strata: --kv-policy (kv.policy): unknown eviction policy 'fifo'"
                + " (choose priority-lru, lru, tiny-lfu, prefix-aware or adaptive-reach)");
    }

    @Test
    void badArgumentsEndWithOneLineAndStatusTwo() throws Exception {
        CliRun missing = CliRun.of("serve", "--model", dir.resolve("nope").toString());
        assertThat(missing.status()).isEqualTo(2);
        assertThat(missing.err().strip()).isEqualTo("strata: --model " + dir.resolve("nope") + " is not a directory (model.path)");

        CliRun port = CliRun.of("serve", "--model", dir.toString(), "--port", "70000");
        assertThat(port.status()).isEqualTo(2);
        assertThat(port.err()).contains("--port").contains("70000");

        Path notADirectory = dir.resolve("a-file");
        java.nio.file.Files.writeString(notADirectory, "x");
        CliRun noCache = CliRun.of("serve", "--models-dir", notADirectory.resolve("models").toString()); // no --model: the demo model
        assertThat(noCache.status()).isEqualTo(2);
        assertThat(noCache.err()).startsWith("strata: cannot create the model cache").contains(notADirectory.toString());

        CliRun durability = CliRun.of("serve", "--model", dir.toString(), "--port", "0", "--peer-durability", "sometimes");
        assertThat(durability.status()).isEqualTo(2);
        assertThat(durability.err().strip()).isEqualTo("strata: --peer-durability (tiers.peer.durability): unknown value 'sometimes' (expected one of [backed, lossy])");

        Path lend = dir.resolve("agent.lend");
        CliRun noHost = CliRun.of("serve", "--model", dir.toString(), "--port", "0", "--peer", lend.toString());
        assertThat(noHost.status()).isEqualTo(2);
        assertThat(noHost.err()).contains("--peer-kv 64MiB needs --host-kv below it");

        CliRun noFile = CliRun.of("serve", "--model", dir.toString(), "--port", "0", "--host-kv", "1MiB", "--peer", lend + "," + lend);
        assertThat(noFile.status()).isEqualTo(2);
        assertThat(noFile.err().strip()).startsWith("strata: --peer " + lend + ": no such lending file");

        CliRun splitWithoutPager = CliRun.of("serve", "--model", dir.toString(), "--port", "0", "--split-budget", "1MiB");
        assertThat(splitWithoutPager.status()).isEqualTo(2);
        assertThat(splitWithoutPager.err()).contains("split of 1048576 bytes needs paged experts");

        CliRun badSplit = CliRun.of("serve", "--model", dir.toString(), "--port", "0", "--split-budget", "lots");
        assertThat(badSplit.status()).isEqualTo(2);
        assertThat(badSplit.err().strip()).startsWith("strata: --split-budget (split.budget): ").contains("lots");

        CliRun splitWithoutBudget = CliRun.of("serve", "--model", dir.toString(), "--port", "0", "--expert-cap", "4",
                "--set", "split.enabled=true");
        assertThat(splitWithoutBudget.status()).isEqualTo(2);
        assertThat(splitWithoutBudget.err()).contains("split.budget is 0").contains("tiers.device.capacity");

        CliRun notAModel = CliRun.of("serve", "--model", dir.toString(), "--port", "0");
        assertThat(notAModel.status()).isEqualTo(2);
        assertThat(notAModel.err()).startsWith("strata: ");
    }

    @Test
    void aPublicAddressWithoutAnApiKeyIsRefusedUnlessInsecureIsGiven() throws Exception {
        Path model = dir.resolve("tiny-llama");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.LLAMA, 3), model, (d, t, b, tb) -> { });

        ServeCommand insecure = new ServeCommand();
        new CommandLine(insecure).parseArgs("--model", model.toString(), "--host", "0.0.0.0", "--port", "0", "--insecure",
                "--threads", "1", "--kv-blocks", "8");
        java.io.PrintStream savedErr = System.err;
        java.io.ByteArrayOutputStream log = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(log, true, java.nio.charset.StandardCharsets.UTF_8));
        ServeCommand.Running running;
        try {
            running = insecure.start();
        } finally {
            System.setErr(savedErr);
        }
        try (ServeCommand.Running r = running) {
            assertThat(r.config().host()).isEqualTo("0.0.0.0");
            assertThat(log.toString(java.nio.charset.StandardCharsets.UTF_8)).contains("strata serve: warning: ").contains("0.0.0.0")
                    .contains("without an API key");
            HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                    + r.port() + "/health")).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).isEqualTo(200);
        }

        CliRun refused = CliRun.of("serve", "--model", model.toString(), "--host", "0.0.0.0", "--port", "0");
        assertThat(refused.status()).isEqualTo(2);
        assertThat(refused.err()).startsWith("strata: ").contains("server.host", "0.0.0.0", "--api-key KEY", "--insecure",
                "server.insecure: true");

        ServeCommand keyed = new ServeCommand();
        new CommandLine(keyed).parseArgs("--model", model.toString(), "--host", "0.0.0.0", "--port", "0", "--api-key", "k1",
                "--threads", "1", "--kv-blocks", "8");
        try (ServeCommand.Running r = keyed.start()) {
            assertThat(r.config().apiKey()).isEqualTo("k1");
        }

        ServeCommand loopback = new ServeCommand();
        new CommandLine(loopback).parseArgs("--model", model.toString(), "--host", "127.0.0.1", "--port", "0", "--threads", "1",
                "--kv-blocks", "8");
        try (ServeCommand.Running r = loopback.start()) {
            assertThat(r.config().apiKey()).isNull();
        }
    }
}
