package dev.strata.cache.config;

/**
 * A configuration that cannot be used: names the key, the value found and what is expected.
 * Thrown at start-up, before any memory is taken or data touched.
 */
public final class ConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ConfigException(String message) {
        super(message);
    }

    public ConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
