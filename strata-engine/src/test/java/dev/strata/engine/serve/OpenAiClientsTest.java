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
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.chat.completions.ChatCompletionToolChoiceOption;
import com.openai.models.chat.completions.ChatCompletionTokenLogprob;
import com.openai.models.completions.CompletionUsage;
import dev.langchain4j.data.message.UserMessage;
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
        engine = new ServeEngine(dir, 1, 16, 40, 4);
        ServeMetrics metrics = new ServeMetrics();
        generator = new ContinuousBatchingGenerator(engine, metrics);
        server = OpenAiServer.start(ServerConfig.local(0, MODEL, 600, 512).withApiKey(KEY), engine, generator, metrics); // tools make prompts long
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

    @Test
    void openAiSdkSurfacesAnUnsupportedFieldAsABadRequestNamingIt() {
        BadRequestException e = catchThrowableOfType(BadRequestException.class, () -> openai.chat().completions()
                .create(openAiChat("hi").responseFormat(ResponseFormatJsonObject.builder().build()).build()));
        assertThat(e.statusCode()).isEqualTo(400);
        assertThat(e.param()).contains("response_format");
        assertThat(e.getMessage()).contains("response_format").contains("not supported yet");

        BadRequestException n = catchThrowableOfType(BadRequestException.class,
                () -> openai.chat().completions().create(openAiChat("hi").n(17L).build()));
        assertThat(n.param()).contains("n");
        assertThat(n.getMessage()).contains("17");
    }

    @Test
    void openAiSdkSendsToolsAndAutoIsAcceptedWhileRequiredIsABadRequest() {
        FunctionDefinition weather = FunctionDefinition.builder().name("weather").description("The weather in a city")
                .parameters(FunctionParameters.builder().putAdditionalProperty("type", JsonValue.from("object"))
                        .putAdditionalProperty("properties", JsonValue.from(Map.of("city", Map.of("type", "string")))).build())
                .build();
        ChatCompletion c = openai.chat().completions().create(openAiChat("Weather in Paris?").addFunctionTool(weather)
                .toolChoice(ChatCompletionToolChoiceOption.Auto.AUTO).build());
        c.validate();
        ChatCompletion plain = openai.chat().completions().create(openAiChat("Weather in Paris?").build());
        assertThat(c.usage().orElseThrow().promptTokens()).as("the tools are rendered into the prompt")
                .isGreaterThan(plain.usage().orElseThrow().promptTokens());

        BadRequestException e = catchThrowableOfType(BadRequestException.class, () -> openai.chat().completions()
                .create(openAiChat("hi").addFunctionTool(weather).toolChoice(ChatCompletionToolChoiceOption.Auto.REQUIRED).build()));
        assertThat(e.statusCode()).isEqualTo(400);
        assertThat(e.param()).contains("tool_choice");
        assertThat(e.getMessage()).contains("required").contains("not supported yet");
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
    void langChain4jSurfacesAnUnsupportedFieldAsAClearError() {
        Throwable e = catchThrowable(() -> langChainModel().responseFormat(ResponseFormat.JSON).build()
                .chat(ChatRequest.builder().messages(UserMessage.from("hi")).build()));
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).contains("response_format").contains("not supported yet");
    }
}
