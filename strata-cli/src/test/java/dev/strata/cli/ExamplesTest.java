package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.serve.ServeEngine;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.node.daemon.NodeDaemon;
import dev.strata.node.peer.PeerAgent;
import java.io.PrintStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The configurations in {@code examples/} start the processes they describe: each is loaded the
 * way {@code -c FILE} loads it (only the model, the ports and the file paths are moved to this
 * test's own), prompts are served, and {@code /metrics} carries the tier, link and store families
 * of every configured tier with its configured capacity; blocks evicted from DEVICE come back
 * from HOST over its link.
 */
class ExamplesTest {
    @TempDir
    static Path dir;
    static Path model;

    @BeforeAll
    static void model() throws Exception {
        model = dir.resolve("tiny-moe");
        ModelSynthesizer.write(new SynthSpec(ModelFamily.QWEN3_MOE, 2, 8, 2, 64, 96, 32, 4, 2, 16, 512, DType.BF16, 21, 1, 4, false),
                model, (d, t, b, tb) -> { });
    }

    static Path example(String name) {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path f = p.resolve("examples").resolve(name);
            if (Files.isRegularFile(f)) {
                return f;
            }
        }
        throw new AssertionError("examples/" + name + " not found above " + Path.of("").toAbsolutePath());
    }

    static StrataConfig load(String example, List<String> overrides) {
        return ConfigLoader.load(ServeFlags.DEFAULTS, example(example), overrides, null, List.of()).conclude();
    }

    @Test
    void singleInstanceServesThroughHostAndDiskTiers() throws Exception {
        StrataConfig c = load("single-instance.yaml", List.of("model.path=" + model, "server.port=0", "server.threads=1",
                "kv.device-blocks=16", "experts.device-slots=4", "tiers.disk.directory=" + dir.resolve("kv-disk")));
        assertThat(c.host()).isNotNull();
        assertThat(c.disk()).isNotNull();
        try (ServeCommand.Running r = ServeCommand.start(c)) {
            String base = "http://127.0.0.1:" + r.port();
            for (int i = 0; i < 6; i++) {
                complete(base, prompt(i, 40)); // 6 prompts of ~10 blocks each through 16 DEVICE blocks: evictions reach HOST
            }
            complete(base, prompt(0, 40)); // the first prompt again: its blocks left DEVICE long ago and come back from the tiers
            String metrics = get(base + "/metrics");
            assertThat(sample(metrics, "strata_kv_hits_total", "location=\"host\"")).as("prompt blocks reloaded from HOST").isPositive();
            assertThat(sample(metrics, "strata_link_transfers_total", "source=\"host\"")).as("the HOST link carried them").isPositive();
            assertTier(metrics, "host", c.host().capacity());
            assertTier(metrics, "disk", c.disk().capacity());
            assertThat(sample(metrics, "strata_store_puts_total", "tier=\"host\"")).as("KV blocks stored in HOST").isPositive();
            assertThat(metrics).contains("strata_store_hits_total{tier=\"disk\"");
            assertThat(sample(metrics, "strata_tier_capacity_bytes", "tier=\"device\"")).as("expert slots in DEVICE").isPositive();
        }
    }

    @Test
    void twoInstancesShareAPoolAndBorrowFromAPeer() throws Exception {
        String unique = "strata-example-test-" + ProcessHandle.current().pid();
        Path shm = Path.of("/dev/shm");
        List<String> overrides = List.of("model.path=" + model, "server.port=0", "server.threads=1",
                "node.rpc=" + shm.resolve(unique + ".rpc"), "tiers.pool.paths=[" + shm.resolve(unique + ".pool") + "]",
                "tiers.pool.capacity=64MiB", "agent.file=" + shm.resolve(unique + ".lend"),
                "peers.files=[" + shm.resolve(unique + ".lend") + "]", "node.channels=4", "experts.device-slots=4",
                "node.hash-version=" + PrefixHasher.VERSION,
                "node.model-fingerprint=" + ServeEngine.fingerprint(model, 16));
        StrataConfig c = load("two-instances.yaml", overrides);
        PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
        List<AutoCloseable> open = new ArrayList<>();
        try {
            NodeDaemon node = NodeDaemon.start(NodeCommand.nodeConfig(c, true), quiet);
            open.add(node);
            PeerAgent agent = PeerAgent.start(PeerCommand.agentConfig(c), quiet);
            open.add(agent);
            ServeCommand.Running a = ServeCommand.start(c);
            open.add(a);
            ServeCommand.Running b = ServeCommand.start(c);
            open.add(b);
            String baseA = "http://127.0.0.1:" + a.port();
            String baseB = "http://127.0.0.1:" + b.port();
            String shared = prompt(7, 60);
            complete(baseA, shared);
            // A publishes its committed blocks on its I/O thread after it answered: wait until all are in the pool's index
            long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            String metricsA = get(baseA + "/metrics");
            while (!(sample(metricsA, "strata_kv_commits_total", "") > 0
                    && sample(metricsA, "strata_kv_link_blocks_total", "link=\"shared_publish\"") >= sample(metricsA, "strata_kv_commits_total", ""))
                    && System.nanoTime() < until) {
                Thread.sleep(20);
                metricsA = get(baseA + "/metrics");
            }
            assertThat(sample(metricsA, "strata_kv_link_blocks_total", "link=\"shared_publish\"")).as("blocks A published, in its metrics")
                    .isPositive().isEqualTo(sample(metricsA, "strata_kv_commits_total", ""));
            complete(baseB, shared);
            String metricsB = get(baseB + "/metrics");
            assertThat(sample(metricsB, "strata_kv_hits_total", "location=\"shared\"")).as("prefix blocks B found in the pool, written by A")
                    .isPositive();
            for (String metrics : List.of(get(baseA + "/metrics"), metricsB)) {
                assertTier(metrics, "peer", c.peer().capacity());
                assertTier(metrics, "host", c.host().capacity());
                assertThat(sample(metrics, "strata_tier_capacity_bytes", "kind=\"pool\"")).as("the pool's capacity")
                        .isEqualTo((double) c.pool().capacity());
                assertThat(metrics).contains("strata_store_puts_total{tier=\"peer\"").contains("strata_peer_alive{");
            }
        } finally {
            try {
                for (int i = open.size() - 1; i >= 0; i--) {
                    open.get(i).close();
                }
            } finally { // the pool outlives its node by design, and the lock files their owners: this test's own go with it
                for (String file : List.of(".pool", ".rpc", ".rpc.lock", ".lend", ".lend.lock")) {
                    Files.deleteIfExists(shm.resolve(unique + file));
                }
            }
        }
        try (var left = Files.list(shm)) {
            assertThat(left.filter(p -> p.getFileName().toString().startsWith(unique)).toList())
                    .as("files this test made in /dev/shm (68 MiB of memory each pool) after it ends").isEmpty();
        }
    }

    static String prompt(int seed, int words) {
        StringBuilder b = new StringBuilder();
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        String[] vocabulary = {"memory", "tier", "block", "expert", "cache", "pool", "peer", "host", "disk", "token", "layer"};
        for (int i = 0; i < words; i++) {
            b.append(vocabulary[r.nextInt(vocabulary.length)]).append(' ');
        }
        return b.toString().strip();
    }

    static void complete(String base, String prompt) throws Exception {
        String body = "{\"prompt\":\"" + prompt + "\",\"max_tokens\":4,\"temperature\":0}";
        HttpResponse<String> res = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
    }

    static String get(String url) throws Exception {
        HttpResponse<String> res = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).isEqualTo(200);
        return res.body();
    }

    /** The tier named {@code tier} is in the tier families with {@code capacity} bytes. */
    static void assertTier(String metrics, String tier, long capacity) {
        assertThat(sample(metrics, "strata_tier_capacity_bytes", "tier=\"" + tier + "\""))
                .as("strata_tier_capacity_bytes of tier %s", tier).isEqualTo((double) capacity);
        assertThat(metrics).contains("strata_tier_used_bytes{tier=\"" + tier + "\"");
    }

    /** The value of the first sample of {@code family} whose labels contain {@code label} ("" for an unlabelled sample); NaN when none. */
    static double sample(String metrics, String family, String label) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(family) + "(?:\\{([^}]*)\\})? (\\S+)$").matcher(metrics);
        while (m.find()) {
            if ((m.group(1) == null ? "" : m.group(1)).contains(label)) {
                return Double.parseDouble(m.group(2).toLowerCase(Locale.ROOT));
            }
        }
        return Double.NaN;
    }
}
