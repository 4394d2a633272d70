package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.engine.tokenizer.ChatMessage;
import dev.strata.engine.tokenizer.TokenizerConfig;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server renders chat prompts with the checkpoint's own chat template: the prompt it counts is
 * the template's text, and a chat the template refuses ({@code raise_exception}) is a 400 naming
 * the template's reason.
 */
class ChatTemplateServeTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void chatPromptsComeFromTheCheckpointsTemplateAndItsRefusalIsA400(@TempDir Path dir) throws Exception {
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3, 5), dir, (d, t, b, tb) -> { });
        // swap in Mistral-7B-Instruct-v0.1's template: [INST] turns, no system message allowed
        String mistral;
        try (InputStream in = getClass().getResourceAsStream("/dev/strata/engine/synth/chat-templates/mistral-7b-instruct-v0.1.jinja")) {
            mistral = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Path configFile = dir.resolve(TokenizerConfig.FILE_NAME);
        ObjectNode config = (ObjectNode) JSON.readTree(configFile.toFile());
        config.put("chat_template", mistral);
        Files.writeString(configFile, JSON.writeValueAsString(config));

        try (ServeEngine engine = new ServeEngine(dir, 1, 16, 40, 4)) {
            ServeMetrics metrics = new ServeMetrics();
            try (ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, metrics);
                 OpenAiServer server = OpenAiServer.start(ServerConfig.local(0, "m", 256, 512), engine, generator, metrics)) {
                HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
                String text = engine.model().chat().render(List.of(ChatMessage.user("Hello there")), true);
                assertThat(text).isEqualTo("[INST] Hello there [/INST]"); // Qwen has no bos token: none is printed

                HttpResponse<String> ok = post(client, server, "{\"model\":\"m\",\"max_tokens\":3,\"messages\":"
                        + "[{\"role\":\"user\",\"content\":\"Hello there\"}]}");
                assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
                assertThat(JSON.readTree(ok.body()).get("usage").get("prompt_tokens").asInt())
                        .isEqualTo(engine.model().tokenizer().encode(text).length);

                HttpResponse<String> refused = post(client, server, "{\"model\":\"m\",\"max_tokens\":3,\"messages\":"
                        + "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi\"}]}");
                assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);
                JsonNode error = JSON.readTree(refused.body()).get("error");
                assertThat(error.get("message").asText())
                        .contains("Conversation roles must alternate user/assistant/user/assistant/...");
                assertThat(error.get("param").asText()).isEqualTo("messages");
            }
        }
    }

    private static HttpResponse<String> post(HttpClient client, OpenAiServer server, String body) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return client.send(req, HttpResponse.BodyHandlers.ofString());
    }
}
