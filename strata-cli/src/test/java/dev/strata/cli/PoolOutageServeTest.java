package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.config.StrataConfig;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.node.index.PoolIndexInspector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata serve} with a shared pool keeps serving when the pool fails under it: the node
 * daemon killed with SIGKILL and started again, or the pool file truncated. Every request
 * succeeds with the tokens a server without a pool produces (greedy), {@code /health} says
 * "degraded" (still 200) and names the pool, {@code /metrics} has {@code strata_tier_failed 1};
 * a daemon that comes back is re-attached by itself and the pool is published into again; a
 * server whose pool file faulted closes in bounded time.
 */
class PoolOutageServeTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int PROMPTS = 8;

    @TempDir
    static Path dir;
    static Path model;
    static List<String> expected; // the texts of a server without a pool, prompt by prompt

    private final String unique = "strata-outage-test-" + ProcessHandle.current().pid();
    private final Path rpc = Path.of("/dev/shm", unique + ".rpc");
    private final Path pool = Path.of("/dev/shm", unique + ".pool");

    @BeforeAll
    static void modelAndReference() throws Exception {
        model = dir.resolve("tiny-moe");
        ModelSynthesizer.write(new SynthSpec(ModelFamily.QWEN3_MOE, 2, 8, 2, 64, 96, 32, 4, 2, 16, 512, DType.BF16, 21, 1, 4, false),
                model, (d, t, b, tb) -> { });
        expected = new ArrayList<>();
        try (ServeCommand.Running plain = ServeCommand.start(config(List.of()))) {
            for (int i = 0; i < PROMPTS; i++) {
                expected.add(complete(plain.port(), i));
            }
        }
    }

    @AfterEach
    void removeFiles() throws Exception {
        Files.deleteIfExists(rpc);
        Files.deleteIfExists(Path.of(rpc + ".lock"));
        Files.deleteIfExists(pool);
    }

    private static StrataConfig config(List<String> more) {
        List<String> overrides = new ArrayList<>(List.of("model.path=" + model, "server.port=0", "server.threads=1",
                "kv.device-blocks=24", "experts.device-slots=4"));
        overrides.addAll(more);
        return ConfigLoader.load(ServeFlags.DEFAULTS, null, overrides, null, List.of()).conclude();
    }

    private StrataConfig pooled(String access) {
        return config(List.of("node.rpc=" + rpc, "node.access=" + access, "node.channels=4", "tiers.pool.paths=[" + pool + "]",
                "tiers.pool.capacity=64MiB"));
    }

    private ChildProcess startNode() {
        ChildProcess node = ChildProcess.start("strata node", List.of("node", "--pool", pool.toString(), "--rpc", rpc.toString(),
                "--pool-capacity", "64MiB", "--channels", "4"));
        node.awaitLine(Pattern.compile("strata node ready"), 60_000);
        return node;
    }

    @Test
    void aKilledNodeDaemonFailsNoRequestAndIsReattachedWhenItIsBack() throws Exception {
        ChildProcess node = startNode();
        try (ServeCommand.Running server = ServeCommand.start(pooled("daemon"))) {
            int port = server.port();
            assertThat(complete(port, 0)).isEqualTo(expected.get(0));
            assertThat(complete(port, 1)).isEqualTo(expected.get(1));
            assertThat(health(port).get("status").asText()).isEqualTo("ok");
            assertThat(published()).as("blocks published while the node is up").isPositive();

            ProcessHandle daemon = ProcessHandle.of(node.pid()).orElseThrow();
            daemon.destroyForcibly(); // SIGKILL
            daemon.onExit().get(30, TimeUnit.SECONDS);

            for (int i : new int[] {2, 3, 0, 4}) { // new prompts and one seen before: all served, all the same tokens
                assertThat(complete(port, i)).as("prompt %d with the node down", i).isEqualTo(expected.get(i));
            }
            JsonNode degraded = health(port);
            assertThat(degraded.get("status").asText()).isEqualTo("degraded");
            JsonNode tier = degraded.get("degraded").get(0);
            assertThat(tier.get("kind").asText()).isEqualTo("pool");
            assertThat(tier.get("state").asText()).isEqualTo("unavailable");
            assertThat(tier.get("reason").asText()).contains(rpc.toString());
            String metrics = ExamplesTest.get("http://127.0.0.1:" + port + "/metrics");
            assertThat(ExamplesTest.sample(metrics, "strata_tier_failed", "kind=\"pool\"")).isEqualTo(1.0);
            assertThat(ExamplesTest.sample(metrics, "strata_tier_failures_total", "kind=\"pool\"")).isEqualTo(1.0);
            long before = published();

            node = startNode(); // again, on the same pool
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            int next = 5;
            while (!health(port).get("status").asText().equals("ok") && System.nanoTime() < deadline) {
                int i = next < PROMPTS ? next++ : 5;
                assertThat(complete(port, i)).isEqualTo(expected.get(i));
                Thread.sleep(200);
            }
            assertThat(health(port).get("status").asText()).as("re-attached by itself").isEqualTo("ok");
            while (next < PROMPTS) {
                assertThat(complete(port, next)).isEqualTo(expected.get(next));
                next++;
            }
            assertThat(complete(port, 1)).isEqualTo(expected.get(1));
            metrics = ExamplesTest.get("http://127.0.0.1:" + port + "/metrics");
            assertThat(ExamplesTest.sample(metrics, "strata_tier_failed", "kind=\"pool\"")).isEqualTo(0.0);
            assertThat(ExamplesTest.sample(metrics, "strata_tier_reattached_total", "kind=\"pool\"")).isEqualTo(1.0);
            server.engine().kv().awaitIdle(30, TimeUnit.SECONDS);
            assertThat(published()).as("publishing through the pool resumed").isGreaterThan(before);
        } finally {
            node.stop(10_000);
        }
    }

    @Test
    void aTruncatedPoolFileFailsNoRequestAndTheServerStillClosesInBoundedTime() throws Exception {
        ServeCommand.Running server = ServeCommand.start(pooled("embedded"));
        try {
            int port = server.port();
            assertThat(complete(port, 0)).isEqualTo(expected.get(0));
            assertThat(complete(port, 1)).isEqualTo(expected.get(1));
            try (FileChannel ch = FileChannel.open(pool, StandardOpenOption.WRITE)) {
                ch.truncate(1 << 20); // header and tables stay; the data area is gone under the mapping
            }
            for (int i : new int[] {2, 3, 0, 4, 5}) {
                assertThat(complete(port, i)).as("prompt %d after the truncation", i).isEqualTo(expected.get(i));
            }
            JsonNode degraded = health(port);
            assertThat(degraded.get("status").asText()).isEqualTo("degraded");
            JsonNode tier = degraded.get("degraded").get(0);
            assertThat(tier.get("state").asText()).isEqualTo("failed");
            assertThat(tier.get("reason").asText()).contains("truncated");
            String metrics = ExamplesTest.get("http://127.0.0.1:" + port + "/metrics");
            assertThat(ExamplesTest.sample(metrics, "strata_tier_failed", "kind=\"pool\"")).isEqualTo(1.0);
            assertThat(ExamplesTest.sample(metrics, "strata_tier_capacity_bytes", "kind=\"pool\""))
                    .as("the faulted mapping is not read for metrics").isNaN();
        } finally {
            assertTimeoutPreemptively(Duration.ofSeconds(60), server::close);
        }
    }

    @Test
    void aPoolLargerThanTheFreeSpaceOfItsFileSystemIsRefusedAtStartUpNamingPathSizeAndFreeSpace() throws Exception {
        Path onDisk = dir.resolve("too-large.pool"); // a file system of its own, apart from the memory check of /dev/shm
        long usable = Files.getFileStore(dir).getUsableSpace();
        long gib = usable / (1L << 30) + 2; // more than that file system has free
        CliRun run = assertTimeoutPreemptively(Duration.ofSeconds(120), () -> CliRun.of("serve", "--model", model.toString(),
                "--port", "0", "--threads", "1", "--pool", onDisk.toString(), "--pool-capacity", gib + "GiB", "--node-access", "EMBEDDED"));
        assertThat(run.status()).as(run.out() + run.err() + run.log()).isEqualTo(2);
        assertThat(run.err()).contains(onDisk.toString()).contains("reserving").contains("bytes) free").contains("tiers.pool.capacity");
        assertThat(run.err().lines()).as("one line").hasSize(1);
        assertThat(onDisk).as("the pool file is not left behind").doesNotExist();
    }

    /** Blocks published in the pool's index now, read without attaching. */
    private long published() {
        return PoolIndexInspector.inspect(List.of(pool)).orElseThrow().published();
    }

    /** Greedy completion of prompt {@code i}: its text; the request must succeed. */
    private static String complete(int port, int i) throws Exception {
        String body = "{\"prompt\":\"" + ExamplesTest.prompt(100 + i, 60) + "\",\"max_tokens\":6,\"temperature\":0}";
        HttpResponse<String> res = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/v1/completions")).timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        return JSON.readTree(res.body()).get("choices").get(0).get("text").asText();
    }

    private static JsonNode health(int port) throws Exception {
        return JSON.readTree(ExamplesTest.get("http://127.0.0.1:" + port + "/health"));
    }
}
