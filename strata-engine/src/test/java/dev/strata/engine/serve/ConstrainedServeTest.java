package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Constrained decoding end to end over synthesized models with random weights, one with a
 * byte-level tokenizer (Qwen3) and one SentencePiece-style with byte fallback (Mixtral): a
 * {@code json_schema} answer always validates, greedy or sampled, whole or streamed, with
 * log-probabilities of the tokens actually drawn; a forced tool call always names a listed
 * function with arguments valid under its schema; a budget too small still ends the request
 * normally ({@code length}).
 */
class ConstrainedServeTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final SchemaRegistry VALIDATORS = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);
    private static final String SCHEMA = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"minLength\":1,"
            + "\"maxLength\":16},\"days\":{\"type\":\"integer\"},\"unit\":{\"enum\":[\"C\",\"F\"]},\"alerts\":{\"type\":\"array\","
            + "\"items\":{\"type\":\"string\",\"maxLength\":6},\"maxItems\":2},\"note\":{\"type\":[\"string\",\"null\"],\"maxLength\":10}},"
            + "\"required\":[\"city\",\"days\",\"unit\",\"alerts\"],\"additionalProperties\":false}";
    private static final String TOOLS = "[{\"type\":\"function\",\"function\":{\"name\":\"weather\",\"parameters\":" + SCHEMA + "}},"
            + "{\"type\":\"function\",\"function\":{\"name\":\"time\",\"parameters\":{\"type\":\"object\",\"properties\":"
            + "{\"zone\":{\"enum\":[\"UTC\",\"CET\"]}},\"required\":[\"zone\"]}}}]";

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(value = ModelFamily.class, names = {"QWEN3", "MIXTRAL"})
    void schemaAnswersAndForcedCallsAreAlwaysValid(ModelFamily family) throws Exception {
        Path model = Files.createDirectories(dir.resolve(family.name()));
        ModelSynthesizer.write(SynthSpec.small(family, 3), model, (d, t, b, tb) -> { });
        Schema schema = VALIDATORS.getSchema(SCHEMA);
        try (ServeEngine engine = new ServeEngine(model, 1, 16, 64, 4);
             ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, new ServeMetrics());
             OpenAiServer server = OpenAiServer.start(ServerConfig.local(0, "m", 900, 200), engine, generator, new ServeMetrics())) {
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            String format = ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"w\",\"strict\":true,\"schema\":"
                    + SCHEMA + "}}";
            for (int seed = 0; seed < 4; seed++) {
                String sampling = seed == 0 ? ",\"temperature\":0" : ",\"temperature\":1.5,\"seed\":" + seed;
                JsonNode whole = body(post(client, server, chat(format + sampling + ",\"max_tokens\":120,\"logprobs\":true,\"top_logprobs\":2")));
                JsonNode choice = whole.get("choices").get(0);
                String content = choice.get("message").get("content").asText();
                assertThat(schema.validate(JSON.readTree(content))).as(content).isEmpty();
                assertThat(choice.get("finish_reason").asText()).isEqualTo("stop");
                java.io.ByteArrayOutputStream fromBytes = new java.io.ByteArrayOutputStream(); // a character may span tokens
                for (JsonNode lp : choice.get("logprobs").get("content")) {
                    assertThat(lp.get("logprob").asDouble()).as("a drawn token is allowed: finite log-probability").isGreaterThan(-1e4);
                    for (JsonNode b : lp.get("bytes")) {
                        fromBytes.write(b.asInt());
                    }
                }
                assertThat(fromBytes.toString(java.nio.charset.StandardCharsets.UTF_8)).as("each token's bytes, in order, are the answer").isEqualTo(content);
                String streamed = streamedContent(post(client, server, chat(format + sampling + ",\"max_tokens\":120,\"stream\":true")));
                assertThat(streamed).isEqualTo(content);

                JsonNode called = body(post(client, server, chat(",\"tools\":" + TOOLS + ",\"tool_choice\":\"required\"" + sampling
                        + ",\"max_tokens\":120")));
                JsonNode message = called.get("choices").get(0).get("message");
                assertThat(called.get("choices").get(0).get("finish_reason").asText()).as(message.toString()).isEqualTo("tool_calls");
                JsonNode call = message.get("tool_calls").get(0).get("function");
                JsonNode args = JSON.readTree(call.get("arguments").asText());
                if (call.get("name").asText().equals("weather")) {
                    assertThat(schema.validate(args)).as(args.toString()).isEmpty();
                } else {
                    assertThat(call.get("name").asText()).isEqualTo("time");
                    assertThat(args.get("zone").asText()).isIn("UTC", "CET");
                }
            }
            JsonNode cut = body(post(client, server, chat(format + ",\"max_tokens\":5")));
            assertThat(cut.get("choices").get(0).get("finish_reason").asText()).as("a budget below the shortest answer").isEqualTo("length");
        }
    }

    private static String chat(String extra) {
        return "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Oslo this week?\"}]" + extra + "}";
    }

    private static HttpResponse<String> post(HttpClient client, OpenAiServer server, String body) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode body(HttpResponse<String> r) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    private static String streamedContent(HttpResponse<String> r) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        StringBuilder out = new StringBuilder();
        for (String line : r.body().split("\n")) {
            if (line.startsWith("data: {")) {
                for (JsonNode c : JSON.readTree(line.substring(6)).get("choices")) {
                    JsonNode content = c.path("delta").get("content");
                    if (content != null && !content.isNull()) {
                        out.append(content.asText());
                    }
                }
            }
        }
        return out.toString();
    }
}
