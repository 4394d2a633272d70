package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.model.ModelFileChangedException;
import dev.strata.engine.model.WeightFiles;
import dev.strata.engine.model.WeightLoad;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model file changed under a running server, end to end over real HTTP. With mapped weights
 * ({@code model.load: map}) a truncated file takes the model out of service before any kernel
 * reads the mapping: generation requests get a 503 naming the file, {@code /health} reports it with
 * a 503, and the server (and its generator) keep answering; a file rewritten in place while a
 * request runs fails that request at the next step. With copied weights (the default) the server
 * keeps giving the same answers.
 */
class ModelFileChangeServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MODEL = "synth-model-file";
    private static final String COMPLETION = "{\"prompt\":\"Tiers hold blocks of the cache. \",\"max_tokens\":12}";

    @TempDir
    Path dir;

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    /** An engine over the model in {@code dir} (no expert pager: every weight is read from the files' tensors) and its server. */
    private record Served(ServeEngine engine, ContinuousBatchingGenerator generator, OpenAiServer server) implements AutoCloseable {
        static Served start(Path model, WeightLoad load) throws IOException {
            ServeEngine engine = new ServeEngine(model, ServeEngine.Options.builder().kvBlocks(32).weightLoad(load).conclude());
            ServeMetrics metrics = new ServeMetrics();
            ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, metrics);
            OpenAiServer server = OpenAiServer.start(ServerConfig.local(0, MODEL, 256, 256), engine, generator, metrics);
            return new Served(engine, generator, server);
        }

        @Override
        public void close() {
            server.close();
            generator.close();
            engine.kv().checkInvariants();
            assertThat(engine.kv().stats().openSequences()).isZero();
            engine.close();
        }
    }

    private Path synth() throws IOException {
        Path model = dir.resolve("model");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3_MOE, 23), model, (d, t, b, tb) -> { });
        return model;
    }

    private HttpResponse<String> get(Served s, String path) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.server().port() + path))
                .timeout(Duration.ofSeconds(30)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> complete(Served s) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.server().port() + "/v1/completions"))
                .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(COMPLETION)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void truncateToHalf(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(ch.size() / 2);
        }
    }

    @Test
    void mappedWeightsWhoseFileIsTruncatedFailRequestsNamingTheFileAndHealthSaysSoWhileTheServerLives() throws Exception {
        Path model = synth();
        Path file = model.resolve(WeightFiles.SINGLE_FILE);
        try (Served s = Served.start(model, WeightLoad.MAP)) {
            assertThat(complete(s).statusCode()).isEqualTo(200);
            assertThat(get(s, "/health").statusCode()).isEqualTo(200);

            truncateToHalf(file);

            HttpResponse<String> health = get(s, "/health");
            assertThat(health.statusCode()).as(health.body()).isEqualTo(503);
            JsonNode h = JSON.readTree(health.body());
            assertThat(h.get("status").asText()).isEqualTo("unavailable");
            assertThat(h.get("error").asText()).contains(file.toString()).contains("truncated");

            for (int i = 0; i < 2; i++) { // every request, not only the first
                HttpResponse<String> r = complete(s);
                assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
                JsonNode error = JSON.readTree(r.body()).get("error");
                assertThat(error.get("message").asText()).contains(file.toString()).contains("out of service");
                assertThat(error.get("type").asText()).isEqualTo("server_error");
            }
            // the process, the server and its worker live on: other endpoints answer
            assertThat(get(s, "/v1/models").statusCode()).isEqualTo(200);
            assertThat(get(s, "/metrics").statusCode()).isEqualTo(200);
            assertThat(s.generator().queueLength()).isZero();
        }
    }

    @Test
    void mappedWeightsWhoseFileIsRewrittenDuringAGenerationFailThatRequestAtTheNextStep() throws Exception {
        Path model = synth();
        Path file = model.resolve(WeightFiles.SINGLE_FILE);
        Files.setLastModifiedTime(file, FileTime.fromMillis(1_600_000_000_000L)); // any write from now on changes it
        try (Served s = Served.start(model, WeightLoad.MAP)) {
            CompletableFuture<RuntimeException> failure = new CompletableFuture<>();
            s.generator().submit(GenerationRequest.greedy(new int[] {5, 17, 42, 99}, 24), new TextSink() {
                @Override
                public void started(int promptTokens, int reusedTokens) {
                    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) { // same size, new bytes
                        ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}), Files.size(file) - 64);
                    } catch (IOException e) {
                        failure.completeExceptionally(e);
                    }
                }

                @Override
                public void text(String delta) {
                }

                @Override
                public void finished(FinishReason reason, int promptTokens, int completionTokens) {
                    failure.completeExceptionally(new AssertionError("finished " + reason + " after " + completionTokens
                            + " tokens instead of failing"));
                }

                @Override
                public void failed(RuntimeException error) {
                    failure.complete(error);
                }
            });
            RuntimeException error = failure.get(30, TimeUnit.SECONDS);
            assertThat(error).isInstanceOf(ModelFileChangedException.class).hasMessageContaining(file.toString())
                    .hasMessageContaining("rewritten in place");
            assertThatThrownBy(() -> s.generator().submit(GenerationRequest.greedy(new int[] {1, 2}, 4), new TextSink() {
                @Override
                public void text(String delta) {
                }

                @Override
                public void finished(FinishReason reason, int promptTokens, int completionTokens) {
                }

                @Override
                public void failed(RuntimeException e) {
                }
            })).isInstanceOf(ModelFileChangedException.class).hasMessageContaining(file.toString());
            assertThat(get(s, "/health").statusCode()).isEqualTo(503);
        }
    }

    @Test
    void copiedWeightsKeepGivingTheSameAnswersAfterTheFileIsTruncated() throws Exception {
        Path model = synth();
        Path file = model.resolve(WeightFiles.SINGLE_FILE);
        try (Served s = Served.start(model, WeightLoad.COPY)) {
            HttpResponse<String> before = complete(s);
            assertThat(before.statusCode()).as(before.body()).isEqualTo(200);

            truncateToHalf(file);

            assertThat(get(s, "/health").statusCode()).isEqualTo(200);
            for (int i = 0; i < 2; i++) {
                HttpResponse<String> after = complete(s);
                assertThat(after.statusCode()).as(after.body()).isEqualTo(200);
                assertThat(JSON.readTree(after.body()).get("choices")).isEqualTo(JSON.readTree(before.body()).get("choices"));
            }
        }
    }
}
