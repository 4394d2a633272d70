package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One function call an assistant message made: the call's id (may be null), the function's name
 * and its arguments. Arguments are a JSON object as Hugging Face templates expect them; a JSON
 * string (the OpenAI wire form) is kept as a string, which templates such as Qwen3's print as they
 * are. Immutable.
 */
public record ToolCall(String id, String name, JsonNode arguments) {
    public ToolCall {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a tool call needs a function name, got " + name);
        }
        arguments = arguments == null ? TextNode.valueOf("{}") : arguments;
    }

    /**
     * The call as templates read it: {@code {"id": ..., "type": "function", "function": {"name":
     * ..., "arguments": ...}}} (no {@code id} key when the id is null).
     */
    Map<String, Object> toTemplateValue() {
        Map<String, Object> function = new LinkedHashMap<>();
        function.put("name", name);
        function.put("arguments", ChatTemplate.toTemplateValue(arguments));
        Map<String, Object> call = new LinkedHashMap<>();
        if (id != null) {
            call.put("id", id);
        }
        call.put("type", "function");
        call.put("function", function);
        return call;
    }

    /** The call as one JSON object text, {@code {"name": ..., "arguments": ...}}: the Hermes form the fallback formats write. */
    public String toJson() {
        com.fasterxml.jackson.databind.node.ObjectNode o = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        o.put("name", name);
        o.set("arguments", arguments);
        return o.toString();
    }
}
