package dev.strata.engine.constrain;

/**
 * A JSON Schema (or tool definition) that constrained decoding cannot follow: the message names
 * the place in the schema ({@link #path()}, as {@code $.properties.name}) and what is wrong there.
 */
public final class SchemaException extends IllegalArgumentException {
    private final String path;

    public SchemaException(String path, String problem) {
        super("schema at " + path + ": " + problem);
        this.path = path;
    }

    /** Where in the schema the problem is. */
    public String path() {
        return path;
    }
}
