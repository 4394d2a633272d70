package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole {@code /metrics} page of a running server whose engine has every metrics writer (KV
 * manager, expert pager, peer client, PEER tiers, expert rebalancer) is valid exposition text:
 * one HELP and one TYPE per family, every sample in its family's group, counters ending in
 * {@code _total}, no repeated series, label values escaped, histograms cumulative.
 */
class MetricsExpositionTest {
    private static final String MODEL = "synth-qwen3-moe";

    @TempDir
    static Path dir;

    @Test
    void metricsPageOfAServerWithPeersIsValidExpositionText() throws Exception {
        Path model = dir.resolve("peer-moe");
        SynthSpec spec = new SynthSpec(ModelFamily.QWEN3_MOE, 2, 6, 2, 48, 40, 24, 6, 2, 8, 400, DType.BF16, 78, 1, 3, false);
        ModelSynthesizer.write(spec, model, (d, t, b, tb) -> { });
        LocalLender a = new LocalLender(LocalLender.Config.of(0, "peer-a", 2L << 20));
        LocalLender b = new LocalLender(LocalLender.Config.of(1, "peer-b", 2L << 20));
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
        ServeMetrics metrics = new ServeMetrics();
        try (PeerClient peers = PeerClient.of(List.of(a, b), "best-fit");
             ServeEngine engine = new ServeEngine(model, ServeEngine.Options.builder().blockTokens(8).kvBlocks(16).expertCap(3)
                     .kvPolicy(PolicyKind.LRU).hostKv(4L << 20).peers(peers, 1L << 20, 1L << 20).rebalancePeriod(Duration.ofSeconds(3600)).conclude());
             ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, metrics);
             OpenAiServer server = OpenAiServer.start(ServerConfig.local(0, MODEL, 256, 64), engine, generator, metrics)) {
            String base = "http://127.0.0.1:" + server.port();
            for (String body : List.of("{\"prompt\":[5,6,7,8,9,10,11,12,13],\"max_tokens\":6}",
                    "{\"prompt\":[5,6,7,8,9,10,11,12,14],\"max_tokens\":6,\"stream\":true}",
                    "{\"prompt\":[5],\"temperature\":9}")) {
                client.send(HttpRequest.newBuilder(URI.create(base + "/v1/completions")).timeout(Duration.ofSeconds(30))
                        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            }
            engine.rebalancer().rebalance();
            HttpResponse<String> page = client.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).timeout(Duration.ofSeconds(30))
                    .GET().build(), HttpResponse.BodyHandlers.ofString());
            assertThat(page.statusCode()).isEqualTo(200);

            Map<String, ExpositionFormat.Family> families = ExpositionFormat.parse(page.body());

            // every writer contributed, each family once
            assertThat(families.keySet()).contains("strata_serve_requests_total", "strata_serve_ttft_seconds",
                    "strata_kv_hits_total", "strata_expert_hits_total", "strata_peer_borrowed_bytes",
                    "strata_peer_drain_seconds", "strata_peer_tier_leases_borrowed_total", "strata_expert_peer_fetches_total");
            assertThat(families.get("strata_serve_requests_total").samples()).singleElement()
                    .satisfies(s -> assertThat(s.value()).isEqualTo(3));
            assertThat(families.get("strata_serve_rejected_total").samples().getFirst().value()).isEqualTo(1);
            assertThat(engine.kv().policyName()).as("the engine's KV slots run the policy of its options").isEqualTo("lru");
            assertThat(families.get("strata_kv_device_policy").samples()).singleElement().satisfies(s -> {
                assertThat(s.labels()).containsEntry("policy", "lru");
                assertThat(s.value()).isEqualTo(1);
            });
            assertThat(families.get("strata_serve_ttft_seconds").type()).isEqualTo("histogram");
            assertThat(families.get("strata_serve_ttft_seconds").samples())
                    .anySatisfy(s -> assertThat(s.name()).isEqualTo("strata_serve_ttft_seconds_count"));
            assertThat(families.get("strata_peer_tier_used_bytes").samples()).extracting(s -> s.labels().get("tier"))
                    .containsExactly("peer", "expert-peer"); // the KV PEER tier is named by its key, tiers.peer
            assertThat(families.values()).allSatisfy(f -> {
                assertThat(f.help()).as(f.name()).isNotBlank();
                if (f.type().equals("counter")) {
                    assertThat(f.name()).endsWith("_total");
                }
            });
        }
    }

    @Test
    void theReaderRefusesWhatTheFormatForbids() {
        String ok = "# HELP a_total A\n# TYPE a_total counter\na_total{l=\"x\\\"y\"} 1\n";
        assertThat(ExpositionFormat.parse(ok).get("a_total").samples().getFirst().labels()).containsEntry("l", "x\"y");
        String[][] bad = {
                {"# HELP a A\n# TYPE a counter\na 1\n", "does not end in _total"},
                {"# HELP a A\n# TYPE a gauge\na 1\n# HELP b B\n# TYPE b gauge\nb 1\n# HELP a A\n", "declared a second time"},
                {"# HELP a A\n# TYPE a gauge\n# HELP b B\n# TYPE b gauge\nb 1\na 2\n", "not in the group"},
                {"# TYPE a gauge\na 1\n", "needs HELP and TYPE"},
                {"# HELP a A\n# TYPE a gauge\na{l=\"x\\ty\"} 1\n", "escape \\t"},
                {"# HELP a A\n# TYPE a gauge\na{l=\"x\"} 1\na{l=\"x\"} 2\n", "series written twice"},
                {"# HELP a A\n# TYPE a gauge\nb 1\n", "not in the group"},
                {"# HELP h H\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", "cumulative"},
                {"# HELP h H\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n", "_count equal"}};
        for (String[] b : bad) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> ExpositionFormat.parse(b[0])).as(b[0])
                    .isInstanceOf(AssertionError.class).hasMessageContaining(b[1]);
        }
    }
}
