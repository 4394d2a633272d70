package dev.strata.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link ChatTemplate} renders the real chat templates of Qwen3, Llama 3.2, Mistral/Mixtral,
 * Mistral-Nemo (tools) and the Tulu format exactly as the reference renderer (Python jinja2 set up
 * as transformers sets it up) does: {@code chat-templates/expected.json} holds the reference's
 * output for every case of {@code chat-templates/cases.json} ({@code generate_expected.py}
 * regenerates it).
 */
class ChatTemplateTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TEMPLATES = "/dev/strata/engine/synth/chat-templates/";

    static Stream<Arguments> modelCases() throws IOException {
        JsonNode cases = fixture("cases.json");
        JsonNode expected = fixture("expected.json");
        List<Arguments> out = new ArrayList<>();
        for (Map.Entry<String, JsonNode> t : cases.get("templates").properties()) {
            for (JsonNode c : t.getValue().get("cases")) {
                String name = caseName(c);
                out.add(Arguments.of(t.getKey(), name, t.getValue(), c, expected.get(t.getKey()).get(name)));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("modelCases")
    void modelTemplateRendersAsTheReference(String template, String caseName, JsonNode spec, JsonNode c, JsonNode expected)
            throws IOException {
        assertThat(expected).as("expected.json has case " + caseName + " (rerun generate_expected.py)").isNotNull();
        JsonNode cases = fixture("cases.json");
        ChatTemplate t = ChatTemplate.of(resource(TEMPLATES + template + ".jinja"));
        List<ChatMessage> messages = messages(cases.get("conversations").get(c.get("conversation").asText()));
        List<JsonNode> tools = new ArrayList<>();
        if (c.path("tools").asBoolean()) {
            cases.get("tools").forEach(tools::add);
        }
        Map<String, Object> kwargs = new LinkedHashMap<>();
        c.path("kwargs").properties().forEach(e -> kwargs.put(e.getKey(), e.getValue()));
        String bos = spec.get("bos_token").isNull() ? null : spec.get("bos_token").asText();
        String eos = spec.get("eos_token").asText();
        boolean gen = c.get("add_generation_prompt").asBoolean();
        if (expected.has("text")) {
            assertThat(t.render(messages, tools, gen, bos, eos, kwargs)).isEqualTo(expected.get("text").asText());
        } else {
            assertThatThrownBy(() -> t.render(messages, tools, gen, bos, eos, kwargs))
                    .isInstanceOf(ChatTemplateException.class)
                    .hasMessage("chat template: " + expected.get("error").asText());
        }
    }

    static Stream<Arguments> inlineCases() throws IOException {
        JsonNode cases = fixture("cases.json").get("inline");
        JsonNode expected = fixture("expected.json").get("inline");
        List<Arguments> out = new ArrayList<>();
        cases.properties().forEach(e -> out.add(Arguments.of(e.getKey(), e.getValue(), expected.get(e.getKey()))));
        return out.stream();
    }

    /** Single features (tojson, string methods, namespace, loop filters, whitespace control, tests) as Python Jinja. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("inlineCases")
    void featureRendersAsTheReference(String name, JsonNode c, JsonNode expected) {
        ChatTemplate t = ChatTemplate.of(c.get("template").asText());
        Map<String, Object> vars = new TreeMap<>();
        c.get("vars").properties().forEach(e -> vars.put(e.getKey(), e.getValue()));
        List<ChatMessage> none = List.of();
        if (expected.has("text")) {
            assertThat(t.render(none, List.of(), false, null, null, vars)).isEqualTo(expected.get("text").asText());
        } else {
            assertThatThrownBy(() -> t.render(none, List.of(), false, null, null, vars))
                    .isInstanceOf(ChatTemplateException.class)
                    .hasMessage("chat template: " + expected.get("error").asText());
        }
    }

    @Test
    void aTemplateThatDoesNotParseIsRejectedWithTheProblemNamed() {
        assertThatThrownBy(() -> ChatTemplate.of("{% for m in messages %}{{ m.content }}{% endif %}"))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageContaining("does not parse")
                .hasMessageContaining("endfor");
        assertThatThrownBy(() -> ChatTemplate.of("{% if add_generation_prompt %}<|assistant|>"))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageContaining("endif");
    }

    @Test
    void aRenderingErrorNamesTheProblem() {
        ChatTemplate t = ChatTemplate.of("{{ messages[0].content.frobnicate() }}");
        assertThatThrownBy(() -> t.render(List.of(ChatMessage.user("hi")), List.of(), true, null, null, Map.of()))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageContaining("failed to render")
                .hasMessageContaining("frobnicate");
    }

    @Test
    void strftimeNowGivesTodayInTheAskedFormat() {
        ChatTemplate t = ChatTemplate.of("{{ strftime_now('%Y-%m-%d') }}");
        String before = java.time.LocalDate.now().toString();
        String got = t.render(List.of(ChatMessage.user("hi")), List.of(), true, null, null, Map.of());
        String after = java.time.LocalDate.now().toString();
        assertThat(got).isIn(before, after);
    }

    @Test
    void namedTemplatesPickToolUseWhenToolsAreGivenAndDefaultOtherwise(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve(TokenizerConfig.FILE_NAME), """
                {"eos_token": "</s>", "chat_template": [
                  {"name": "default", "template": "D{% for m in messages %}[{{ m.content }}]{% endfor %}"},
                  {"name": "tool_use", "template": "T{{ tools | length }}{% for m in messages %}[{{ m.content }}]{% endfor %}{{ eos_token }}"}]}
                """);
        TokenizerConfig config = TokenizerConfig.read(dir);
        assertThat(config.chatTemplates()).containsOnlyKeys("default", "tool_use");
        assertThat(config.chatTemplate()).startsWith("D{%");
        ChatRenderer r = ChatRenderer.of(config, ChatFormat.CHATML);
        assertThat(r.usesTemplate()).isTrue();
        List<ChatMessage> chat = List.of(ChatMessage.user("hi"));
        assertThat(r.render(chat, true)).isEqualTo("D[hi]");
        JsonNode tool = JSON.readTree("{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}");
        assertThat(r.render(chat, List.of(tool), Map.of(), true)).isEqualTo("T1[hi]</s>");
    }

    @Test
    void aCheckpointWithoutTemplateFallsBackToTheFamilyFormatAndTakesNoTools(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve(TokenizerConfig.FILE_NAME), "{\"eos_token\": \"<|im_end|>\"}");
        ChatRenderer r = ChatRenderer.of(TokenizerConfig.read(dir), ChatFormat.CHATML);
        assertThat(r.usesTemplate()).isFalse();
        List<ChatMessage> chat = List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hi"));
        assertThat(r.render(chat, true)).isEqualTo(ChatFormat.CHATML.render(chat, true, null, "<|im_end|>"));
        JsonNode tool = TextNode.valueOf("f");
        assertThatThrownBy(() -> r.render(chat, List.of(tool), Map.of(), true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no chat template");
    }

    @Test
    void aBadChatTemplateFieldIsAModelFormatError(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve(TokenizerConfig.FILE_NAME), "{\"chat_template\": [{\"name\": \"default\"}]}");
        assertThatThrownBy(() -> TokenizerConfig.read(dir))
                .hasMessageContaining("chat_template entry 0 needs a string 'name' and a string 'template'");
        Files.writeString(dir.resolve(TokenizerConfig.FILE_NAME), "{\"chat_template\": \"{% if x %}\"}");
        TokenizerConfig config = TokenizerConfig.read(dir);
        assertThatThrownBy(() -> ChatRenderer.of(config, ChatFormat.CHATML))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageContaining("chat template 'default'")
                .hasMessageContaining("does not parse");
    }

    private static List<ChatMessage> messages(JsonNode conversation) {
        List<ChatMessage> out = new ArrayList<>();
        for (JsonNode m : conversation) {
            List<ToolCall> calls = new ArrayList<>();
            for (JsonNode c : m.path("tool_calls")) {
                calls.add(new ToolCall(c.path("id").asText(null), c.get("function").get("name").asText(),
                        c.get("function").get("arguments")));
            }
            out.add(new ChatMessage(m.get("role").asText(), m.get("content").asText(), calls, m.path("tool_call_id").asText(null)));
        }
        return out;
    }

    /** The case's name as generate_expected.py writes it. */
    private static String caseName(JsonNode c) {
        StringBuilder name = new StringBuilder(c.get("conversation").asText())
                .append(c.get("add_generation_prompt").asBoolean() ? "-gen" : "-nogen");
        if (c.path("tools").asBoolean()) {
            name.append("-tools");
        }
        Map<String, JsonNode> kwargs = new TreeMap<>();
        c.path("kwargs").properties().forEach(e -> kwargs.put(e.getKey(), e.getValue()));
        kwargs.forEach((k, v) -> {
            if (!k.equals("date_string")) {
                name.append('-').append(k).append('=').append(v);
            }
        });
        return name.toString();
    }

    private static JsonNode fixture(String name) throws IOException {
        return JSON.readTree(resource("/chat-templates/" + name));
    }

    private static String resource(String path) throws IOException {
        try (InputStream in = ChatTemplateTest.class.getResourceAsStream(path)) {
            assertThat(in).as(path).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
