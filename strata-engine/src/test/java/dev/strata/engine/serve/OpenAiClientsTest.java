package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.core.JsonValue;
import com.openai.errors.BadRequestException;
import com.openai.models.FunctionDefinition;
import com.openai.models.FunctionParameters;
import com.openai.models.ResponseFormatJsonObject;
import com.openai.models.ResponseFormatJsonSchema;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionMessageToolCall;
import com.openai.models.chat.completions.ChatCompletionNamedToolChoice;
import com.openai.models.chat.completions.ChatCompletionToolMessageParam;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.chat.completions.ChatCompletionToolChoiceOption;
import com.openai.models.chat.completions.ChatCompletionTokenLogprob;
import com.openai.models.completions.CompletionUsage;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.chat.request.ResponseFormatType;
import dev.langchain4j.model.chat.request.ToolChoice;
import dev.langchain4j.model.chat.request.json.JsonObjectSchema;
import dev.langchain4j.model.chat.request.json.JsonSchema;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.openai.LogProb;
import dev.langchain4j.model.openai.OpenAiChatModel;
import dev.langchain4j.model.openai.OpenAiChatResponseMetadata;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server driven by real OpenAI clients, the official OpenAI Java SDK and LangChain4j's OpenAI
 * models, over a synthesized Qwen3-MoE model on an ephemeral loopback port: each request is what
 * the client builds by default plus the options named, and each answer is what the client parses.
 * The synthesized model's text is noise, so the tests compare answers with each other (streamed
 * against whole) and check their shape, never their words.
 */
class OpenAiClientsTest {
    private static final String MODEL = "synth-qwen3-moe";
    private static final String KEY = "client-key";
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path dir;

    static ServeEngine engine;
    static ContinuousBatchingGenerator generator;
    static OpenAiServer server;
    static String baseUrl;
    static OpenAIClient openai;

    @BeforeAll
    static void start() throws Exception {
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3_MOE, 7), dir, (d, t, b, tb) -> { });
        engine = new ServeEngine(dir, 1, 16, 80, 4);
        ServeMetrics metrics = new ServeMetrics();
        generator = new ContinuousBatchingGenerator(engine, metrics);
        server = OpenAiServer.start(ServerConfig.local(0, MODEL, 1100, 512).withApiKey(KEY), engine, generator, metrics); // tools make prompts long
        baseUrl = "http://127.0.0.1:" + server.port() + "/v1";
        openai = OpenAIOkHttpClient.builder().baseUrl(baseUrl).apiKey(KEY).maxRetries(0).timeout(Duration.ofSeconds(30)).build();
    }

    @AfterAll
    static void stop() {
        if (openai != null) {
            openai.close();
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

    private static ChatCompletionCreateParams.Builder openAiChat(String user) {
        return ChatCompletionCreateParams.builder().model(MODEL).addSystemMessage("Be brief.").addUserMessage(user)
                .maxCompletionTokens(10).temperature(0.0);
    }

    @Test
    void openAiSdkChatAndStreamedChatAgreeAndUsageComesLast() {
        ChatCompletion whole = openai.chat().completions().create(openAiChat("Tell me about memory tiers.").build());
        whole.validate(); // every field the SDK requires is there, with its type
        String text = whole.choices().getFirst().message().content().orElseThrow();
        CompletionUsage usage = whole.usage().orElseThrow();
        assertThat(usage.totalTokens()).isEqualTo(usage.promptTokens() + usage.completionTokens());

        List<ChatCompletionChunk> chunks = new ArrayList<>();
        ChatCompletionCreateParams streamed = openAiChat("Tell me about memory tiers.")
                .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build()).build();
        try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions().createStreaming(streamed)) {
            stream.stream().forEach(chunks::add);
        }
        StringBuilder joined = new StringBuilder();
        for (ChatCompletionChunk c : chunks.subList(0, chunks.size() - 1)) {
            c.validate();
            assertThat(c.usage()).as("usage only on the last chunk").isEmpty();
            c.choices().getFirst().delta().content().ifPresent(joined::append);
        }
        assertThat(joined.toString()).isEqualTo(text);
        ChatCompletionChunk last = chunks.getLast();
        assertThat(last.choices()).isEmpty();
        assertThat(last.usage()).contains(usage);
        assertThat(chunks.get(chunks.size() - 2).choices().getFirst().finishReason()).isPresent();

        List<ChatCompletionChunk> plain = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions()
                .createStreaming(openAiChat("Tell me about memory tiers.").build())) {
            stream.stream().forEach(plain::add);
        }
        assertThat(plain).allSatisfy(c -> assertThat(c.usage()).isEmpty());
        assertThat(plain.getLast().choices().getFirst().finishReason()).isPresent();
    }

    @Test
    void openAiSdkLogprobsDescribeTheTokens() {
        ChatCompletion c = openai.chat().completions().create(openAiChat("Count to five.").logprobs(true).topLogprobs(4).build());
        c.validate();
        List<ChatCompletionTokenLogprob> content = c.choices().getFirst().logprobs().orElseThrow().content().orElseThrow();
        assertThat(content).isNotEmpty();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        for (ChatCompletionTokenLogprob t : content) {
            assertThat(t.logprob()).isLessThanOrEqualTo(0.0);
            assertThat(t.topLogprobs()).hasSize(4);
            assertThat(t.topLogprobs().getFirst().token()).as("greedy: the chosen token is the most likely").isEqualTo(t.token());
            assertThat(t.topLogprobs().getFirst().logprob()).isEqualTo(t.logprob());
            assertThat(t.topLogprobs().stream().mapToDouble(x -> Math.exp(x.logprob())).sum()).isLessThanOrEqualTo(1.0 + 1e-9);
            t.bytes().orElseThrow().forEach(b -> bytes.write(b.intValue()));
        }
        assertThat(bytes.toString(StandardCharsets.UTF_8)).isEqualTo(c.choices().getFirst().message().content().orElseThrow());

        List<ChatCompletionTokenLogprob> streamed = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions()
                .createStreaming(openAiChat("Count to five.").logprobs(true).topLogprobs(4).build())) {
            stream.stream().forEach(ch -> ch.choices().forEach(choice -> choice.logprobs()
                    .flatMap(ChatCompletionChunk.Choice.Logprobs::content).ifPresent(streamed::addAll)));
        }
        assertThat(streamed).isEqualTo(content);
    }

    /** A structured answer, as an application declares it for the SDK's structured outputs. */
    public record TierChoice(String name, long blocks, Tier tier, boolean shared) {
    }

    /** The tiers a structured answer chooses among. */
    public enum Tier { DEVICE, HOST, DISK }

    @Test
    void openAiSdkResponseFormatsGiveJsonThatParsesAndValidatesEvenFromARandomModel() throws Exception {
        ChatCompletion object = openai.chat().completions().create(openAiChat("Describe a tier as JSON.")
                .responseFormat(ResponseFormatJsonObject.builder().build()).maxCompletionTokens(40).build());
        String text = object.choices().getFirst().message().content().orElseThrow();
        assertThat(JSON.readTree(text).isObject()).as(text).isTrue();

        String schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":12},"
                + "\"blocks\":{\"type\":\"integer\"},\"tier\":{\"enum\":[\"DEVICE\",\"HOST\",\"DISK\"]},"
                + "\"links\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"maxItems\":3}},"
                + "\"required\":[\"name\",\"blocks\",\"tier\",\"links\"],\"additionalProperties\":false}";
        ResponseFormatJsonSchema format = ResponseFormatJsonSchema.builder().jsonSchema(ResponseFormatJsonSchema.JsonSchema.builder()
                .name("tier").strict(true).schema(JsonValue.from(JSON.readValue(schema, Map.class))).build()).build();
        com.networknt.schema.Schema validator = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(schema);
        for (double temperature : new double[] {0.0, 1.0}) {
            ChatCompletion c = openai.chat().completions().create(openAiChat("Pick a tier.").responseFormat(format)
                    .temperature(temperature).seed(3L).maxCompletionTokens(80).build());
            c.validate();
            String answer = c.choices().getFirst().message().content().orElseThrow();
            assertThat(validator.validate(JSON.readTree(answer))).as(answer).isEmpty();
            StringBuilder streamed = new StringBuilder();
            try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions().createStreaming(openAiChat("Pick a tier.")
                    .responseFormat(format).temperature(temperature).seed(3L).maxCompletionTokens(80).build())) {
                stream.stream().forEach(ch -> ch.choices().forEach(choice -> choice.delta().content().ifPresent(streamed::append)));
            }
            assertThat(streamed.toString()).isEqualTo(answer);
        }

        // the SDK's own structured outputs: it derives the schema from a class and parses the answer into it
        var typed = openai.chat().completions().create(openAiChat("Pick a tier.").maxCompletionTokens(80)
                .responseFormat(TierChoice.class).build());
        TierChoice choice = typed.choices().getFirst().message().content().orElseThrow();
        assertThat(choice.tier()).isIn((Object[]) Tier.values());
        assertThat(choice.name()).isNotNull();
    }

    @Test
    void openAiSdkSurfacesASchemaConstrainedDecodingCannotFollowAsABadRequestNamingIt() throws Exception {
        ResponseFormatJsonSchema format = ResponseFormatJsonSchema.builder().jsonSchema(ResponseFormatJsonSchema.JsonSchema.builder()
                .name("when").schema(JsonValue.from(JSON.readValue("{\"type\":\"object\",\"properties\":{\"at\":"
                        + "{\"type\":\"string\",\"format\":\"date-time\"}},\"required\":[\"at\"]}", Map.class))).build()).build();
        BadRequestException e = catchThrowableOfType(BadRequestException.class, () -> openai.chat().completions()
                .create(openAiChat("hi").responseFormat(format).build()));
        assertThat(e.statusCode()).isEqualTo(400);
        assertThat(e.param()).contains("response_format");
        assertThat(e.getMessage()).contains("'format'").contains("$.properties.at");

        BadRequestException n = catchThrowableOfType(BadRequestException.class,
                () -> openai.chat().completions().create(openAiChat("hi").n(17L).build()));
        assertThat(n.param()).contains("n");
        assertThat(n.getMessage()).contains("17");
    }

    @Test
    void openAiSdkToolLoopARequiredCallThenTheToolResultThenAnAnswer() throws Exception {
        String parameters = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":20},"
                + "\"unit\":{\"enum\":[\"C\",\"F\"]}},\"required\":[\"city\",\"unit\"],\"additionalProperties\":false}";
        FunctionParameters.Builder params = FunctionParameters.builder();
        JSON.readTree(parameters).fields().forEachRemaining(f -> params.putAdditionalProperty(f.getKey(),
                JsonValue.from(JSON.convertValue(f.getValue(), Object.class))));
        FunctionDefinition weather = FunctionDefinition.builder().name("weather").description("The weather in a city")
                .parameters(params.build()).build();
        FunctionDefinition time = FunctionDefinition.builder().name("time").description("The time in a zone")
                .parameters(FunctionParameters.builder().putAdditionalProperty("type", JsonValue.from("object"))
                        .putAdditionalProperty("properties", JsonValue.from(Map.of("zone", Map.of("type", "string"))))
                        .putAdditionalProperty("required", JsonValue.from(List.of("zone"))).build()).build();
        com.networknt.schema.Schema validator = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(parameters);

        ChatCompletionCreateParams.Builder ask = openAiChat("Weather in Paris?").addFunctionTool(weather).addFunctionTool(time)
                .maxCompletionTokens(80);
        ChatCompletion first = openai.chat().completions().create(ask.toolChoice(ChatCompletionToolChoiceOption.Auto.REQUIRED).build());
        first.validate();
        ChatCompletion.Choice choice = first.choices().getFirst();
        assertThat(choice.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
        List<ChatCompletionMessageToolCall> calls = choice.message().toolCalls().orElseThrow();
        assertThat(calls).hasSize(1);
        var call = calls.getFirst().asFunction();
        assertThat(call.function().name()).isIn("weather", "time");

        ChatCompletion named = openai.chat().completions().create(ask.toolChoice(ChatCompletionNamedToolChoice.builder()
                .function(ChatCompletionNamedToolChoice.Function.builder().name("weather").build()).build()).build());
        var forced = named.choices().getFirst().message().toolCalls().orElseThrow().getFirst().asFunction();
        assertThat(forced.function().name()).isEqualTo("weather");
        assertThat(validator.validate(JSON.readTree(forced.function().arguments()))).as(forced.function().arguments()).isEmpty();

        // the follow-up carries only the tool called (the synthesized tokenizer makes long prompts)
        ChatCompletion answer = openai.chat().completions().create(openAiChat("Weather in Paris?").addFunctionTool(weather)
                .addMessage(named.choices().getFirst().message())
                .addMessage(ChatCompletionToolMessageParam.builder().toolCallId(forced.id()).content("{\"celsius\": 21}").build())
                .toolChoice(ChatCompletionToolChoiceOption.Auto.NONE).build());
        answer.validate();
        ChatCompletion without = openai.chat().completions().create(openAiChat("Weather in Paris?").addFunctionTool(weather)
                .toolChoice(ChatCompletionToolChoiceOption.Auto.NONE).build());
        assertThat(answer.usage().orElseThrow().promptTokens()).as("the call and its result are in the prompt")
                .isGreaterThan(without.usage().orElseThrow().promptTokens());
        assertThat(answer.choices().getFirst().message().toolCalls().orElse(List.of())).as("tool_choice none: no call").isEmpty();
        assertThat(answer.choices().getFirst().message().content()).isPresent();
    }

    @Test
    void openAiSdkGetsNChoices() {
        ChatCompletion c = openai.chat().completions().create(openAiChat("Name a tier.").n(2L).temperature(1.0).seed(5L).build());
        c.validate();
        assertThat(c.choices()).extracting(ChatCompletion.Choice::index).containsExactly(0L, 1L);
        assertThat(c.choices()).allSatisfy(choice -> assertThat(choice.message().content()).isPresent());
    }

    private static OpenAiChatModel.OpenAiChatModelBuilder langChainModel() {
        return OpenAiChatModel.builder().baseUrl(baseUrl).apiKey(KEY).modelName(MODEL).temperature(0.0).maxTokens(10)
                .maxRetries(0).timeout(Duration.ofSeconds(30));
    }

    @Test
    void langChain4jChatStreamedChatAndUsage() throws Exception {
        ChatResponse whole = langChainModel().build().chat(ChatRequest.builder().messages(UserMessage.from("Explain KV caches.")).build());
        String text = whole.aiMessage().text();
        assertThat(whole.tokenUsage().totalTokenCount())
                .isEqualTo(whole.tokenUsage().inputTokenCount() + whole.tokenUsage().outputTokenCount());
        assertThat(whole.finishReason()).isNotNull();

        OpenAiStreamingChatModel streaming = OpenAiStreamingChatModel.builder().baseUrl(baseUrl).apiKey(KEY).modelName(MODEL)
                .temperature(0.0).maxTokens(10).timeout(Duration.ofSeconds(30)).build();
        StringBuilder joined = new StringBuilder();
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        streaming.chat(ChatRequest.builder().messages(UserMessage.from("Explain KV caches.")).build(), new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(String partial) {
                joined.append(partial);
            }

            @Override
            public void onCompleteResponse(ChatResponse response) {
                done.complete(response);
            }

            @Override
            public void onError(Throwable error) {
                done.completeExceptionally(error);
            }
        });
        ChatResponse streamed = done.get(30, TimeUnit.SECONDS);
        assertThat(joined.toString()).isEqualTo(text);
        assertThat(streamed.aiMessage().text()).isEqualTo(text);
        assertThat(streamed.tokenUsage()).as("LangChain4j asks for include_usage and reads the last chunk")
                .isEqualTo(whole.tokenUsage());
    }

    @Test
    void langChain4jLogprobs() {
        ChatResponse r = langChainModel().logprobs(true).topLogprobs(2).build()
                .chat(ChatRequest.builder().messages(UserMessage.from("Count to five.")).build());
        List<LogProb> logprobs = ((OpenAiChatResponseMetadata) r.metadata()).logProbs();
        assertThat(logprobs).isNotEmpty();
        for (LogProb p : logprobs) {
            assertThat(p.logprob()).isLessThanOrEqualTo(0.0);
            assertThat(p.topLogprobs()).hasSize(2);
            assertThat(p.topLogprobs().getFirst().token()).isEqualTo(p.token());
        }
    }

    @Test
    void langChain4jJsonModeSchemaAndARequiredToolCall() throws Exception {
        ChatResponse json = langChainModel().maxTokens(40).responseFormat(ResponseFormat.JSON).build()
                .chat(ChatRequest.builder().messages(UserMessage.from("A tier as JSON.")).build());
        assertThat(JSON.readTree(json.aiMessage().text()).isObject()).as(json.aiMessage().text()).isTrue();

        JsonObjectSchema person = JsonObjectSchema.builder().addStringProperty("name").addIntegerProperty("age")
                .addEnumProperty("tier", List.of("DEVICE", "HOST", "DISK")).required("name", "age", "tier").build();
        ResponseFormat format = ResponseFormat.builder().type(ResponseFormatType.JSON)
                .jsonSchema(JsonSchema.builder().name("person").rootElement(person).build()).build();
        ChatResponse structured = langChainModel().maxTokens(80).strictJsonSchema(true)
                .supportedCapabilities(Capability.RESPONSE_FORMAT_JSON_SCHEMA).build()
                .chat(ChatRequest.builder().messages(UserMessage.from("A person.")).responseFormat(format).build());
        JsonNode value = JSON.readTree(structured.aiMessage().text());
        assertThat(value.get("age").isIntegralNumber()).as(value.toString()).isTrue();
        assertThat(value.get("tier").asText()).isIn("DEVICE", "HOST", "DISK");

        ToolSpecification weather = ToolSpecification.builder().name("weather").description("The weather in a city")
                .parameters(JsonObjectSchema.builder().addStringProperty("city").required("city").build()).build();
        ChatResponse call = langChainModel().maxTokens(80).build().chat(ChatRequest.builder()
                .messages(UserMessage.from("Weather in Oslo?")).toolSpecifications(weather).toolChoice(ToolChoice.REQUIRED).build());
        assertThat(call.aiMessage().hasToolExecutionRequests()).isTrue();
        ToolExecutionRequest request = call.aiMessage().toolExecutionRequests().getFirst();
        assertThat(request.name()).isEqualTo("weather");
        assertThat(JSON.readTree(request.arguments()).get("city").isTextual()).as(request.arguments()).isTrue();
    }
}
