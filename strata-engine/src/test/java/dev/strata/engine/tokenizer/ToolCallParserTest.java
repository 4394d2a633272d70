package dev.strata.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Tool calls in the Hermes and Mistral forms split from generated text, whole and streamed. */
class ToolCallParserTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static ToolCall call(String name, String arguments) throws Exception {
        return new ToolCall(null, name, JSON.readTree(arguments));
    }

    @Test
    void hermesCallsAfterTextAreSplitFromTheContent() throws Exception {
        String text = "Let me check.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                + "<tool_call>\n{\"name\": \"time\", \"arguments\": {\"zone\": \"CET\", \"n\": [1, 2]}}\n</tool_call>";
        ToolCallParser.Result r = ToolCallParser.parse(text);
        assertThat(r.content()).isEqualTo("Let me check.");
        assertThat(r.calls()).containsExactly(call("weather", "{\"city\":\"Paris\"}"), call("time", "{\"zone\":\"CET\",\"n\":[1,2]}"));
    }

    @Test
    void onlyCallsMeansNoContentAndMissingArgumentsAreEmpty() throws Exception {
        ToolCallParser.Result r = ToolCallParser.parse("<tool_call>\n{\"name\": \"now\"}\n</tool_call>\n");
        assertThat(r.content()).isNull();
        assertThat(r.calls()).containsExactly(call("now", "{}"));
    }

    @Test
    void textAfterACallIsContentToo() throws Exception {
        ToolCallParser.Result r = ToolCallParser.parse("A <tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>\n\nB");
        assertThat(r.content()).isEqualTo("AB");
        assertThat(r.calls()).containsExactly(call("f", "{}"));
    }

    @Test
    void mistralArrayOfCalls() throws Exception {
        ToolCallParser.Result r = ToolCallParser.parse("[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"s\": \"x]}\\\"\"}}, "
                + "{\"name\": \"b\", \"arguments\": {}}]");
        assertThat(r.content()).isNull();
        assertThat(r.calls()).containsExactly(call("a", "{\"s\":\"x]}\\\"\"}"), call("b", "{}"));
    }

    @Test
    void mistralNamedCallsWithArgsMarkers() throws Exception {
        ToolCallParser.Result r = ToolCallParser.parse("[TOOL_CALLS]weather[ARGS]{\"city\": \"Oslo]\"}[TOOL_CALLS]get_time[ARGS] {}");
        assertThat(r.content()).isNull();
        assertThat(r.calls()).containsExactly(call("weather", "{\"city\":\"Oslo]\"}"), call("get_time", "{}"));
    }

    @Test
    void malformedOrUnfinishedCallsStayTextExactly() {
        String[] texts = {
                "Hi <tool_call>{\"name\": \"f\", \"arguments\": {</tool_call> bye",
                "<tool_call>{\"arguments\": {}}</tool_call>",
                "<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>",
                "<tool_call>{\"name\": \"f\"} extra</tool_call>",
                "Start <tool_call>{\"name\": \"f\", \"arguments\": {}}",
                "[TOOL_CALLS] not an array",
                "[TOOL_CALLS] [{\"name\": \"f\"}, 7]",
                "[TOOL_CALLS] [{\"name\": \"f\"",
                "[TOOL_CALLS]f[ARGS] nope",
                "[TOOL_CALLS]f[ARG]{}",
                "[TOOL_CALLS]f[ARGS]{\"a\": ",
                "[TOOL_CALLS]f[ARGS][1]",
                "a < b and [TOOL c]\n"};
        for (String t : texts) {
            ToolCallParser.Result r = ToolCallParser.parse(t);
            assertThat(r.calls()).as(t).isEmpty();
            assertThat(r.content()).as(t).isEqualTo(t);
        }
    }

    @Test
    void aBadCallBesideAGoodOneStaysTextAndTheGoodOneIsACall() throws Exception {
        ToolCallParser.Result r = ToolCallParser.parse("<tool_call>{oops}</tool_call>\n<tool_call>{\"name\": \"g\", \"arguments\": {\"k\": 1}}</tool_call>");
        assertThat(r.content()).isEqualTo("<tool_call>{oops}</tool_call>");
        assertThat(r.calls()).containsExactly(call("g", "{\"k\":1}"));
    }

    @Test
    void streamedInAnyPiecesGivesWhatTheWholeTextGives() {
        String[] texts = {
                "Let me check.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                        + "<tool_call>\n{\"name\": \"time\", \"arguments\": {}}\n</tool_call>",
                "Plain text with a < sign and [brackets] and trailing space \n",
                "x [TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"q\": \"[\"}}] y",
                "[TOOL_CALLS]weather[ARGS]{\"city\": \"{Oslo}\"}\n[TOOL_CALLS]time[ARGS]{} done",
                "[TOOL_CALLS]f[ARG]{} and [TOOL_CALLS]g[ARGS]{\"k\": [1]}",
                "Hi <tool_call>{broken</tool_call> and <tool_call>{\"name\": \"f\"}"};
        for (String text : texts) {
            ToolCallParser.Result whole = ToolCallParser.parse(text);
            for (int size = 1; size <= 7; size++) {
                ToolCallParser p = new ToolCallParser();
                List<ToolCallParser.Piece> pieces = new ArrayList<>();
                for (int i = 0; i < text.length(); i += size) {
                    pieces.addAll(p.feed(text.substring(i, Math.min(text.length(), i + size))));
                }
                pieces.addAll(p.finish());
                StringBuilder content = new StringBuilder();
                List<ToolCall> calls = new ArrayList<>();
                for (ToolCallParser.Piece piece : pieces) {
                    switch (piece) {
                        case ToolCallParser.Text t -> {
                            assertThat(t.text()).isNotEmpty();
                            content.append(t.text());
                        }
                        case ToolCallParser.Call c -> calls.add(c.call());
                    }
                }
                assertThat(content.isEmpty() ? null : content.toString()).as(text + " in pieces of " + size).isEqualTo(whole.content());
                assertThat(calls).as(text + " in pieces of " + size).isEqualTo(whole.calls());
            }
        }
    }

    @Test
    void aPossibleMarkerIsHeldBackUntilDecidedAndOrdinaryTextIsNot() {
        ToolCallParser p = new ToolCallParser();
        assertThat(p.feed("Hello")).containsExactly(new ToolCallParser.Text("Hello"));
        assertThat(p.feed(" <tool")).isEmpty();
        assertThat(p.feed("box>")).containsExactly(new ToolCallParser.Text(" <toolbox>"));
        assertThat(p.feed(" [TOOL_")).isEmpty();
        assertThat(p.finish()).containsExactly(new ToolCallParser.Text(" [TOOL_"));
    }
}
