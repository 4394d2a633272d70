package dev.strata.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A checkpoint without a chat template: its family's format renders tool calls and tool results
 * as ordinary messages (the Hermes form), exactly as {@link ChatFormat#assistantToolCalls} and
 * {@link ChatFormat#toolResult} write them; tools themselves need a template.
 */
class ChatRendererFallbackTest {
    @Test
    void toolCallsAndResultsGoThroughTheFamilysFormatWithoutATemplate() throws Exception {
        ChatRenderer r = ChatRenderer.of(new TokenizerConfig(null, "<|im_end|>", null, false, Map.of()), ChatFormat.CHATML);
        ToolCall call = new ToolCall("c1", "weather", new ObjectMapper().readTree("{\"city\":\"Paris\"}"));
        String text = r.render(List.of(ChatMessage.user("Weather?"), ChatMessage.assistant("", List.of(call)),
                ChatMessage.tool("c1", "sunny")), true);
        String expected = ChatFormat.CHATML.render(List.of(ChatMessage.user("Weather?"),
                ChatFormat.CHATML.assistantToolCalls("", List.of("{\"name\":\"weather\",\"arguments\":{\"city\":\"Paris\"}}")),
                ChatFormat.CHATML.toolResult("sunny")), true, null, "<|im_end|>");
        assertThat(text).isEqualTo(expected).contains("<tool_call>\n{\"name\":\"weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_call>")
                .contains("<tool_response>\nsunny\n</tool_response>");
        assertThatThrownBy(() -> r.render(List.of(ChatMessage.user("x")), List.of(new ObjectMapper().readTree("{\"type\":\"function\"}")),
                Map.of(), true)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no chat template");
    }
}
