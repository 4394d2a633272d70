package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns a chat into prompt text for one model: with the model's own Jinja chat templates from
 * {@code tokenizer_config.json} when it has them ({@value TokenizerConfig#TOOL_USE_TEMPLATE} when
 * tools are given and the checkpoint names one, else {@value TokenizerConfig#DEFAULT_TEMPLATE} or
 * the only template), otherwise with the family's {@link ChatFormat}, which takes no tools and no
 * template keyword arguments. Templates are parsed once, when the renderer is made, so a
 * checkpoint with a broken template fails at load. Immutable; any thread.
 */
public final class ChatRenderer {
    private final Map<String, ChatTemplate> templates; // by name, file order; empty: use the fallback
    private final ChatFormat fallback; // the family's format, used when there is no template
    private final String bosToken; // may be null
    private final String eosToken; // may be null

    private ChatRenderer(Map<String, ChatTemplate> templates, ChatFormat fallback, String bosToken, String eosToken) {
        this.templates = templates;
        this.fallback = fallback;
        this.bosToken = bosToken;
        this.eosToken = eosToken;
    }

    /**
     * The renderer for a model whose tokenizer config is {@code config} and whose family's format
     * is {@code fallback}.
     *
     * @throws ChatTemplateException when a template of {@code config} does not parse; the message
     *                               names the template
     */
    public static ChatRenderer of(TokenizerConfig config, ChatFormat fallback) {
        Map<String, ChatTemplate> parsed = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : config.chatTemplates().entrySet()) {
            try {
                parsed.put(e.getKey(), ChatTemplate.of(e.getValue()));
            } catch (ChatTemplateException ex) {
                throw new ChatTemplateException("tokenizer_config.json chat template '" + e.getKey() + "': " + ex.getMessage());
            }
        }
        return new ChatRenderer(java.util.Collections.unmodifiableMap(parsed), fallback, config.bosToken(), config.eosToken());
    }

    /**
     * Whether the model writes tool calls in the Mistral form ({@code [TOOL_CALLS]} and a JSON
     * array), as its template shows by naming the marker; otherwise the Hermes form
     * ({@code <tool_call>}) is the one its calls are expected in.
     */
    public boolean mistralToolCalls() {
        return templates.values().stream().anyMatch(t -> t.source().contains(ToolCallParser.MISTRAL_MARKER));
    }

    /** Whether the model's own template renders chats (false: the family's {@link ChatFormat}). */
    public boolean usesTemplate() {
        return !templates.isEmpty();
    }

    /** Renders {@code messages} with no tools and no template keyword arguments. */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        return render(messages, List.of(), Map.of(), addGenerationPrompt);
    }

    /**
     * Renders {@code messages}.
     *
     * @param tools               OpenAI {@code tools} array elements ({@code {"type": "function",
     *                            "function": {...}}}); empty for none
     * @param kwargs              extra template variables, such as {@code enable_thinking}
     * @param addGenerationPrompt end where the assistant's reply begins
     * @throws IllegalArgumentException when the chat does not fit the template or format (a
     *                                  {@link ChatTemplateException} from a template, with its
     *                                  message), or tools or keyword arguments are given to a
     *                                  model with no template
     */
    public String render(List<ChatMessage> messages, List<JsonNode> tools, Map<String, ?> kwargs, boolean addGenerationPrompt) {
        if (messages.isEmpty()) {
            throw new IllegalArgumentException("a chat needs at least one message");
        }
        if (templates.isEmpty()) {
            if (!tools.isEmpty()) {
                throw new IllegalArgumentException("this model has no chat template in tokenizer_config.json, so it takes no tools");
            }
            java.util.List<ChatMessage> plain = new java.util.ArrayList<>(messages.size());
            for (ChatMessage m : messages) { // the family's format writes calls and results as ordinary messages
                if (!m.toolCalls().isEmpty()) {
                    java.util.List<String> calls = new java.util.ArrayList<>();
                    for (ToolCall c : m.toolCalls()) {
                        calls.add(c.toJson());
                    }
                    plain.add(fallback.assistantToolCalls(m.content(), calls));
                } else if ("tool".equals(m.role())) {
                    plain.add(fallback.toolResult(m.content()));
                } else {
                    plain.add(m);
                }
            }
            return fallback.render(plain, addGenerationPrompt, bosToken, eosToken);
        }
        return pick(!tools.isEmpty()).render(messages, tools, addGenerationPrompt, bosToken, eosToken, kwargs);
    }

    private ChatTemplate pick(boolean withTools) {
        if (withTools && templates.containsKey(TokenizerConfig.TOOL_USE_TEMPLATE)) {
            return templates.get(TokenizerConfig.TOOL_USE_TEMPLATE);
        }
        ChatTemplate t = templates.get(TokenizerConfig.DEFAULT_TEMPLATE);
        return t != null ? t : templates.values().iterator().next();
    }
}
