package dev.strata.engine.tokenizer;

/**
 * One message of a chat: its role ({@code system}, {@code user}, {@code assistant}) and text.
 * Immutable.
 */
public record ChatMessage(String role, String content) {
    public ChatMessage {
        if (role == null || role.isEmpty()) {
            throw new IllegalArgumentException("a chat message needs a role, got " + role);
        }
        content = content == null ? "" : content;
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
}
