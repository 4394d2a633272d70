package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.helpers.ChatCompletionAccumulator;
import com.openai.models.FunctionDefinition;
import com.openai.models.FunctionParameters;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionMessageFunctionToolCall;
import com.openai.models.chat.completions.ChatCompletionMessageToolCall;
import com.openai.core.JsonValue;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.engine.tokenizer.ChatMessage;
import dev.strata.engine.tokenizer.TokenizerConfig;
import dev.strata.memory.metrics.PrometheusText;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Chat {@code tools} over a synthesized Qwen3 model: the tools reach the checkpoint's chat
 * template (the counted prompt is the template's text with them), bad tools and unsupported
 * {@code tool_choice} values are 400s naming the field, and what the model says is split into
 * {@code content} and {@code tool_calls}, whole and streamed. A random-weight model never writes a
 * call, so the splitting is checked through a {@link ScriptedGenerator} that says a fixed text.
 */
class ToolCallServeTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MODEL = "synth-qwen3";
    private static final String CHAT = "/v1/chat/completions";
    private static final String USER = "[{\"role\":\"user\",\"content\":\"What is the weather in Paris?\"}]";
    private static final String WEATHER = "{\"type\":\"function\",\"function\":{\"name\":\"weather\",\"description\":\"The weather in a city\","
            + "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}";
    /** What the scripted model says: text, then two Hermes calls, cut where a marker and the JSON are split. */
    private static final List<String> SAID = List.of("Let me", " look.\n<tool", "_call>\n{\"name\": \"weather\", ",
            "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "\n<tool_call>\n{\"name\": \"time\", \"arguments\": {}}\n</tool_",
            "call>");

    @TempDir
    static Path dir;

    static ServeEngine engine;
    static ContinuousBatchingGenerator generator;
    static OpenAiServer server; // the real model
    static OpenAiServer scripted; // the scripted text
    static HttpClient client;

    @BeforeAll
    static void start() throws Exception {
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3, 5), dir, (d, t, b, tb) -> { });
        engine = new ServeEngine(dir, 1, 16, 64, 4); // 1024 tokens: the tools make the prompt long
        ServeMetrics metrics = new ServeMetrics();
        generator = new ContinuousBatchingGenerator(engine, metrics);
        server = OpenAiServer.start(ServerConfig.local(0, MODEL, 900, 64), engine, generator, metrics);
        scripted = OpenAiServer.start(ServerConfig.local(0, MODEL, 900, 64), engine, new ScriptedGenerator(SAID), metrics);
        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable c : new AutoCloseable[] {scripted, server, generator, engine}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private static HttpResponse<String> post(OpenAiServer s, String body) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + CHAT)).timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return client.send(req, HttpResponse.BodyHandlers.ofString());
    }

    private static String chat(String extra) {
        return "{\"model\":\"" + MODEL + "\",\"messages\":" + USER + ",\"max_tokens\":4" + extra + "}";
    }

    private static int promptTokens(HttpResponse<String> r) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body()).get("usage").get("prompt_tokens").asInt();
    }

    @Test
    void toolsReachTheTemplateUnlessToolChoiceIsNone() throws Exception {
        List<ChatMessage> messages = List.of(ChatMessage.user("What is the weather in Paris?"));
        String withTools = engine.model().chat().render(messages, List.of(JSON.readTree(WEATHER)), Map.of(), true);
        String without = engine.model().chat().render(messages, true);
        assertThat(withTools).contains("<tools>").contains("\"name\": \"weather\"").contains("The weather in a city");
        int toolsCount = engine.model().tokenizer().encode(withTools).length;
        int plainCount = engine.model().tokenizer().encode(without).length;
        assertThat(toolsCount).isGreaterThan(plainCount);

        assertThat(promptTokens(post(server, chat(",\"tools\":[" + WEATHER + "]")))).isEqualTo(toolsCount);
        assertThat(promptTokens(post(server, chat(",\"tools\":[" + WEATHER + "],\"tool_choice\":\"auto\"")))).isEqualTo(toolsCount);
        assertThat(promptTokens(post(server, chat(",\"tools\":[" + WEATHER + "],\"tool_choice\":\"none\"")))).isEqualTo(plainCount);
        assertThat(promptTokens(post(server, chat(",\"tool_choice\":\"auto\"")))).isEqualTo(plainCount);
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    @Test
    void badToolsAndUnsupportedToolChoicesAre400sNamingTheField() throws Exception {
        String[][] refused = {
                {",\"tools\":{\"type\":\"function\"}", "tools", "must be an array"},
                {",\"tools\":[{\"type\":\"retrieval\",\"function\":{\"name\":\"f\"}}]", "tools", "entry 0"},
                {",\"tools\":[{\"type\":\"function\"}]", "tools", "'function' object"},
                {",\"tools\":[" + WEATHER + ",{\"type\":\"function\",\"function\":{\"description\":\"x\"}}]", "tools", "entry 1"},
                {",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":[1]}}]", "tools", "parameters"},
                {",\"tools\":[" + WEATHER + "],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"rain\"}}",
                        "tool_choice", "'rain', which is not among 'tools' (weather)"},
                {",\"tools\":[" + WEATHER + "],\"tool_choice\":{\"type\":\"function\"}", "tool_choice", "must name a function"},
                {",\"tools\":[" + WEATHER + "],\"tool_choice\":\"required\",\"response_format\":{\"type\":\"json_object\"}",
                        "response_format", "cannot be combined"},
                {",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\","
                        + "\"properties\":{\"d\":{\"type\":\"string\",\"pattern\":\"^a\"}}}}}],\"tool_choice\":\"required\"",
                        "tools", "'pattern'"},
                {",\"tools\":[" + WEATHER + "],\"tool_choice\":\"sometimes\"", "tool_choice", "sometimes"},
                {",\"functions\":[{\"name\":\"f\"}]", "functions", "use 'tools'"}};
        for (String[] r : refused) {
            HttpResponse<String> resp = post(server, chat(r[0]));
            assertThat(resp.statusCode()).as(r[0]).isEqualTo(400);
            JsonNode error = JSON.readTree(resp.body()).get("error");
            assertThat(error.get("param").asText()).as(r[0]).isEqualTo(r[1]);
            assertThat(error.get("message").asText()).as(r[0]).contains(r[1]).contains(r[2]);
        }
    }

    @Test
    void aModelWithoutAChatTemplateRefusesTools(@TempDir Path plain) throws Exception {
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3, 5), plain, (d, t, b, tb) -> { });
        Path configFile = plain.resolve(TokenizerConfig.FILE_NAME);
        ObjectNode config = (ObjectNode) JSON.readTree(configFile.toFile());
        config.remove("chat_template");
        Files.writeString(configFile, JSON.writeValueAsString(config));
        try (ServeEngine e = new ServeEngine(plain, 1, 16, 40, 4)) {
            assertThat(e.model().chat().usesTemplate()).isFalse();
            try (OpenAiServer s = OpenAiServer.start(ServerConfig.local(0, MODEL, 900, 64), e, new ScriptedGenerator(List.of("hi")),
                    new ServeMetrics())) {
                HttpResponse<String> refused = post(s, chat(",\"tools\":[" + WEATHER + "]"));
                assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);
                JsonNode error = JSON.readTree(refused.body()).get("error");
                assertThat(error.get("param").asText()).isEqualTo("tools");
                assertThat(error.get("message").asText()).contains("no chat template");
                HttpResponse<String> none = post(s, chat(",\"tools\":[" + WEATHER + "],\"tool_choice\":\"none\""));
                assertThat(none.statusCode()).as("no tools rendered: nothing to refuse").isEqualTo(200);
            }
        }
    }

    @Test
    void theModelsCallsComeBackAsToolCalls() throws Exception {
        HttpResponse<String> r = post(scripted, chat(",\"tools\":[" + WEATHER + "]"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode choice = JSON.readTree(r.body()).get("choices").get(0);
        assertThat(choice.get("finish_reason").asText()).isEqualTo("tool_calls");
        JsonNode message = choice.get("message");
        assertThat(message.get("content").asText()).isEqualTo("Let me look.");
        JsonNode calls = message.get("tool_calls");
        assertThat(calls).hasSize(2);
        assertThat(calls.get(0).get("id").asText()).startsWith("call_").isNotEqualTo(calls.get(1).get("id").asText());
        assertThat(calls.get(0).get("type").asText()).isEqualTo("function");
        assertThat(calls.get(0).get("function").get("name").asText()).isEqualTo("weather");
        assertThat(JSON.readTree(calls.get(0).get("function").get("arguments").asText())).isEqualTo(JSON.readTree("{\"city\":\"Paris\"}"));
        assertThat(calls.get(1).get("function").get("name").asText()).isEqualTo("time");
        assertThat(calls.get(1).get("function").get("arguments").asText()).isEqualTo("{}");

        HttpResponse<String> noTools = post(scripted, chat(""));
        JsonNode plain = JSON.readTree(noTools.body()).get("choices").get(0);
        assertThat(plain.get("message").get("content").asText()).as("without tools the text is the content").isEqualTo(String.join("", SAID));
        assertThat(plain.get("message").has("tool_calls")).isFalse();
        assertThat(plain.get("finish_reason").asText()).isEqualTo("stop");
    }

    @Test
    void aStreamSendsTextThenEachWholeCallAsToolCallDeltas() throws Exception {
        HttpResponse<String> r = post(scripted, chat(",\"tools\":[" + WEATHER + "],\"stream\":true"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<JsonNode> chunks = new ArrayList<>();
        for (String block : r.body().split("\n\n")) {
            if (!block.isBlank() && !block.equals("data: [DONE]")) {
                chunks.add(JSON.readTree(block.substring("data: ".length())));
            }
        }
        StringBuilder content = new StringBuilder();
        List<JsonNode> toolDeltas = new ArrayList<>();
        for (JsonNode c : chunks.subList(0, chunks.size() - 1)) {
            JsonNode choice = c.get("choices").get(0);
            assertThat(choice.get("finish_reason").isNull()).isTrue();
            JsonNode delta = choice.get("delta");
            if (delta.has("content")) {
                assertThat(toolDeltas).as("text comes before the calls here").isEmpty();
                content.append(delta.get("content").asText());
            }
            if (delta.has("tool_calls")) {
                toolDeltas.add(delta.get("tool_calls").get(0));
            }
        }
        assertThat(content.toString()).isEqualTo("Let me look.");
        assertThat(content.toString()).doesNotContain("<");
        assertThat(toolDeltas).hasSize(4);
        assertThat(toolDeltas.get(0).get("index").asInt()).isZero();
        assertThat(toolDeltas.get(0).get("id").asText()).startsWith("call_");
        assertThat(toolDeltas.get(0).get("type").asText()).isEqualTo("function");
        assertThat(toolDeltas.get(0).get("function").get("name").asText()).isEqualTo("weather");
        assertThat(toolDeltas.get(1).get("index").asInt()).isZero();
        assertThat(JSON.readTree(toolDeltas.get(1).get("function").get("arguments").asText())).isEqualTo(JSON.readTree("{\"city\":\"Paris\"}"));
        assertThat(toolDeltas.get(2).get("index").asInt()).isEqualTo(1);
        assertThat(toolDeltas.get(2).get("function").get("name").asText()).isEqualTo("time");
        assertThat(toolDeltas.get(2).get("id").asText()).isNotEqualTo(toolDeltas.get(0).get("id").asText());
        assertThat(chunks.getLast().get("choices").get(0).get("finish_reason").asText()).isEqualTo("tool_calls");
    }

    @Test
    void theOpenAiSdkReadsTheCallsWholeAndStreamed() {
        OpenAIClient openai = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + scripted.port() + "/v1").apiKey("none")
                .maxRetries(0).timeout(Duration.ofSeconds(30)).build();
        try {
            ChatCompletionCreateParams params = ChatCompletionCreateParams.builder().model(MODEL).addUserMessage("Weather in Paris?")
                    .addFunctionTool(FunctionDefinition.builder().name("weather").description("The weather in a city")
                            .parameters(FunctionParameters.builder().putAdditionalProperty("type", JsonValue.from("object")).build())
                            .build())
                    .build();
            ChatCompletion whole = openai.chat().completions().create(params);
            whole.validate();
            ChatCompletion streamed;
            ChatCompletionAccumulator acc = ChatCompletionAccumulator.create();
            try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions().createStreaming(params)) {
                stream.stream().forEach(acc::accumulate);
            }
            streamed = acc.chatCompletion();
            for (ChatCompletion c : List.of(whole, streamed)) {
                ChatCompletion.Choice choice = c.choices().getFirst();
                assertThat(choice.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
                assertThat(choice.message().content()).contains("Let me look.");
                List<ChatCompletionMessageFunctionToolCall> calls = choice.message().toolCalls().orElseThrow().stream()
                        .map(ChatCompletionMessageToolCall::asFunction).toList();
                assertThat(calls).extracting(call -> call.function().name()).containsExactly("weather", "time");
                assertThat(calls).extracting(call -> call.function().arguments()).containsExactly("{\"city\":\"Paris\"}", "{}");
                Set<String> ids = new HashSet<>();
                calls.forEach(call -> ids.add(call.id()));
                assertThat(ids).hasSize(2).allSatisfy(id -> assertThat(id).startsWith("call_"));
            }
        } finally {
            openai.close();
        }
    }

    /** Says the same text, in the same pieces, to every request, without running the model; finishes at once. */
    private record ScriptedGenerator(List<String> pieces) implements Generator {
        @Override
        public Handle submit(GenerationRequest request, TextSink sink) {
            int prompt = request.prompt().length;
            sink.started(prompt, 0);
            pieces.forEach(sink::text);
            sink.finished(FinishReason.STOP, prompt, pieces.size());
            return () -> { };
        }

        @Override
        public int queueLength() {
            return 0;
        }

        @Override
        public void writeEngineMetrics(PrometheusText out) {
        }

        @Override
        public void close() {
        }
    }
}
