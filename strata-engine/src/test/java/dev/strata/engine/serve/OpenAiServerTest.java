package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.sample.SamplingFieldException;
import dev.strata.engine.sample.SamplingParams;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.memory.metrics.PrometheusText;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server end to end over a synthesized Qwen3-MoE model with an expert pager: real HTTP on an
 * ephemeral loopback port, real generation.
 */
class OpenAiServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MODEL = "synth-qwen3-moe";
    private static final String KEY = "s3cret-key";
    private static final int BLOCK_TOKENS = 16;
    private static final int KV_BLOCKS = 40; // 640 tokens per sequence
    private static final long SLOW_NANOS = 15_000_000; // per text delta, only for the slowed server

    @TempDir
    static Path dir;

    static ServeEngine engine;
    static ContinuousBatchingGenerator generator;
    static ServeMetrics metrics;
    static OpenAiServer server;
    static OpenAiServer keyed;
    static HttpClient client;

    @BeforeAll
    static void start() throws Exception {
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3_MOE, 7), dir, (d, t, b, tb) -> { });
        engine = new ServeEngine(dir, 1, BLOCK_TOKENS, KV_BLOCKS, 4);
        metrics = new ServeMetrics();
        generator = new ContinuousBatchingGenerator(engine, metrics);
        server = OpenAiServer.start(ServerConfig.local(0, MODEL, 256, 512).withMaxBodyBytes(4096), engine, generator, metrics);
        keyed = OpenAiServer.start(ServerConfig.local(0, MODEL, 256, 512).withApiKey(KEY), engine, new SlowGenerator(generator), metrics);
        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        if (keyed != null) {
            keyed.close();
        }
        if (server != null) {
            server.close();
        }
        if (generator != null) {
            generator.close();
        }
        if (engine != null) {
            engine.close();
        }
    }

    private static HttpResponse<String> post(OpenAiServer s, String path, String body, String key) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path))
                .timeout(Duration.ofSeconds(20)).POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("Authorization", "Bearer " + key);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> get(OpenAiServer s, String path, String key) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path)).timeout(Duration.ofSeconds(20));
        if (key != null) {
            b.header("Authorization", "Bearer " + key);
        }
        return client.send(b.GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The data payloads of an SSE body, in order. */
    private static List<String> events(String body) {
        List<String> out = new ArrayList<>();
        for (String block : body.split("\n\n")) {
            if (!block.isBlank()) {
                assertThat(block).startsWith("data: ");
                out.add(block.substring("data: ".length()));
            }
        }
        return out;
    }

    @Test
    void completionStreamedEqualsWholeWithRightUsage() throws Exception {
        String prompt = "The quick brown fox jumps over the lazy dog. ";
        int promptTokens = engine.model().tokenizer().encode(prompt).length;
        String req = "{\"model\":\"" + MODEL + "\",\"prompt\":" + JSON.writeValueAsString(prompt) + ",\"max_tokens\":24";
        HttpResponse<String> whole = post(server, "/v1/completions", req + "}", null);
        assertThat(whole.statusCode()).as(whole.body()).isEqualTo(200);
        JsonNode w = JSON.readTree(whole.body());
        assertThat(w.get("object").asText()).isEqualTo("text_completion");
        assertThat(w.get("model").asText()).isEqualTo(MODEL);
        assertThat(w.get("id").asText()).startsWith("cmpl-");
        assertThat(w.get("created").asLong()).isPositive();
        JsonNode choice = w.get("choices").get(0);
        assertThat(choice.get("index").asInt()).isZero();
        String text = choice.get("text").asText();
        String reason = choice.get("finish_reason").asText();
        JsonNode usage = w.get("usage");
        int completion = usage.get("completion_tokens").asInt();
        assertThat(usage.get("prompt_tokens").asInt()).isEqualTo(promptTokens);
        assertThat(usage.get("total_tokens").asInt()).isEqualTo(promptTokens + completion);
        assertThat(reason).isIn("stop", "length");
        if (reason.equals("length")) {
            assertThat(completion).isEqualTo(24);
        } else {
            assertThat(completion).isBetween(1, 24);
        }
        assertThat(text).isNotEmpty();

        HttpResponse<String> streamed = post(server, "/v1/completions", req + ",\"stream\":true}", null);
        assertThat(streamed.statusCode()).isEqualTo(200);
        assertThat(streamed.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/event-stream"));
        List<String> ev = events(streamed.body());
        assertThat(ev.getLast()).isEqualTo("[DONE]");
        StringBuilder joined = new StringBuilder();
        for (int i = 0; i < ev.size() - 2; i++) {
            JsonNode c = JSON.readTree(ev.get(i));
            assertThat(c.get("object").asText()).isEqualTo("text_completion");
            assertThat(c.get("choices").get(0).get("finish_reason").isNull()).isTrue();
            joined.append(c.get("choices").get(0).get("text").asText());
        }
        JsonNode last = JSON.readTree(ev.get(ev.size() - 2));
        assertThat(last.get("choices").get(0).get("finish_reason").asText()).isEqualTo(reason);
        assertThat(last.has("usage")).as("no usage without stream_options.include_usage: %s", last).isFalse();
        assertThat(joined.toString()).isEqualTo(text);

        assertUsageComesLast(events(post(server, "/v1/completions",
                req + ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}", null).body()), reason, usage);
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    /**
     * With {@code stream_options.include_usage}: the finish chunk, then a chunk with empty
     * {@code choices} and the usage, then [DONE]; every other chunk has {@code "usage": null}.
     */
    private static void assertUsageComesLast(List<String> ev, String reason, JsonNode usage) throws Exception {
        assertThat(ev.getLast()).isEqualTo("[DONE]");
        JsonNode usageChunk = JSON.readTree(ev.get(ev.size() - 2));
        assertThat(usageChunk.get("choices").isArray()).isTrue();
        assertThat(usageChunk.get("choices")).isEmpty();
        assertThat(usageChunk.get("usage")).isEqualTo(usage);
        JsonNode finish = JSON.readTree(ev.get(ev.size() - 3));
        assertThat(finish.get("choices").get(0).get("finish_reason").asText()).isEqualTo(reason);
        for (int i = 0; i < ev.size() - 2; i++) {
            JsonNode c = JSON.readTree(ev.get(i));
            assertThat(c.get("usage").isNull()).as("chunk %d: %s", i, c).isTrue();
        }
    }

    @Test
    void chatStreamedEqualsWholeAndStopStringsCut() throws Exception {
        String req = "{\"model\":\"" + MODEL + "\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                + "{\"role\":\"user\",\"content\":\"Tell me about caches, naïvely 🙂\"}],\"max_tokens\":20,\"temperature\":0";
        HttpResponse<String> whole = post(server, "/v1/chat/completions", req + "}", null);
        assertThat(whole.statusCode()).as(whole.body()).isEqualTo(200);
        JsonNode w = JSON.readTree(whole.body());
        assertThat(w.get("object").asText()).isEqualTo("chat.completion");
        JsonNode message = w.get("choices").get(0).get("message");
        assertThat(message.get("role").asText()).isEqualTo("assistant");
        String text = message.get("content").asText();
        JsonNode usage = w.get("usage");
        assertThat(usage.get("total_tokens").asInt())
                .isEqualTo(usage.get("prompt_tokens").asInt() + usage.get("completion_tokens").asInt());

        List<String> ev = events(post(server, "/v1/chat/completions", req + ",\"stream\":true}", null).body());
        assertThat(ev.getLast()).isEqualTo("[DONE]");
        JsonNode first = JSON.readTree(ev.getFirst());
        assertThat(first.get("object").asText()).isEqualTo("chat.completion.chunk");
        assertThat(first.get("choices").get(0).get("delta").get("role").asText()).isEqualTo("assistant");
        StringBuilder joined = new StringBuilder();
        for (int i = 0; i < ev.size() - 1; i++) {
            JsonNode d = JSON.readTree(ev.get(i)).get("choices").get(0).get("delta");
            if (d.has("content")) {
                joined.append(d.get("content").asText());
            }
        }
        assertThat(joined.toString()).isEqualTo(text);
        JsonNode last = JSON.readTree(ev.get(ev.size() - 2));
        assertThat(last.get("choices").get(0).get("finish_reason").asText())
                .isEqualTo(w.get("choices").get(0).get("finish_reason").asText());
        assertThat(last.has("usage")).as("no usage without stream_options.include_usage: %s", last).isFalse();
        assertUsageComesLast(events(post(server, "/v1/chat/completions",
                req + ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}", null).body()),
                w.get("choices").get(0).get("finish_reason").asText(), usage);

        // a stop string taken from the middle of the greedy text cuts it just before
        if (text.length() >= 4) {
            String stop = text.substring(text.length() / 2, text.length() / 2 + 2);
            int cut = text.indexOf(stop);
            HttpResponse<String> stopped = post(server, "/v1/chat/completions",
                    req + ",\"stop\":[" + JSON.writeValueAsString(stop) + "]}", null);
            JsonNode s = JSON.readTree(stopped.body()).get("choices").get(0);
            assertThat(s.get("message").get("content").asText()).isEqualTo(text.substring(0, cut));
            assertThat(s.get("finish_reason").asText()).isEqualTo("stop");
        }
    }

    @Test
    void concurrentRequestsEachGetTheirAloneAnswer() throws Exception {
        String[] prompts = {"Tiers: device, host, pool, disk. ", "Experts are paged in slots. ", "A block holds sixteen tokens. "};
        String[] alone = new String[prompts.length];
        for (int i = 0; i < prompts.length; i++) {
            alone[i] = post(server, "/v1/completions", "{\"prompt\":" + JSON.writeValueAsString(prompts[i]) + ",\"max_tokens\":16}", null).body();
        }
        List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> together = new ArrayList<>();
        for (int round = 0; round < 2; round++) {
            for (String p : prompts) {
                together.add(client.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
                        .timeout(Duration.ofSeconds(20)).POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":" + JSON.writeValueAsString(p)
                                + ",\"max_tokens\":16}")).build(), HttpResponse.BodyHandlers.ofString()));
            }
        }
        for (int k = 0; k < together.size(); k++) {
            HttpResponse<String> r = together.get(k).get();
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(JSON.readTree(r.body()).get("choices")).isEqualTo(JSON.readTree(alone[k % prompts.length]).get("choices"));
        }
        assertThat(generator.queueLength()).isZero();
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    @Test
    void modelsHealthAndMetrics() throws Exception {
        JsonNode models = JSON.readTree(get(server, "/v1/models", null).body());
        assertThat(models.get("object").asText()).isEqualTo("list");
        assertThat(models.get("data")).hasSize(1);
        assertThat(models.get("data").get(0).get("id").asText()).isEqualTo(MODEL);
        assertThat(get(server, "/v1/models/" + MODEL, null).statusCode()).isEqualTo(200);
        assertThat(get(server, "/v1/models/other", null).statusCode()).isEqualTo(404);
        HttpResponse<String> health = get(server, "/health", null);
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(health.body()).get("status").asText()).isEqualTo("ok");

        assertThat(post(server, "/v1/completions", "{\"prompt\":\"abc\",\"max_tokens\":3}", null).statusCode()).isEqualTo(200);
        HttpResponse<String> m = get(server, "/metrics", null);
        assertThat(m.statusCode()).isEqualTo(200);
        assertThat(m.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
        String text = m.body();
        assertThat(text).contains("# TYPE strata_serve_requests_total counter", "# TYPE strata_serve_tokens_generated_total counter",
                "strata_serve_tokens_per_second ", "strata_serve_queue_length 0\n", "# TYPE strata_serve_ttft_seconds histogram",
                "strata_serve_ttft_seconds_bucket{le=\"+Inf\"} ", "strata_serve_time_per_output_token_seconds_count ",
                "strata_kv_", "strata_expert");
        long generated = Long.parseLong(text.lines().filter(l -> l.startsWith("strata_serve_tokens_generated_total "))
                .findFirst().orElseThrow().split(" ")[1]);
        assertThat(generated).isPositive();
    }

    @Test
    void headOnHealthAndMetricsAnswersLikeGetWithoutABody() throws Exception {
        for (String path : List.of("/health", "/metrics")) {
            HttpResponse<String> got = get(keyed, path, KEY);
            HttpResponse<String> head = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + keyed.port() + path))
                    .timeout(Duration.ofSeconds(20)).header("Authorization", "Bearer " + KEY)
                    .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(head.statusCode()).as("HEAD " + path).isEqualTo(200);
            assertThat(head.body()).as("HEAD " + path).isEmpty();
            assertThat(head.headers().firstValue("Content-Type")).isEqualTo(got.headers().firstValue("Content-Type"));
        }
        HttpResponse<String> unauthorized = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + keyed.port() + "/metrics"))
                .timeout(Duration.ofSeconds(20)).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(unauthorized.statusCode()).isEqualTo(401);
        assertThat(get(server, "/v1/models", null).statusCode()).isEqualTo(200);
        HttpResponse<String> headModels = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/models"))
                .timeout(Duration.ofSeconds(20)).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(headModels.statusCode()).isEqualTo(405);
    }

    @Test
    void badRequestsGetClearErrors() throws Exception {
        HttpResponse<String> malformed = post(server, "/v1/completions", "{\"prompt\": \"abc\", ", null);
        assertThat(malformed.statusCode()).isEqualTo(400);
        assertThat(error(malformed)).startsWith("malformed JSON");

        HttpResponse<String> notObject = post(server, "/v1/completions", "[1,2]", null);
        assertThat(notObject.statusCode()).isEqualTo(400);
        assertThat(error(notObject)).contains("JSON object");

        String big = "{\"prompt\":\"" + "x".repeat(5000) + "\"}";
        HttpResponse<String> oversized = post(server, "/v1/completions", big, null);
        assertThat(oversized.statusCode()).isEqualTo(413);
        assertThat(error(oversized)).contains("4096");

        HttpResponse<String> zero = post(server, "/v1/completions", "{\"prompt\":\"abc\",\"max_tokens\":0}", null);
        assertThat(zero.statusCode()).isEqualTo(400);
        assertThat(error(zero)).contains("max_tokens").contains("got 0");
        HttpResponse<String> huge = post(server, "/v1/completions", "{\"prompt\":\"abc\",\"max_tokens\":100000}", null);
        assertThat(huge.statusCode()).isEqualTo(400);
        assertThat(error(huge)).contains("max_tokens").contains("100000");
        HttpResponse<String> text = post(server, "/v1/completions", "{\"prompt\":\"abc\",\"max_tokens\":\"ten\"}", null);
        assertThat(text.statusCode()).isEqualTo(400);
        assertThat(error(text)).contains("max_tokens").contains("\"ten\"");

        String longPrompt = "{\"prompt\":" + JSON.writeValueAsString("lorem ipsum dolor sit amet ".repeat(60)) + "}";
        HttpResponse<String> tooLong = post(server, "/v1/completions", longPrompt, null);
        assertThat(tooLong.statusCode()).as(tooLong.body()).isEqualTo(400);
        assertThat(error(tooLong)).contains("prompt has").contains("limit of 256");

        String[][] badSampling = {
                {"\"temperature\":2.5", "temperature", "2.5"}, {"\"temperature\":\"hot\"", "temperature", "\"hot\""},
                {"\"top_p\":0", "top_p", "0"}, {"\"top_p\":1.5", "top_p", "1.5"}, {"\"top_k\":-3", "top_k", "-3"},
                {"\"top_k\":2.5", "top_k", "2.5"}, {"\"seed\":\"x\"", "seed", "\"x\""},
                {"\"presence_penalty\":2.5", "presence_penalty", "2.5"}, {"\"frequency_penalty\":-7", "frequency_penalty", "-7"},
                {"\"stop\":\"\"", "stop", "empty"}, {"\"stop\":[\"a\",3]", "stop", "3"},
                {"\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]", "stop", "\"e\""}};
        for (String[] bad : badSampling) {
            HttpResponse<String> r = post(server, "/v1/completions", "{\"prompt\":\"abc\"," + bad[0] + "}", null);
            assertThat(r.statusCode()).as(bad[0]).isEqualTo(400);
            assertThat(JSON.readTree(r.body()).get("error").get("param").asText()).as(bad[0]).isEqualTo(bad[1]);
            assertThat(error(r)).as(bad[0]).contains(bad[1]).contains(bad[2]);
        }

        HttpResponse<String> unknown = post(server, "/v1/completions", "{\"model\":\"gpt-9\",\"prompt\":\"abc\"}", null);
        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(error(unknown)).contains("gpt-9").contains(MODEL);

        HttpResponse<String> noMessages = post(server, "/v1/chat/completions", "{\"messages\":[]}", null);
        assertThat(noMessages.statusCode()).isEqualTo(400);
        assertThat(error(noMessages)).contains("messages");

        assertThat(get(server, "/v1/completions", null).statusCode()).isEqualTo(405);
        assertThat(post(server, "/health", "{}", null).statusCode()).isEqualTo(405);
        assertThat(get(server, "/v2/nothing", null).statusCode()).isEqualTo(404);
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    /** A sampling value, as JSON in a request and as the same call on {@link SamplingParams.Builder}. */
    private record SamplingCase(String json, String field, UnaryOperator<SamplingParams.Builder> same) {
    }

    @Test
    void samplingFieldsAreJudgedOnlyBySamplingParamsSoTheServerAndCodeAgree() throws Exception {
        // values the server and SamplingParams used to judge differently, and one of each other range:
        // refused over HTTP with a 400 naming the field, and refused by SamplingParams with the same message
        List<SamplingCase> refused = List.of(
                new SamplingCase("\"temperature\":2.5", "temperature", b -> b.temperature(2.5)),
                new SamplingCase("\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]", "stop", b -> b.stop(List.of("a", "b", "c", "d", "e"))),
                new SamplingCase("\"stop\":\"\"", "stop", b -> b.stop(List.of(""))),
                new SamplingCase("\"top_p\":0", "top_p", b -> b.topP(0)),
                new SamplingCase("\"top_k\":-2", "top_k", b -> b.topK(-2)),
                new SamplingCase("\"presence_penalty\":2.5", "presence_penalty", b -> b.presencePenalty(2.5)),
                new SamplingCase("\"frequency_penalty\":-7", "frequency_penalty", b -> b.frequencyPenalty(-7)),
                new SamplingCase("\"n\":17", "n", b -> b.n(17)),
                new SamplingCase("\"max_tokens\":513", "max_tokens", b -> b.maxTokens(513).maxTokensLimit(512)),
                new SamplingCase("\"max_tokens\":0", "max_tokens", b -> b.maxTokens(0).maxTokensLimit(512)));
        for (SamplingCase c : refused) {
            SamplingFieldException expected = catchThrowableOfType(SamplingFieldException.class,
                    () -> c.same().apply(SamplingParams.builder()).build());
            assertThat(expected).as(c.json()).isNotNull();
            assertThat(expected.field()).isEqualTo(c.field());
            HttpResponse<String> r = post(server, "/v1/completions", "{\"prompt\":\"abc\"," + c.json() + "}", null);
            assertThat(r.statusCode()).as(c.json()).isEqualTo(400);
            JsonNode err = JSON.readTree(r.body()).get("error");
            assertThat(err.get("type").asText()).isEqualTo("invalid_request_error");
            assertThat(err.get("param").asText()).as(c.json()).isEqualTo(c.field());
            assertThat(err.get("message").asText()).as(c.json()).isEqualTo(expected.getMessage()).contains(c.field());
        }
        // chat spells max_tokens max_completion_tokens; the 400 names the field the request used
        HttpResponse<String> chat = post(server, "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_completion_tokens\":0}", null);
        assertThat(chat.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(chat.body()).get("error").get("param").asText()).isEqualTo("max_completion_tokens");
        assertThat(error(chat)).isEqualTo("max_completion_tokens must be in [1, 512], got 0");

        // accepted both ways: top_k -1 (off, which only the server allowed) and the highest temperature
        List<SamplingCase> accepted = List.of(new SamplingCase("\"top_k\":-1", "top_k", b -> b.topK(-1)),
                new SamplingCase("\"temperature\":2", "temperature", b -> b.temperature(2)));
        for (SamplingCase c : accepted) {
            assertThat(c.same().apply(SamplingParams.builder()).build()).isNotNull();
            HttpResponse<String> r = post(server, "/v1/completions", "{\"prompt\":\"abc\",\"max_tokens\":2," + c.json() + "}", null);
            assertThat(r.statusCode()).as(c.json() + ": " + r.body()).isEqualTo(200);
        }
        assertThat(SamplingParams.builder().topK(-1).build().topK()).isZero();
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    @Test
    void apiKeyIsRequiredWhenConfigured() throws Exception {
        String body = "{\"prompt\":\"abc\",\"max_tokens\":2}";
        HttpResponse<String> missing = post(keyed, "/v1/completions", body, null);
        assertThat(missing.statusCode()).isEqualTo(401);
        assertThat(error(missing)).contains("Authorization");
        assertThat(post(keyed, "/v1/completions", body, "wrong").statusCode()).isEqualTo(401);
        assertThat(get(keyed, "/v1/models", "wrong").statusCode()).isEqualTo(401);
        assertThat(get(keyed, "/metrics", null).statusCode()).isEqualTo(401);
        assertThat(get(keyed, "/health", null).statusCode()).isEqualTo(200);
        assertThat(post(keyed, "/v1/completions", body, KEY).statusCode()).isEqualTo(200);
        assertThat(get(keyed, "/v1/models", KEY).statusCode()).isEqualTo(200);
    }

    @Test
    void clientDisconnectMidStreamCancelsAndFreesBlocks() throws Exception {
        // a prompt whose greedy continuation runs the full length, so only a cancel can end it early
        int maxTokens = 300;
        String prompt = null;
        for (String p : List.of("Memory tiers move blocks. ", "abc def ghi ", "Hello, world! ", "0 1 2 3 4 5 ")) {
            HttpResponse<String> r = post(server, "/v1/completions", "{\"prompt\":" + JSON.writeValueAsString(p)
                    + ",\"max_tokens\":" + maxTokens + "}", null);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode w = JSON.readTree(r.body());
            if (w.get("choices").get(0).get("finish_reason").asText().equals("length")) {
                prompt = p;
                break;
            }
        }
        assertThat(prompt).as("a prompt that generates %d tokens without eos", maxTokens).isNotNull();
        int freeBefore = engine.kv().stats().freeSlots();
        long cancelledBefore = metrics.cancelledCount();

        String body = "{\"prompt\":" + JSON.writeValueAsString(prompt) + ",\"max_tokens\":" + maxTokens + ",\"stream\":true}";
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        long start = System.nanoTime();
        try (Socket socket = new Socket("127.0.0.1", keyed.port())) {
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + KEY
                    + "\r\nContent-Type: application/json\r\nContent-Length: " + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(bytes);
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            assertThat(in.readLine()).isEqualTo("HTTP/1.1 200 OK");
            int dataLines = 0;
            for (String line; dataLines < 3 && (line = in.readLine()) != null; ) {
                if (line.contains("data: ")) {
                    dataLines++;
                }
            }
            assertThat(dataLines).isEqualTo(3);
        } // closed mid-stream: about 300 × 15 ms of generation remain
        long deadline = System.nanoTime() + 4_000_000_000L;
        while (metrics.cancelledCount() == cancelledBefore && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(metrics.cancelledCount()).as("the generation was cancelled").isEqualTo(cancelledBefore + 1);
        assertThat(System.nanoTime() - start).as("cancelled well before running out").isLessThan(maxTokens * SLOW_NANOS);
        assertThat(engine.kv().stats().openSequences()).isZero();
        engine.kv().checkInvariants();
        assertThat(engine.kv().stats().freeSlots() + engine.kv().stats().residentBlocks())
                .isGreaterThanOrEqualTo(freeBefore);
        // the released blocks are usable: a request needing most of the cache succeeds
        HttpResponse<String> after = post(server, "/v1/completions", "{\"prompt\":" + JSON.writeValueAsString(prompt)
                + ",\"max_tokens\":500}", null);
        assertThat(after.statusCode()).as(after.body()).isEqualTo(200);
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    private static final String CHAT = "/v1/chat/completions";

    /** A greedy chat request over {@code messages} (a JSON array) plus {@code extra} fields. */
    private static String chat(String messages, String extra) {
        return "{\"model\":\"" + MODEL + "\",\"messages\":" + messages + ",\"max_tokens\":8" + extra + "}";
    }

    @Test
    void messagesTakeTextPartsToolCallsAndToolResults() throws Exception {
        JsonNode plain = JSON.readTree(post(server, CHAT, chat("[{\"role\":\"user\",\"content\":\"one\\ntwo\"}]", ""), null).body());
        HttpResponse<String> parts = post(server, CHAT, chat("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"one\"},"
                + "{\"type\":\"text\",\"text\":\"two\"}]}]", ""), null);
        assertThat(parts.statusCode()).as(parts.body()).isEqualTo(200);
        JsonNode p = JSON.readTree(parts.body());
        assertThat(p.get("usage").get("prompt_tokens")).as("text parts joined by newlines").isEqualTo(plain.get("usage").get("prompt_tokens"));
        assertThat(p.get("choices").get(0).get("message").get("content")).isEqualTo(plain.get("choices").get(0).get("message").get("content"));

        HttpResponse<String> image = post(server, CHAT, chat("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x/y.png\"}}]}]", ""), null);
        assertThat(image.statusCode()).isEqualTo(400);
        assertThat(error(image)).contains("image_url").contains("part 1");

        String user = "{\"role\":\"user\",\"content\":\"What is the weather in Paris?\"}";
        String call = "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
                + "\"function\":{\"name\":\"weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]}";
        String result = "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"sunny, 21 C\"}";
        HttpResponse<String> tools = post(server, CHAT, chat("[" + user + "," + call + "," + result + "]", ""), null);
        assertThat(tools.statusCode()).as(tools.body()).isEqualTo(200);
        // the model's own chat template renders the call and the result
        String rendered = engine.model().chat().render(List.of(
                dev.strata.engine.tokenizer.ChatMessage.user("What is the weather in Paris?"),
                dev.strata.engine.tokenizer.ChatMessage.assistant(null, List.of(new dev.strata.engine.tokenizer.ToolCall("call_1",
                        "weather", JSON.readTree("{\"city\":\"Paris\"}")))),
                dev.strata.engine.tokenizer.ChatMessage.tool("call_1", "sunny, 21 C")), true);
        assertThat(rendered).contains("<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
                .contains("<tool_response>\nsunny, 21 C\n</tool_response>");
        assertThat(JSON.readTree(tools.body()).get("usage").get("prompt_tokens").asInt())
                .as("the calls and the result are in the prompt").isEqualTo(engine.model().tokenizer().encode(rendered).length);

        HttpResponse<String> noId = post(server, CHAT, chat("[" + user + ",{\"role\":\"tool\",\"content\":\"x\"}]", ""), null);
        assertThat(noId.statusCode()).isEqualTo(400);
        assertThat(error(noId)).contains("tool_call_id");
        HttpResponse<String> role = post(server, CHAT, chat("[{\"role\":\"wizard\",\"content\":\"x\"}]", ""), null);
        assertThat(role.statusCode()).isEqualTo(400);
        assertThat(error(role)).contains("'wizard'");
        HttpResponse<String> nullUser = post(server, CHAT, chat("[{\"role\":\"user\",\"content\":null}]", ""), null);
        assertThat(nullUser.statusCode()).isEqualTo(400);
        assertThat(error(nullUser)).contains("message 0").contains("content");
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    @Test
    void unsupportedFieldsAreRefusedByNameAndHarmlessDefaultsAccepted() throws Exception {
        String messages = "[{\"role\":\"user\",\"content\":\"hi\"}]";
        String[][] refused = {
                {",\"tool_choice\":\"required\"", "tool_choice", "needs 'tools'"},
                {",\"functions\":[{\"name\":\"f\"}]", "functions", "not supported"},
                {",\"response_format\":{\"type\":\"yaml\"}", "response_format", "yaml"},
                {",\"response_format\":{\"type\":\"json_schema\"}", "response_format", "'json_schema'"},
                {",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"integer\","
                        + "\"minimum\":1}}}", "response_format", "'minimum'"},
                {",\"n\":17", "n", "[1, 16]"},
                {",\"logit_bias\":{\"5\":10}", "logit_bias", "not supported"},
                {",\"frobnicate\":true", "frobnicate", "not supported"},
                {",\"prompt\":\"x\"", "prompt", "/v1/completions"},
                {",\"top_logprobs\":3", "top_logprobs", "'logprobs': true"},
                {",\"logprobs\":true,\"top_logprobs\":21", "top_logprobs", "21"},
                {",\"stream_options\":{\"include_usage\":true}", "stream_options", "stream"}};
        for (String[] r : refused) {
            HttpResponse<String> resp = post(server, CHAT, chat(messages, r[0]), null);
            assertThat(resp.statusCode()).as(r[0]).isEqualTo(400);
            assertThat(JSON.readTree(resp.body()).get("error").get("param").asText()).as(r[0]).isEqualTo(r[1]);
            assertThat(error(resp)).as(r[0]).contains(r[1]).contains(r[2]);
        }
        HttpResponse<String> echo = post(server, "/v1/completions", "{\"prompt\":\"abc\",\"echo\":true}", null);
        assertThat(echo.statusCode()).isEqualTo(400);
        assertThat(error(echo)).contains("echo");
        HttpResponse<String> six = post(server, "/v1/completions", "{\"prompt\":\"abc\",\"logprobs\":6}", null);
        assertThat(six.statusCode()).isEqualTo(400);
        assertThat(error(six)).contains("logprobs").contains("6");

        String harmless = ",\"user\":\"u-1\",\"metadata\":{\"k\":\"v\"},\"store\":false,\"service_tier\":\"auto\","
                + "\"parallel_tool_calls\":true,\"tools\":null,\"response_format\":null,\"n\":1,\"logit_bias\":{},"
                + "\"modalities\":[\"text\"],\"logprobs\":false";
        HttpResponse<String> ok = post(server, CHAT, chat(messages, harmless), null);
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        assertThat(JSON.readTree(ok.body()).get("choices").get(0).get("logprobs").isNull()).isTrue();
    }

    @Test
    void nChoicesAreSeparateGenerationsWhoseUsageAddsUp() throws Exception {
        String messages = "[{\"role\":\"user\",\"content\":\"Name three tiers.\"}]";
        String sampled = ",\"temperature\":1.0,\"seed\":40,\"max_tokens\":10";
        HttpResponse<String> whole = post(server, CHAT, chat(messages, sampled + ",\"n\":3"), null);
        assertThat(whole.statusCode()).as(whole.body()).isEqualTo(200);
        JsonNode w = JSON.readTree(whole.body());
        JsonNode choices = w.get("choices");
        assertThat(choices).hasSize(3);
        int completion = 0;
        for (int i = 0; i < 3; i++) {
            assertThat(choices.get(i).get("index").asInt()).isEqualTo(i);
            // choice i is the generation seeded with seed + i, exactly
            JsonNode single = JSON.readTree(post(server, CHAT, chat(messages, ",\"temperature\":1.0,\"seed\":" + (40 + i)
                    + ",\"max_tokens\":10"), null).body());
            assertThat(choices.get(i).get("message")).isEqualTo(single.get("choices").get(0).get("message"));
            assertThat(choices.get(i).get("finish_reason")).isEqualTo(single.get("choices").get(0).get("finish_reason"));
            assertThat(w.get("usage").get("prompt_tokens")).isEqualTo(single.get("usage").get("prompt_tokens"));
            completion += single.get("usage").get("completion_tokens").asInt();
        }
        assertThat(w.get("usage").get("completion_tokens").asInt()).as("the choices' tokens add up").isEqualTo(completion);

        List<String> ev = events(post(server, CHAT, chat(messages, sampled + ",\"n\":3,\"stream\":true,"
                + "\"stream_options\":{\"include_usage\":true}"), null).body());
        StringBuilder[] joined = {new StringBuilder(), new StringBuilder(), new StringBuilder()};
        int finishes = 0;
        for (String e : ev.subList(0, ev.size() - 2)) {
            JsonNode c = JSON.readTree(e).get("choices").get(0);
            int i = c.get("index").asInt();
            if (c.get("delta").has("content")) {
                joined[i].append(c.get("delta").get("content").asText());
            }
            if (!c.get("finish_reason").isNull()) {
                finishes++;
                assertThat(c.get("finish_reason")).isEqualTo(choices.get(i).get("finish_reason"));
            }
        }
        assertThat(finishes).isEqualTo(3);
        for (int i = 0; i < 3; i++) {
            assertThat(joined[i].toString()).isEqualTo(choices.get(i).get("message").get("content").asText());
        }
        assertThat(JSON.readTree(ev.get(ev.size() - 2)).get("usage")).isEqualTo(w.get("usage"));

        String shared = "Choices share the prompt's blocks: " + "tier ".repeat(12);
        int fullBlocks = engine.model().tokenizer().encode(shared).length / BLOCK_TOKENS;
        assertThat(fullBlocks).isGreaterThanOrEqualTo(2);
        long hitsBefore = engine.kv().stats().hits(dev.strata.cache.kv.BlockLocation.DEVICE);
        JsonNode greedy = JSON.readTree(post(server, "/v1/completions", "{\"prompt\":" + JSON.writeValueAsString(shared)
                + ",\"max_tokens\":6,\"n\":3}", null).body());
        assertThat(greedy.get("choices")).hasSize(3);
        assertThat(greedy.get("choices").get(1).get("text")).as("greedy choices agree").isEqualTo(greedy.get("choices").get(0).get("text"));
        assertThat(greedy.get("choices").get(2).get("text")).isEqualTo(greedy.get("choices").get(0).get("text"));
        assertThat(engine.kv().stats().hits(dev.strata.cache.kv.BlockLocation.DEVICE) - hitsBefore)
                .as("the later choices reuse the prompt's full blocks").isGreaterThanOrEqualTo(2L * fullBlocks);
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    /** Checks one chat logprobs entry: at most 0, bytes spelling the token, top alternatives in order. */
    private static void checkChatEntry(JsonNode entry, int top, boolean greedy) {
        double lp = entry.get("logprob").asDouble();
        assertThat(lp).isLessThanOrEqualTo(0.0);
        assertThat(tokenOfBytes(entry)).isEqualTo(entry.get("token").asText());
        JsonNode tops = entry.get("top_logprobs");
        assertThat(tops).hasSize(top);
        double mass = 0;
        double previous = 0;
        for (JsonNode t : tops) {
            double l = t.get("logprob").asDouble();
            assertThat(l).isLessThanOrEqualTo(previous);
            previous = l;
            mass += Math.exp(l);
            assertThat(tokenOfBytes(t)).isEqualTo(t.get("token").asText());
        }
        assertThat(mass).isLessThanOrEqualTo(1.0 + 1e-9);
        if (greedy && top > 0) {
            assertThat(tops.get(0).get("token")).isEqualTo(entry.get("token"));
            assertThat(tops.get(0).get("logprob").asDouble()).isEqualTo(lp);
        }
    }

    /** The entry's bytes as UTF-8 text, or the {@code bytes:\\xNN} spelling when they are not whole characters. */
    private static String tokenOfBytes(JsonNode entry) {
        byte[] b = new byte[entry.get("bytes").size()];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) entry.get("bytes").get(i).asInt();
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(b)).toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            StringBuilder s = new StringBuilder("bytes:");
            for (byte x : b) {
                s.append(String.format("\\x%02x", x & 0xFF));
            }
            return s.toString();
        }
    }

    @Test
    void chatLogprobsWholeAndStreamedDescribeTheGeneratedTokens() throws Exception {
        String messages = "[{\"role\":\"user\",\"content\":\"Count: one two three\"}]";
        String req = chat(messages, ",\"max_tokens\":12,\"logprobs\":true,\"top_logprobs\":5");
        HttpResponse<String> whole = post(server, CHAT, req, null);
        assertThat(whole.statusCode()).as(whole.body()).isEqualTo(200);
        JsonNode w = JSON.readTree(whole.body());
        JsonNode content = w.get("choices").get(0).get("logprobs").get("content");
        int completion = w.get("usage").get("completion_tokens").asInt();
        boolean stoppedByToken = w.get("choices").get(0).get("finish_reason").asText().equals("stop");
        assertThat(content).hasSize(stoppedByToken ? completion - 1 : completion); // the stop token is not listed
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        for (JsonNode e : content) {
            checkChatEntry(e, 5, true);
            e.get("bytes").forEach(b -> bytes.write(b.asInt()));
        }
        assertThat(bytes.toString(StandardCharsets.UTF_8)).as("the tokens' bytes spell the content")
                .isEqualTo(w.get("choices").get(0).get("message").get("content").asText());

        List<String> ev = events(post(server, CHAT, req.substring(0, req.length() - 1) + ",\"stream\":true}", null).body());
        List<JsonNode> streamed = new ArrayList<>();
        for (String e : ev.subList(0, ev.size() - 1)) {
            JsonNode lp = JSON.readTree(e).get("choices").get(0).get("logprobs");
            if (lp != null && !lp.isNull()) {
                lp.get("content").forEach(streamed::add);
            }
        }
        assertThat(streamed).containsExactlyElementsOf(content);

        JsonNode plain = JSON.readTree(post(server, CHAT, chat(messages, ",\"max_tokens\":12,\"logprobs\":true"), null).body());
        JsonNode first = plain.get("choices").get(0).get("logprobs").get("content").get(0);
        assertThat(first.get("top_logprobs")).isEmpty();
        assertThat(first.get("logprob")).isEqualTo(content.get(0).get("logprob"));
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    @Test
    void completionLogprobsWholeAndStreamed() throws Exception {
        String req = "{\"prompt\":\"The quick brown fox\",\"max_tokens\":10,\"logprobs\":3,\"temperature\":0.8,\"seed\":11";
        HttpResponse<String> whole = post(server, "/v1/completions", req + "}", null);
        assertThat(whole.statusCode()).as(whole.body()).isEqualTo(200);
        JsonNode choice = JSON.readTree(whole.body()).get("choices").get(0);
        JsonNode lp = choice.get("logprobs");
        JsonNode tokens = lp.get("tokens");
        assertThat(tokens.size()).isPositive();
        assertThat(lp.get("token_logprobs")).hasSize(tokens.size());
        assertThat(lp.get("top_logprobs")).hasSize(tokens.size());
        assertThat(lp.get("text_offset")).hasSize(tokens.size());
        assertThat(lp.get("text_offset").get(0).asInt()).isZero();
        for (int i = 0; i < tokens.size(); i++) {
            String token = tokens.get(i).asText();
            if (i + 1 < tokens.size()) { // a token advances the offset by its characters (a partial one's by at most its bytes)
                int step = lp.get("text_offset").get(i + 1).asInt() - lp.get("text_offset").get(i).asInt();
                if (token.startsWith("bytes:\\x")) {
                    assertThat(step).isBetween(0, token.length() / 4);
                } else {
                    assertThat(step).isEqualTo(token.codePointCount(0, token.length()));
                }
            }
            double l = lp.get("token_logprobs").get(i).asDouble();
            assertThat(l).isLessThanOrEqualTo(0.0);
            JsonNode tops = lp.get("top_logprobs").get(i);
            assertThat(tops.size()).isBetween(3, 4); // the three most likely, and the chosen one when not among them
            assertThat(tops.get(tokens.get(i).asText()).asDouble()).isEqualTo(l);
            double mass = 0;
            for (JsonNode v : tops) {
                assertThat(v.asDouble()).isLessThanOrEqualTo(0.0);
                mass += Math.exp(v.asDouble());
            }
            assertThat(mass).isLessThanOrEqualTo(1.0 + 1e-9);
        }

        List<String> ev = events(post(server, "/v1/completions", req + ",\"stream\":true}", null).body());
        List<JsonNode> streamed = new ArrayList<>();
        List<JsonNode> offsets = new ArrayList<>();
        for (String e : ev.subList(0, ev.size() - 1)) {
            JsonNode l = JSON.readTree(e).get("choices").get(0).get("logprobs");
            if (l != null && !l.isNull()) {
                l.get("tokens").forEach(streamed::add);
                l.get("text_offset").forEach(offsets::add);
            }
        }
        assertThat(streamed).as("seeded: the same tokens").containsExactlyElementsOf(tokens);
        assertThat(offsets).containsExactlyElementsOf(lp.get("text_offset"));
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    private static String error(HttpResponse<String> r) throws Exception {
        JsonNode e = JSON.readTree(r.body()).get("error");
        assertThat(e.get("code").asInt()).isEqualTo(r.statusCode());
        return e.get("message").asText();
    }

    /** The real generator with each text delta held for {@link #SLOW_NANOS}, so a stream outlives a disconnect. */
    private record SlowGenerator(Generator inner) implements Generator {
        @Override
        public Handle submit(GenerationRequest request, TextSink sink) {
            return inner.submit(request, new TextSink() {
                @Override
                public void text(String delta) {
                    sink.text(delta);
                    try {
                        Thread.sleep(Duration.ofNanos(SLOW_NANOS));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }

                @Override
                public void finished(FinishReason reason, int promptTokens, int completionTokens) {
                    sink.finished(reason, promptTokens, completionTokens);
                }

                @Override
                public void failed(RuntimeException error) {
                    sink.failed(error);
                }
            });
        }

        @Override
        public int queueLength() {
            return inner.queueLength();
        }

        @Override
        public void writeEngineMetrics(PrometheusText out) {
            inner.writeEngineMetrics(out);
        }

        @Override
        public void close() {
        }
    }
}
