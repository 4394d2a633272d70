package dev.strata.engine.tokenizer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One message of a chat: its role ({@code system}, {@code user}, {@code assistant}, {@code tool})
 * and text; an assistant message may carry the {@link ToolCall}s it made, and a {@code tool}
 * message the id of the call it answers. Immutable.
 *
 * @param toolCalls  the calls an assistant message made; empty when none (never null)
 * @param toolCallId the call a {@code tool} message answers; null when none
 */
public record ChatMessage(String role, String content, List<ToolCall> toolCalls, String toolCallId) {
    public ChatMessage {
        if (role == null || role.isEmpty()) {
            throw new IllegalArgumentException("a chat message needs a role, got " + role);
        }
        content = content == null ? "" : content;
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
    }

    /** A message with text only. */
    public ChatMessage(String role, String content) {
        this(role, content, List.of(), null);
    }

    public static ChatMessage system(String text) {
        return new ChatMessage("system", text);
    }

    public static ChatMessage user(String text) {
        return new ChatMessage("user", text);
    }

    public static ChatMessage assistant(String text) {
        return new ChatMessage("assistant", text);
    }

    /** An assistant message that calls tools ({@code text} may be empty). */
    public static ChatMessage assistant(String text, List<ToolCall> calls) {
        return new ChatMessage("assistant", text, calls, null);
    }

    /** The result of the call {@code toolCallId}. */
    public static ChatMessage tool(String toolCallId, String result) {
        return new ChatMessage("tool", result, List.of(), toolCallId);
    }

    /**
     * The message as chat templates read it: {@code role}, {@code content}, and the keys
     * {@code tool_calls} and {@code tool_call_id} only where present (templates test
     * {@code 'tool_calls' in message}).
     */
    Map<String, Object> toTemplateValue() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        if (!toolCalls.isEmpty()) {
            List<Object> calls = new ArrayList<>(toolCalls.size());
            for (ToolCall c : toolCalls) {
                calls.add(c.toTemplateValue());
            }
            m.put("tool_calls", calls);
        }
        if (toolCallId != null) {
            m.put("tool_call_id", toolCallId);
        }
        return m;
    }
}
