package dev.strata.engine.tokenizer;

import java.util.List;

/**
 * The chat formats of the supported families, written in Java: the fallback {@link ChatRenderer}
 * uses for a checkpoint whose {@code tokenizer_config.json} has no {@code chat_template} (a
 * checkpoint's own template, rendered by {@link ChatTemplate}, always wins). Each is what the
 * family's templates produce for plain system/user/assistant messages (Qwen3's thinking switch and
 * per-message extras are not rendered). Tool calls and tool results become ordinary messages first
 * ({@link #assistantToolCalls}, {@link #toolResult}), in the Hermes form the Qwen templates use:
 * each call a {@code <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>} block after the
 * assistant's text, each result a {@code <tool_response>\n...\n</tool_response>} user message
 * (Llama 3: an {@code ipython} message, as its template has it); consecutive results are not
 * merged into one turn. The rendered text is then encoded with special tokens matched. Immutable;
 * any thread.
 *
 * <ul>
 *   <li>{@link #CHATML} (Qwen3, Qwen3-MoE): {@code <|im_start|>role\ncontent<|im_end|>\n} per
 *       message; generation prompt {@code <|im_start|>assistant\n}.</li>
 *   <li>{@link #LLAMA3}: {@code <|begin_of_text|>}, then per message
 *       {@code <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>} (content trimmed);
 *       generation prompt {@code <|start_header_id|>assistant<|end_header_id|>\n\n}.</li>
 *   <li>{@link #MISTRAL_INST} (Mixtral): {@code <s>}, user turns {@code [INST] content [/INST]},
 *       assistant turns {@code content</s>}; a system message is put before the first user
 *       message's text, separated by a blank line; roles must alternate user/assistant.</li>
 *   <li>{@link #TULU} (OLMoE-Instruct): per message {@code <|role|>\ncontent\n}, assistant
 *       content followed by the end-of-sequence token; generation prompt
 *       {@code <|assistant|>\n}.</li>
 * </ul>
 */
public enum ChatFormat {
    CHATML,
    LLAMA3,
    MISTRAL_INST,
    TULU;

    /**
     * The assistant message that made tool calls: its text (may be empty) followed by one
     * {@code <tool_call>} block per call.
     *
     * @param callsJson each call as one JSON object text {@code {"name": ..., "arguments": ...}}
     */
    public ChatMessage assistantToolCalls(String content, List<String> callsJson) {
        StringBuilder s = new StringBuilder(content == null ? "" : content);
        for (String call : callsJson) {
            if (!s.isEmpty()) {
                s.append('\n');
            }
            s.append("<tool_call>\n").append(call).append("\n</tool_call>");
        }
        return ChatMessage.assistant(s.toString());
    }

    /** The message that hands a tool's result back to the model, in this format's form. */
    public ChatMessage toolResult(String content) {
        String text = content == null ? "" : content;
        return switch (this) {
            case LLAMA3 -> new ChatMessage("ipython", text);
            case CHATML, MISTRAL_INST, TULU -> ChatMessage.user("<tool_response>\n" + text + "\n</tool_response>");
        };
    }

    /**
     * Renders {@code messages}; with {@code generationPrompt} the text ends where the assistant's
     * reply begins. {@code bos} and {@code eos} are the token strings of the model (may be null
     * where the format does not use them).
     */
    public String render(List<ChatMessage> messages, boolean generationPrompt, String bos, String eos) {
        StringBuilder s = new StringBuilder();
        switch (this) {
            case CHATML -> {
                for (ChatMessage m : messages) {
                    s.append("<|im_start|>").append(m.role()).append('\n').append(m.content()).append("<|im_end|>\n");
                }
                if (generationPrompt) {
                    s.append("<|im_start|>assistant\n");
                }
            }
            case LLAMA3 -> {
                s.append(bos == null ? "<|begin_of_text|>" : bos);
                for (ChatMessage m : messages) {
                    s.append("<|start_header_id|>").append(m.role()).append("<|end_header_id|>\n\n")
                            .append(m.content().strip()).append("<|eot_id|>");
                }
                if (generationPrompt) {
                    s.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
                }
            }
            case MISTRAL_INST -> {
                s.append(bos == null ? "<s>" : bos);
                String system = null;
                int turn = 0;
                for (ChatMessage m : messages) {
                    switch (m.role()) {
                        case "system" -> {
                            if (turn != 0 || system != null) {
                                throw new IllegalArgumentException("the Mixtral chat format takes one system message, first");
                            }
                            system = m.content();
                        }
                        case "user", "assistant" -> {
                            String want = turn % 2 == 0 ? "user" : "assistant";
                            if (!m.role().equals(want)) {
                                throw new IllegalArgumentException("the Mixtral chat format needs alternating user/assistant "
                                        + "messages; message " + turn + " has role '" + m.role() + "', expected '" + want + "'");
                            }
                            if (turn % 2 == 0) {
                                String text = turn == 0 && system != null ? system + "\n\n" + m.content() : m.content();
                                s.append("[INST] ").append(text).append(" [/INST]");
                            } else {
                                s.append(m.content()).append(eos == null ? "</s>" : eos);
                            }
                            turn++;
                        }
                        default -> throw new IllegalArgumentException("the Mixtral chat format has no role '" + m.role() + "'");
                    }
                }
            }
            case TULU -> {
                for (ChatMessage m : messages) {
                    s.append("<|").append(m.role()).append("|>\n").append(m.content());
                    if (m.role().equals("assistant") && eos != null) {
                        s.append(eos);
                    }
                    s.append('\n');
                }
                if (generationPrompt) {
                    s.append("<|assistant|>\n");
                }
            }
            default -> throw new AssertionError(this);
        }
        return s.toString();
    }
}
