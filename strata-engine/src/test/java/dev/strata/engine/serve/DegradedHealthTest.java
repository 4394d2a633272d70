package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cache.kv.SharedPoolHealth;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.lang.foreign.MemorySegment;
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
 * {@code /health} and {@code /metrics} of a server whose shared pool leaves the KV chain: 200 with
 * {@code "status": "degraded"} naming the tier, its state and the reason, and
 * {@code strata_tier_failed 1} on a page that is still valid exposition text; back to "ok" and 0
 * when the pool returns. Requests are served throughout.
 */
class DegradedHealthTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path dir;

    /** A shared store with nothing in it whose health the test sets. */
    private static final class OutageStore implements SharedBlockStore {
        final SharedPoolHealth health = new SharedPoolHealth("kv-pool", Duration.ofHours(1).toNanos(), System::nanoTime);

        @Override
        public SharedPoolHealth.Status health() {
            return health.status();
        }

        @Override
        public int matchPrefix(ObjectKey[] keys, int from, int count) {
            return 0;
        }

        @Override
        public boolean read(ObjectKey key, List<MemorySegment> destinations) {
            return false;
        }

        @Override
        public PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
            return health.ok() ? PublishStatus.FULL : PublishStatus.UNAVAILABLE;
        }
    }

    @Test
    void aPoolOutOfTheChainIsReportedDegradedWithHttp200AndAFailedTierMetric() throws Exception {
        Path model = dir.resolve("health-moe");
        ModelSynthesizer.write(new SynthSpec(ModelFamily.QWEN3_MOE, 2, 6, 2, 48, 40, 24, 6, 2, 8, 400, DType.BF16, 79, 1, 3, false),
                model, (d, t, b, tb) -> { });
        OutageStore store = new OutageStore();
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
        ServeMetrics metrics = new ServeMetrics();
        try (ServeEngine engine = new ServeEngine(model, ServeEngine.Options.builder().blockTokens(8).kvBlocks(16).shared(store).conclude());
             ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, metrics);
             OpenAiServer server = OpenAiServer.start(ServerConfig.local(0, "m", 256, 64), engine, generator, metrics)) {
            String base = "http://127.0.0.1:" + server.port();
            assertThat(JSON.readTree(get(client, base + "/health").body()).get("status").asText()).isEqualTo("ok");
            assertThat(failed(client, base)).isEqualTo(0);

            store.health.unavailable("strata node at /dev/shm/x.rpc: the daemon (pid 7) died");
            HttpResponse<String> health = get(client, base + "/health");
            assertThat(health.statusCode()).as("load balancers keep sending traffic").isEqualTo(200);
            JsonNode body = JSON.readTree(health.body());
            assertThat(body.get("status").asText()).isEqualTo("degraded");
            assertThat(body.get("model").asText()).isEqualTo("m");
            JsonNode tier = body.get("degraded").get(0);
            assertThat(tier.get("tier").asText()).isEqualTo("kv-pool");
            assertThat(tier.get("kind").asText()).isEqualTo("pool");
            assertThat(tier.get("state").asText()).isEqualTo("unavailable");
            assertThat(tier.get("reason").asText()).contains("died");
            assertThat(failed(client, base)).isEqualTo(1);
            HttpResponse<String> served = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                    .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(
                            "{\"prompt\":[5,6,7,8,9,10,11,12,13],\"max_tokens\":4}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(served.statusCode()).as(served.body()).isEqualTo(200);

            store.health.failed("an access to the mapping faulted");
            assertThat(JSON.readTree(get(client, base + "/health").body()).get("degraded").get(0).get("state").asText())
                    .isEqualTo("failed");
        }
    }

    /** The value of {@code strata_tier_failed} for the pool, read from a page that must be valid exposition text. */
    private static double failed(HttpClient client, String base) throws Exception {
        Map<String, ExpositionFormat.Family> families = ExpositionFormat.parse(get(client, base + "/metrics").body());
        assertThat(families).containsKeys("strata_tier_failed", "strata_tier_failures_total", "strata_tier_reattached_total");
        List<ExpositionFormat.Sample> samples = families.get("strata_tier_failed").samples();
        assertThat(samples).singleElement().satisfies(s -> assertThat(s.labels()).containsEntry("tier", "kv-pool")
                .containsEntry("kind", "pool"));
        return samples.getFirst().value();
    }

    private static HttpResponse<String> get(HttpClient client, String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
