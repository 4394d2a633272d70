package dev.strata.engine.tokenizer;

/**
 * A chat template that does not parse, raised an exception ({@code raise_exception}) or failed to
 * render; the message names the problem. An {@link IllegalArgumentException} so that the server
 * answers a request that triggered it with a 400.
 */
public final class ChatTemplateException extends IllegalArgumentException {
    public ChatTemplateException(String message) {
        super(message);
    }
}
