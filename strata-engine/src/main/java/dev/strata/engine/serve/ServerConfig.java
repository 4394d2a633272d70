package dev.strata.engine.serve;

/**
 * Settings of an {@link OpenAiServer}. Immutable; any thread.
 *
 * @param host                address to bind; 127.0.0.1 unless the operator asks otherwise
 * @param port                TCP port; 0 picks a free one
 * @param apiKey              when non-null, every {@code /v1/*} and {@code /metrics} request needs
 *                            {@code Authorization: Bearer <apiKey>} (401 otherwise)
 * @param modelId             the id {@code /v1/models} lists and requests must name
 * @param maxBodyBytes        largest request body accepted, in bytes (413 beyond)
 * @param maxPromptTokens     longest prompt accepted, in tokens (400 beyond)
 * @param maxTokensLimit      largest {@code max_tokens} accepted (400 beyond)
 * @param headerTimeoutMillis time a client has to send a whole request (line, headers and body)
 *                            once its first byte arrived, or to send a first byte, ms; the
 *                            connection is closed after it (rounded up to whole seconds, see
 *                            {@link HttpConnectionLimits})
 * @param maxIdleConnections  most kept-alive connections left open between requests; a
 *                            connection that goes idle beyond it is closed
 */
public record ServerConfig(String host, int port, String apiKey, String modelId, long maxBodyBytes, int maxPromptTokens,
                           int maxTokensLimit, long headerTimeoutMillis, int maxIdleConnections) {
    /** Default of {@link #headerTimeoutMillis()}: 10 s. */
    public static final long DEFAULT_HEADER_TIMEOUT_MILLIS = 10_000;
    /** Default of {@link #maxIdleConnections()}. */
    public static final int DEFAULT_MAX_IDLE_CONNECTIONS = 256;

    public ServerConfig {
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("host must be given, got '" + host + "'");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be in [0, 65535], got " + port);
        }
        if (modelId == null || modelId.isBlank()) {
            throw new IllegalArgumentException("model id must be given, got '" + modelId + "'");
        }
        if (maxBodyBytes < 1 || maxPromptTokens < 1 || maxTokensLimit < 1) {
            throw new IllegalArgumentException("limits must be positive: body " + maxBodyBytes + " bytes, prompt "
                    + maxPromptTokens + " tokens, max_tokens " + maxTokensLimit);
        }
        if (headerTimeoutMillis < 1) {
            throw new IllegalArgumentException("header timeout must be positive, got " + headerTimeoutMillis + " ms");
        }
        if (maxIdleConnections < 0) {
            throw new IllegalArgumentException("max idle connections must be 0 or more, got " + maxIdleConnections);
        }
        if (apiKey != null && apiKey.isEmpty()) {
            apiKey = null;
        }
    }

    /** Without connection limits: the defaults {@link #DEFAULT_HEADER_TIMEOUT_MILLIS} and {@link #DEFAULT_MAX_IDLE_CONNECTIONS}. */
    public ServerConfig(String host, int port, String apiKey, String modelId, long maxBodyBytes, int maxPromptTokens,
                        int maxTokensLimit) {
        this(host, port, apiKey, modelId, maxBodyBytes, maxPromptTokens, maxTokensLimit, DEFAULT_HEADER_TIMEOUT_MILLIS,
                DEFAULT_MAX_IDLE_CONNECTIONS);
    }

    /** Loopback, the given port and model id, no key, 1 MiB bodies, the given token limits, default connection limits. */
    public static ServerConfig local(int port, String modelId, int maxPromptTokens, int maxTokensLimit) {
        return new ServerConfig("127.0.0.1", port, null, modelId, 1L << 20, maxPromptTokens, maxTokensLimit);
    }

    public ServerConfig withApiKey(String key) {
        return new ServerConfig(host, port, key, modelId, maxBodyBytes, maxPromptTokens, maxTokensLimit, headerTimeoutMillis,
                maxIdleConnections);
    }

    public ServerConfig withMaxBodyBytes(long bytes) {
        return new ServerConfig(host, port, apiKey, modelId, bytes, maxPromptTokens, maxTokensLimit, headerTimeoutMillis,
                maxIdleConnections);
    }

    public ServerConfig withHeaderTimeoutMillis(long millis) {
        return new ServerConfig(host, port, apiKey, modelId, maxBodyBytes, maxPromptTokens, maxTokensLimit, millis,
                maxIdleConnections);
    }

    public ServerConfig withMaxIdleConnections(int connections) {
        return new ServerConfig(host, port, apiKey, modelId, maxBodyBytes, maxPromptTokens, maxTokensLimit, headerTimeoutMillis,
                connections);
    }
}
