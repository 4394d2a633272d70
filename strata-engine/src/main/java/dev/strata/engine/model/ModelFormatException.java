package dev.strata.engine.model;

/**
 * A model file (config.json, a safetensors file, its index, tokenizer.json) that Strata cannot
 * use: the message names the file, the field or tensor, and the offending value. It is an
 * {@link IllegalArgumentException} because it reports bad input, never a bug; the command line
 * prints it as one line.
 */
public final class ModelFormatException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public ModelFormatException(String message) {
        super(message);
    }

    public ModelFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
