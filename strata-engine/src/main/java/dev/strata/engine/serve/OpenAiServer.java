package dev.strata.engine.serve;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.strata.cache.kv.SharedPoolHealth;
import dev.strata.engine.model.ModelFileChangedException;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.sample.Sampler;
import dev.strata.engine.sample.TokenLogprobs;
import dev.strata.engine.sample.SamplingFieldException;
import dev.strata.engine.sample.SamplingParams;
import dev.strata.engine.tokenizer.BpeTokenizer;
import dev.strata.engine.tokenizer.ChatFormat;
import dev.strata.engine.tokenizer.ChatMessage;
import dev.strata.engine.tokenizer.ToolCall;
import dev.strata.engine.tokenizer.ToolCallParser;
import dev.strata.engine.constrain.SchemaException;
import dev.strata.engine.constrain.SchemaGrammar;
import dev.strata.engine.tokenizer.TokenizerConfig;
import dev.strata.memory.metrics.PrometheusText;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * An OpenAI-compatible HTTP server over a {@link Generator}: {@code GET /v1/models},
 * {@code POST /v1/completions}, {@code POST /v1/chat/completions} (with {@code "stream": true} as
 * Server-Sent Events), {@code GET /health} and {@code GET /metrics} (both also answer
 * {@code HEAD}: the same status and headers, no body). {@code /health} is
 * {@code {"status": "ok", "model": ...}}, or, while a tier has left the KV chain (the shared pool:
 * its node daemon is away or its file faulted), {@code "status": "degraded"} with
 * {@code "degraded": [{"tier", "kind", "state", "reason"}]}, still with 200: the server serves
 * every request from its other tiers, so a load balancer should keep sending it traffic; an
 * operator or a probe that wants to know reads the status. {@code /metrics} is Prometheus text: the serving
 * metrics, then the generator's {@link Generator#writeEngineMetrics}: the KV manager's, the expert pager's
 * and the peer families, all in one {@link PrometheusText}).
 *
 * <p>Protocol notes: requests are validated before anything is queued; each error is a JSON
 * {@code {"error": {"message", "type", "param", "code"}}} with 400 (bad field, naming it and the
 * value, or malformed JSON), 401 (missing or wrong bearer key), 404 (unknown model or path),
 * 405 (wrong method) or 413 (body over the limit); 503 when the model is out of service (a
 * memory-mapped weight file was truncated or rewritten in place: {@link ModelFileChangedException},
 * naming the file), which {@code /health} then reports too, with status 503. Sampling fields ({@code temperature},
 * {@code top_p}, {@code top_k}, {@code seed}, {@code presence_penalty}, {@code frequency_penalty},
 * {@code stop}, {@code n}, {@code max_tokens} or in chat {@code max_completion_tokens}): this
 * server checks their JSON types and {@link SamplingParams} their ranges, whose
 * {@link SamplingFieldException} becomes the 400 naming the field; {@code max_tokens} is capped by
 * {@link ServerConfig#maxTokensLimit()}. Defaults: {@code temperature} 0 (greedy, so a request
 * without it is deterministic), {@code max_tokens} 16 (chat: what the sequence has room for), both
 * within the cap. A
 * stream sends one {@code data: {chunk}} per text delta, a chunk carrying {@code finish_reason},
 * with {@code stream_options.include_usage} a last chunk with empty {@code choices} and the
 * {@code usage}, then {@code data: [DONE]}. A failed write (the client went away) cancels the
 * generation through its {@link Generator.Handle}, which releases its KV blocks.
 *
 * <p>Request surface: chat {@code messages} have the roles system (and developer), user,
 * assistant (with {@code tool_calls}, its content may be null) and tool (with
 * {@code tool_call_id}), and {@code content} as a string or an array of {@code text} parts; tool
 * calls and results are rendered as {@link ChatFormat} describes. Log-probabilities:
 * chat {@code logprobs} and {@code top_logprobs} (0..20), completions {@code logprobs} (0..5),
 * streamed or not, of the distribution described at {@link Sampler}. {@code n} choices (up to
 * {@link SamplingParams#MAX_CHOICES}) are n generations of the prompt, which share its KV blocks
 * through the prefix cache; with a {@code seed}, choice i draws from seed + i. Tools: chat
 * {@code tools} (function tools) go to the checkpoint's chat template (a model without one refuses
 * them), unless {@code tool_choice} is {@code "none"}; with them the output is split by
 * {@link ToolCallParser} (Hermes {@code <tool_call>} or Mistral {@code [TOOL_CALLS]} form) into
 * {@code content} and {@code tool_calls} with ids {@code call_...}, streamed as {@code tool_calls}
 * deltas once each call is whole, and the choice finishes with {@code tool_calls};
 * {@code tool_choice} {@code "required"} or a named function is a 400 (it needs constrained
 * decoding). A field this server does not
 * implement is a 400 naming it ({@code response_format}, {@code functions}, any unknown field; see
 * {@code refuseUnsupported}), never silently ignored;
 * only fields whose absence changes no answer are ignored: {@code user}, {@code metadata},
 * {@code store}, {@code service_tier}, {@code parallel_tool_calls}, and any field that is null.
 *
 * <p>Connections: a client has {@link ServerConfig#headerTimeoutMillis()} to send a whole request
 * before its connection is closed, and at most {@link ServerConfig#maxIdleConnections()} kept-alive
 * connections stay open between requests ({@link HttpConnectionLimits}).
 *
 * <p>Threads: the JDK server accepts on its dispatcher thread and runs each exchange on a virtual
 * thread; generation runs on the generator's threads, and sinks hand text to the exchange's thread
 * through a queue. {@link #close} from any thread.
 */
public final class OpenAiServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ServerConfig config;
    private final ServeEngine engine;
    private final Generator generator;
    private final ServeMetrics metrics;
    private final BpeTokenizer tokenizer;
    private final TokenizerConfig tokenizerConfig;
    private final HttpServer http;
    private final ExecutorService exchanges = Executors.newVirtualThreadPerTaskExecutor();
    private final long created = System.currentTimeMillis() / 1000; // model creation time, epoch seconds

    private OpenAiServer(ServerConfig config, ServeEngine engine, Generator generator, ServeMetrics metrics) throws IOException {
        this.config = config;
        this.engine = engine;
        this.generator = generator;
        this.metrics = metrics;
        this.tokenizer = engine.model().tokenizer();
        this.tokenizerConfig = engine.model().tokenizerConfig();
        HttpConnectionLimits.apply(config); // before the create: the JDK reads them when its first server is made
        this.http = HttpServer.create(new InetSocketAddress(config.host(), config.port()), 64);
        http.createContext("/", this::handle);
        http.setExecutor(exchanges);
    }

    /** Binds and starts serving; the caller keeps ownership of {@code engine} and {@code generator}. */
    public static OpenAiServer start(ServerConfig config, ServeEngine engine, Generator generator, ServeMetrics metrics)
            throws IOException {
        OpenAiServer s = new OpenAiServer(config, engine, generator, metrics);
        s.http.start();
        return s;
    }

    /** The port bound (the chosen one when the config asked for 0). */
    public int port() {
        return http.getAddress().getPort();
    }

    public ServerConfig config() {
        return config;
    }

    /** Stops accepting, waits up to a second for exchanges in flight. */
    @Override
    public void close() {
        http.stop(1);
        exchanges.shutdownNow();
    }

    /** An error answer: status, OpenAI error type, offending parameter (may be null), message. */
    static final class ApiError extends Exception {
        final int status;
        final String type;
        final String param;

        ApiError(int status, String type, String param, String message) {
            super(message, null, false, false);
            this.status = status;
            this.type = type;
            this.param = param;
        }

        static ApiError badField(String param, String message) {
            return new ApiError(400, "invalid_request_error", param, message);
        }
    }

    private void handle(HttpExchange ex) {
        try (ex) {
            try {
                route(ex);
            } catch (ApiError e) {
                if (isGeneration(ex.getRequestURI().getPath())) {
                    metrics.rejected();
                }
                sendError(ex, e);
            } catch (RuntimeException e) {
                sendError(ex, new ApiError(500, "server_error", null, e.toString()));
            }
        } catch (IOException e) {
            // the client went away while we answered; nothing to clean up beyond the exchange
        }
    }

    private static boolean isGeneration(String path) {
        return path.equals("/v1/completions") || path.equals("/v1/chat/completions");
    }

    private void route(HttpExchange ex) throws ApiError, IOException {
        String path = ex.getRequestURI().getPath();
        String method = ex.getRequestMethod();
        switch (path) {
            case "/health" -> {
                requireGetOrHead(ex, method);
                String modelProblem = engine.model().files().problem(); // a mapped weight file changed under the server
                if (modelProblem != null) {
                    sendJson(ex, 503, JSON.createObjectNode().put("status", "unavailable").put("model", config.modelId())
                            .put("error", modelProblem));
                } else {
                    sendJson(ex, 200, health());
                }
            }
            case "/metrics" -> {
                requireGetOrHead(ex, method);
                authorize(ex);
                sendText(ex, 200, "text/plain; version=0.0.4; charset=utf-8", prometheus());
            }
            case "/v1/models" -> {
                requireMethod(ex, method, "GET");
                authorize(ex);
                ObjectNode list = JSON.createObjectNode().put("object", "list");
                list.putArray("data").add(modelNode());
                sendJson(ex, 200, list);
            }
            case "/v1/completions", "/v1/chat/completions" -> {
                requireMethod(ex, method, "POST");
                authorize(ex);
                metrics.request();
                generate(ex, path.equals("/v1/chat/completions"), readBody(ex));
            }
            default -> {
                if (path.startsWith("/v1/models/")) {
                    requireMethod(ex, method, "GET");
                    authorize(ex);
                    String id = path.substring("/v1/models/".length());
                    if (!id.equals(config.modelId())) {
                        throw new ApiError(404, "not_found_error", "model", "model '" + id + "' is not served here; this server serves '"
                                + config.modelId() + "'");
                    }
                    sendJson(ex, 200, modelNode());
                } else {
                    throw new ApiError(404, "not_found_error", null, "no endpoint " + path);
                }
            }
        }
    }

    /** The {@code /health} body: ok, or degraded with each tier out of the KV chain and why (see the class note). */
    private ObjectNode health() {
        SharedPoolHealth.Status pool = engine.sharedPoolHealth();
        boolean degraded = pool != null && !pool.ok();
        ObjectNode body = JSON.createObjectNode().put("status", degraded ? "degraded" : "ok").put("model", config.modelId());
        if (degraded) {
            body.putArray("degraded").addObject().put("tier", pool.tier()).put("kind", "pool")
                    .put("state", pool.state().name().toLowerCase(java.util.Locale.ROOT)).put("reason", pool.reason());
        }
        return body;
    }

    private ObjectNode modelNode() {
        return JSON.createObjectNode().put("id", config.modelId()).put("object", "model").put("created", created)
                .put("owned_by", "strata");
    }

    /** The whole {@code /metrics} page: one exposition written by the serving metrics, then the generator. */
    String prometheus() {
        PrometheusText out = new PrometheusText();
        metrics.writeTo(out, generator.queueLength());
        generator.writeEngineMetrics(out);
        return out.toString();
    }

    private static void requireMethod(HttpExchange ex, String method, String allowed) throws ApiError {
        if (!method.equals(allowed)) {
            ex.getResponseHeaders().set("Allow", allowed);
            throw new ApiError(405, "invalid_request_error", null, "method " + method + " is not allowed on "
                    + ex.getRequestURI().getPath() + "; use " + allowed);
        }
    }

    /** GET, or HEAD (answered like GET, headers only: probes and load balancers use it). */
    private static void requireGetOrHead(HttpExchange ex, String method) throws ApiError {
        if (!method.equals("GET") && !method.equals("HEAD")) {
            ex.getResponseHeaders().set("Allow", "GET, HEAD");
            throw new ApiError(405, "invalid_request_error", null, "method " + method + " is not allowed on "
                    + ex.getRequestURI().getPath() + "; use GET or HEAD");
        }
    }

    private void authorize(HttpExchange ex) throws ApiError {
        if (config.apiKey() == null) {
            return;
        }
        String auth = ex.getRequestHeaders().getFirst("Authorization");
        if (auth == null) {
            throw new ApiError(401, "authentication_error", null, "missing Authorization header; send 'Authorization: Bearer <key>'");
        }
        if (!constantTimeEquals(auth, "Bearer " + config.apiKey())) {
            throw new ApiError(401, "authentication_error", null, "invalid API key");
        }
    }

    private static boolean constantTimeEquals(String a, String b) {
        return java.security.MessageDigest.isEqual(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
    }

    private byte[] readBody(HttpExchange ex) throws ApiError, IOException {
        String declared = ex.getRequestHeaders().getFirst("Content-Length");
        if (declared != null) {
            long n;
            try {
                n = Long.parseLong(declared.trim());
            } catch (NumberFormatException e) {
                throw new ApiError(400, "invalid_request_error", null, "Content-Length '" + declared + "' is not a number");
            }
            if (n > config.maxBodyBytes()) {
                throw tooLarge(n);
            }
        }
        InputStream in = ex.getRequestBody();
        byte[] body = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, config.maxBodyBytes() + 1));
        if (body.length > config.maxBodyBytes()) {
            throw tooLarge(body.length);
        }
        return body;
    }

    private ApiError tooLarge(long n) {
        return new ApiError(413, "invalid_request_error", null, "request body of " + n + " bytes exceeds the limit of "
                + config.maxBodyBytes() + " bytes");
    }

    /**
     * A parsed generation request plus what the response needs.
     *
     * @param choices      one generation per choice ({@code n}), in index order
     * @param includeUsage {@code stream_options.include_usage}: a stream ends with a usage chunk
     * @param toolCalls    tools were rendered into the prompt: the output is split into content and
     *                     {@code tool_calls} ({@link ToolCallParser})
     */
    private record Parsed(List<GenerationRequest> choices, boolean stream, boolean includeUsage, boolean toolCalls) {
    }

    /**
     * Request fields accepted and ignored: clients send them by default and ignoring them changes
     * no answer ({@code parallel_tool_calls}: every call the model makes is returned).
     */
    private static final Set<String> IGNORED_FIELDS = Set.of("user", "metadata", "store", "service_tier",
            "parallel_tool_calls");
    /** Fields both endpoints implement. */
    private static final Set<String> COMMON_FIELDS = Set.of("model", "stream", "stream_options", "max_tokens",
            "temperature", "top_p", "top_k", "n", "seed", "stop", "presence_penalty", "frequency_penalty", "logprobs",
            "logit_bias", "modalities");
    private static final Set<String> CHAT_FIELDS = Set.of("messages", "max_completion_tokens", "top_logprobs", "tools",
            "tool_choice", "response_format");
    private static final Set<String> COMPLETION_FIELDS = Set.of("prompt", "echo", "best_of", "suffix");

    /**
     * Refuses every field this server does not implement with a 400 naming it, rather than
     * answering as if it had been honoured; a null value counts as absent. {@code logit_bias},
     * {@code modalities}, {@code echo}, {@code best_of} and {@code suffix} are accepted only with
     * the value that asks for nothing ({@code {}}, {@code ["text"]}, false, 1, absent).
     */
    private static void refuseUnsupported(JsonNode root, boolean chat) throws ApiError {
        for (var it = root.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            JsonNode v = root.get(f);
            if (v.isNull() || IGNORED_FIELDS.contains(f)) {
                continue;
            }
            boolean known = COMMON_FIELDS.contains(f) || (chat ? CHAT_FIELDS : COMPLETION_FIELDS).contains(f);
            if (!known) {
                String what = switch (f) {
                    case "functions", "function_call" -> "the legacy function calling is not supported; use 'tools'";
                    default -> (CHAT_FIELDS.contains(f) || COMPLETION_FIELDS.contains(f))
                            ? "it belongs to " + (chat ? "/v1/completions" : "/v1/chat/completions") + ", not this endpoint"
                            : "Strata does not support it";
                };
                throw ApiError.badField(f, "'" + f + "' is not supported: " + what + " (remove the field)");
            }
            switch (f) {
                case "logit_bias" -> {
                    if (!v.isObject() || !v.isEmpty()) {
                        throw ApiError.badField(f, "'logit_bias' is not supported yet; only {} is accepted, got " + abbreviate(v.toString()));
                    }
                }
                case "modalities" -> {
                    if (!v.isArray() || v.size() != 1 || !"text".equals(v.get(0).asText(null))) {
                        throw ApiError.badField(f, "'modalities' must be [\"text\"]: Strata produces text only, got " + abbreviate(v.toString()));
                    }
                }
                case "echo" -> {
                    if (!v.isBoolean() || v.booleanValue()) {
                        throw ApiError.badField(f, "'echo' is not supported; only false is accepted, got " + v);
                    }
                }
                case "best_of" -> {
                    if (!v.isIntegralNumber() || v.intValue() != 1) {
                        throw ApiError.badField(f, "'best_of' must be 1: Strata returns one choice per request, got " + v);
                    }
                }
                case "suffix" -> throw ApiError.badField(f, "'suffix' is not supported: Strata does not insert text, got "
                        + abbreviate(v.toString()));
                default -> {
                }
            }
        }
    }

    /**
     * The alternatives per token the request asks for: chat's {@code logprobs} (boolean) and
     * {@code top_logprobs} (0..20, only with {@code logprobs: true}); the completions'
     * {@code logprobs} (0..5). {@link GenerationRequest#NO_LOGPROBS} when none are asked for.
     */
    private static int topLogprobs(JsonNode root, boolean chat) throws ApiError {
        JsonNode lp = root.get("logprobs");
        if (chat) {
            if (lp != null && !lp.isNull() && !lp.isBoolean()) {
                throw ApiError.badField("logprobs", "'logprobs' must be true or false, got " + abbreviate(lp.toString()));
            }
            boolean on = lp != null && lp.asBoolean(false);
            Integer top = integer(root, "top_logprobs");
            if (top != null && (top < 0 || top > Sampler.MAX_TOP_LOGPROBS)) {
                throw ApiError.badField("top_logprobs", "'top_logprobs' must be in [0, " + Sampler.MAX_TOP_LOGPROBS + "], got " + top);
            }
            if (top != null && !on) {
                throw ApiError.badField("top_logprobs", "'top_logprobs' needs 'logprobs': true, got top_logprobs " + top
                        + " with logprobs " + (lp == null ? "absent" : lp));
            }
            return on ? (top == null ? 0 : top) : GenerationRequest.NO_LOGPROBS;
        }
        if (lp != null && lp.isBoolean() && !lp.booleanValue()) {
            return GenerationRequest.NO_LOGPROBS;
        }
        Integer n = integer(root, "logprobs");
        if (n == null) {
            return GenerationRequest.NO_LOGPROBS;
        }
        if (n < 0 || n > MAX_COMPLETION_LOGPROBS) {
            throw ApiError.badField("logprobs", "'logprobs' must be in [0, " + MAX_COMPLETION_LOGPROBS + "], got " + n);
        }
        return n;
    }

    /** The most alternatives the completions endpoint's {@code logprobs} may ask for, as in the OpenAI API. */
    static final int MAX_COMPLETION_LOGPROBS = 5;

    /** {@code stream_options}: an object, only with {@code stream: true}; returns {@code include_usage}. */
    private static boolean includeUsage(JsonNode root, boolean stream) throws ApiError {
        JsonNode o = root.get("stream_options");
        if (o == null || o.isNull()) {
            return false;
        }
        if (!stream) {
            throw ApiError.badField("stream_options", "'stream_options' is only allowed with \"stream\": true");
        }
        if (!o.isObject()) {
            throw ApiError.badField("stream_options", "'stream_options' must be an object, got " + abbreviate(o.toString()));
        }
        boolean usage = false;
        for (var it = o.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            JsonNode v = o.get(f);
            if (v.isNull()) {
                continue;
            }
            if (!v.isBoolean()) {
                throw ApiError.badField("stream_options", "'stream_options." + f + "' must be true or false, got " + abbreviate(v.toString()));
            }
            switch (f) {
                case "include_usage" -> usage = v.booleanValue();
                case "include_obfuscation" -> {
                    // padding against length side channels; Strata adds none, which the client may not notice
                }
                default -> throw ApiError.badField("stream_options", "'stream_options." + f + "' is not supported");
            }
        }
        return usage;
    }

    private Parsed parse(boolean chat, byte[] body) throws ApiError {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (JsonProcessingException e) {
            throw new ApiError(400, "invalid_request_error", null, "malformed JSON: " + e.getOriginalMessage()
                    + " at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr());
        } catch (IOException e) {
            throw new ApiError(400, "invalid_request_error", null, "unreadable request body: " + e.getMessage());
        }
        if (root == null || !root.isObject()) {
            throw new ApiError(400, "invalid_request_error", null, "the request body must be a JSON object, got "
                    + (root == null || root.isMissingNode() ? "nothing" : root.getNodeType().toString().toLowerCase()));
        }
        JsonNode model = root.get("model");
        if (model != null && !model.isNull()) {
            if (!model.isTextual()) {
                throw ApiError.badField("model", "'model' must be a string, got " + model);
            }
            if (!model.asText().equals(config.modelId())) {
                throw new ApiError(404, "not_found_error", "model", "model '" + model.asText() + "' is not served here; this server serves '"
                        + config.modelId() + "'");
            }
        }
        refuseUnsupported(root, chat);
        List<JsonNode> tools = chat ? tools(root) : List.of();
        SchemaGrammar grammar = chat ? grammar(root, tools) : null;
        int[] prompt = chat ? chatPrompt(root.get("messages"), tools) : completionPrompt(root.get("prompt"));
        if (prompt.length == 0) {
            throw ApiError.badField(chat ? "messages" : "prompt", "the prompt encodes to no tokens");
        }
        if (prompt.length > config.maxPromptTokens()) {
            throw ApiError.badField(chat ? "messages" : "prompt", "the prompt has " + prompt.length
                    + " tokens, above the limit of " + config.maxPromptTokens());
        }
        // Types are checked here, ranges only by SamplingParams: a value is refused the same way
        // whether it comes over HTTP or from code.
        String maxField = chat && root.has("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
        SamplingParams.Builder sampling = SamplingParams.builder().maxTokensLimit(config.maxTokensLimit())
                .temperature(0); // the server's default: greedy, so a request without it is deterministic
        Integer maxTokens = integer(root, maxField);
        sampling.maxTokens(maxTokens != null ? maxTokens
                : chat ? Math.min(config.maxTokensLimit(), Math.max(1, engine.capacityTokens() - prompt.length))
                : Math.min(config.maxTokensLimit(), 16));
        Double temperature = number(root, "temperature");
        if (temperature != null) {
            sampling.temperature(temperature);
        }
        Double topP = number(root, "top_p");
        if (topP != null) {
            sampling.topP(topP);
        }
        Double presence = number(root, "presence_penalty");
        if (presence != null) {
            sampling.presencePenalty(presence);
        }
        Double frequency = number(root, "frequency_penalty");
        if (frequency != null) {
            sampling.frequencyPenalty(frequency);
        }
        Integer topK = integer(root, "top_k");
        if (topK != null) {
            sampling.topK(topK);
        }
        Integer n = integer(root, "n");
        if (n != null) {
            sampling.n(n);
        }
        int choices = n == null ? 1 : n;
        JsonNode seedNode = root.get("seed");
        if (seedNode != null && !seedNode.isNull()) {
            if (!seedNode.isIntegralNumber() || !seedNode.canConvertToLong()) {
                throw ApiError.badField("seed", "'seed' must be an integer, got " + seedNode);
            }
            sampling.seed(seedNode.longValue());
        }
        sampling.stop(stops(root.get("stop")));
        JsonNode stream = root.get("stream");
        if (stream != null && !stream.isNull() && !stream.isBoolean()) {
            throw ApiError.badField("stream", "'stream' must be true or false, got " + stream);
        }
        boolean streaming = stream != null && stream.asBoolean(false);
        boolean includeUsage = includeUsage(root, streaming);
        int topLogprobs = topLogprobs(root, chat);
        SamplingParams params;
        try {
            params = sampling.build();
        } catch (SamplingFieldException e) {
            SamplingFieldException named = e.field().equals("max_tokens") ? e.renamed(maxField) : e;
            throw ApiError.badField(named.field(), named.getMessage());
        }
        List<GenerationRequest> requests = new ArrayList<>(choices);
        for (int i = 0; i < choices; i++) { // a seeded request's choice i draws from seed + i: distinct, reproducible
            SamplingParams p = i == 0 || params.seed().isEmpty() ? params : new SamplingParams(params.temperature(), params.topP(),
                    params.topK(), params.maxTokens(), OptionalLong.of(params.seed().getAsLong() + i), params.stop(),
                    params.stopTokenIds(), params.presencePenalty(), params.frequencyPenalty());
            requests.add(new GenerationRequest(prompt, p, topLogprobs, grammar));
        }
        return new Parsed(requests, streaming, includeUsage, !tools.isEmpty());
    }

    /**
     * What the output must be, or null for free text. {@code tool_choice} {@code "required"}
     * forces one call of one of {@code tools}, a named function one call of that function, in the
     * model's call form (Mistral's when its template names {@code [TOOL_CALLS]}, else Hermes'),
     * with arguments that follow the function's {@code parameters} schema. {@code response_format}
     * {@code {"type": "json_object"}} forces a JSON object, {@code {"type": "json_schema",
     * "json_schema": {"name", "schema", "strict"}}} a value of the schema, {@code {"type": "text"}}
     * nothing. A schema constrained decoding cannot follow is a 400 naming the keyword and its
     * place. Compiled grammars are kept ({@link #GRAMMARS} most recent), so repeated schemas share
     * their masks.
     */
    private SchemaGrammar grammar(JsonNode root, List<JsonNode> tools) throws ApiError {
        JsonNode choice = root.get("tool_choice");
        boolean forced = choice != null && (choice.isObject() || choice.isTextual() && choice.asText().equals("required"));
        JsonNode format = root.get("response_format");
        SchemaGrammar fromFormat = format == null || format.isNull() ? null : responseFormat(format);
        if (!forced) {
            return fromFormat;
        }
        if (fromFormat != null) {
            throw ApiError.badField("response_format", "'response_format' " + abbreviate(format.toString())
                    + " cannot be combined with a forced tool call ('tool_choice' " + abbreviate(choice.toString()) + ")");
        }
        if (tools.isEmpty()) {
            throw ApiError.badField("tool_choice", "'tool_choice' " + abbreviate(choice.toString()) + " needs 'tools'");
        }
        Map<String, JsonNode> functions = new LinkedHashMap<>();
        for (JsonNode t : tools) {
            functions.putIfAbsent(t.path("function").path("name").asText(), t.path("function").get("parameters"));
        }
        if (choice.isObject()) {
            JsonNode name = choice.path("function").get("name");
            if (!"function".equals(choice.path("type").asText(null)) || name == null || !name.isTextual()) {
                throw ApiError.badField("tool_choice", "'tool_choice' must name a function as {\"type\": \"function\","
                        + " \"function\": {\"name\": ...}}, got " + abbreviate(choice.toString()));
            }
            if (!functions.containsKey(name.asText())) {
                throw ApiError.badField("tool_choice", "'tool_choice' names function '" + abbreviate(name.asText())
                        + "', which is not among 'tools' (" + String.join(", ", functions.keySet()) + ")");
            }
            Map<String, JsonNode> one = new LinkedHashMap<>();
            one.put(name.asText(), functions.get(name.asText()));
            functions = one;
        }
        SchemaGrammar.CallForm form = engine.model().chat().mistralToolCalls() ? SchemaGrammar.CallForm.MISTRAL
                : SchemaGrammar.CallForm.HERMES;
        Map<String, JsonNode> chosen = functions;
        return compiled("tools " + form + " " + chosen, "tools", () -> SchemaGrammar.toolCall(chosen, form));
    }

    private SchemaGrammar responseFormat(JsonNode format) throws ApiError {
        String type = format.isObject() ? format.path("type").asText("") : "";
        return switch (type) {
            case "text" -> null;
            case "json_object" -> compiled("json_object", "response_format", SchemaGrammar::anyObject);
            case "json_schema" -> {
                JsonNode spec = format.get("json_schema");
                JsonNode schema = spec == null ? null : spec.get("schema");
                if (spec == null || !spec.isObject() || schema == null || !schema.isObject()) {
                    throw ApiError.badField("response_format", "'response_format' of type json_schema needs"
                            + " 'json_schema': {\"name\": ..., \"schema\": {...}}, got " + abbreviate(format.toString()));
                }
                yield compiled("json_schema " + schema, "response_format", () -> SchemaGrammar.of(schema));
            }
            default -> throw ApiError.badField("response_format", "'response_format' must be {\"type\": \"text\"},"
                    + " {\"type\": \"json_object\"} or {\"type\": \"json_schema\", \"json_schema\": {...}}, got "
                    + abbreviate(format.toString()));
        };
    }

    /** The most compiled grammars kept. */
    private static final int GRAMMARS = 32;
    private final Map<String, SchemaGrammar> grammars = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, SchemaGrammar> eldest) {
            return size() > GRAMMARS;
        }
    };

    /** The grammar compiled for {@code key}, compiling it on first use; a schema it cannot follow is a 400 on {@code field}. */
    private SchemaGrammar compiled(String key, String field, java.util.function.Supplier<SchemaGrammar> compile) throws ApiError {
        synchronized (grammars) {
            SchemaGrammar g = grammars.get(key);
            if (g != null) {
                return g;
            }
        }
        SchemaGrammar g;
        try {
            g = compile.get();
        } catch (SchemaException e) {
            throw ApiError.badField(field, "'" + field + "' " + e.getMessage());
        }
        synchronized (grammars) {
            grammars.putIfAbsent(key, g);
            return grammars.get(key);
        }
    }

    /** The number in {@code field}, or null when absent; a value of another JSON type is a 400. */
    private static Double number(JsonNode root, String field) throws ApiError {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isNumber()) {
            throw ApiError.badField(field, "'" + field + "' must be a number, got " + v);
        }
        return v.doubleValue();
    }

    /** The integer in {@code field}, or null when absent; a value that is not an int is a 400. */
    private static Integer integer(JsonNode root, String field) throws ApiError {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw ApiError.badField(field, "'" + field + "' must be an integer, got " + v);
        }
        return v.intValue();
    }

    /** {@code stop} as a list: a string is a list of one; the entries' count and emptiness are SamplingParams' to check. */
    private static List<String> stops(JsonNode stop) throws ApiError {
        if (stop == null || stop.isNull()) {
            return List.of();
        }
        if (stop.isTextual()) {
            return List.of(stop.asText());
        }
        if (stop.isArray()) {
            List<String> out = new ArrayList<>();
            for (JsonNode s : stop) {
                if (!s.isTextual()) {
                    throw ApiError.badField("stop", "'stop' entries must be strings, got " + s);
                }
                out.add(s.asText());
            }
            return out;
        }
        throw ApiError.badField("stop", "'stop' must be a string or an array of strings, got " + stop);
    }

    private int[] completionPrompt(JsonNode prompt) throws ApiError {
        if (prompt == null || prompt.isNull()) {
            throw ApiError.badField("prompt", "'prompt' is required");
        }
        if (prompt.isArray() && prompt.size() == 1 && prompt.get(0).isTextual()) {
            prompt = prompt.get(0);
        }
        if (prompt.isTextual()) {
            int[] ids = tokenizer.encode(prompt.asText());
            String bos = tokenizerConfig.bosToken();
            if ((tokenizerConfig.addBosToken() || tokenizer.addsBos()) && bos != null && tokenizer.id(bos) >= 0
                    && (ids.length == 0 || ids[0] != tokenizer.id(bos))) {
                int[] with = new int[ids.length + 1];
                with[0] = tokenizer.id(bos);
                System.arraycopy(ids, 0, with, 1, ids.length);
                ids = with;
            }
            return ids;
        }
        if (prompt.isArray() && prompt.size() > 0 && prompt.get(0).isIntegralNumber()) {
            int[] ids = new int[prompt.size()];
            int vocab = engine.model().config().vocabSize();
            for (int i = 0; i < ids.length; i++) {
                JsonNode t = prompt.get(i);
                if (!t.isIntegralNumber() || t.longValue() < 0 || t.longValue() >= vocab) {
                    throw ApiError.badField("prompt", "prompt token " + i + " is " + t + ", not a token id in [0, " + vocab + ")");
                }
                ids[i] = t.intValue();
            }
            return ids;
        }
        throw ApiError.badField("prompt", "'prompt' must be a string, a one-string array or an array of token ids, got "
                + abbreviate(prompt.toString()));
    }

    /**
     * Renders {@code messages} with the model's chat format and encodes them. Roles: {@code system}
     * (and {@code developer}, rendered as system), {@code user}, {@code assistant} (its
     * {@code tool_calls} rendered after its text, its content then may be null) and {@code tool}
     * (with {@code tool_call_id}); {@code content} is a string or an array of {@code text} parts,
     * joined with newlines. Anything else is a 400 naming the message and the value. {@code tools}
     * (those {@link #tools} returned) go to the chat template.
     */
    private int[] chatPrompt(JsonNode messages, List<JsonNode> tools) throws ApiError {
        if (messages == null || !messages.isArray() || messages.isEmpty()) {
            throw ApiError.badField("messages", "'messages' must be a non-empty array, got " + (messages == null ? "nothing" : abbreviate(messages.toString())));
        }
        List<ChatMessage> list = new ArrayList<>();
        for (int i = 0; i < messages.size(); i++) {
            JsonNode m = messages.get(i);
            if (!m.isObject()) {
                throw ApiError.badField("messages", "message " + i + " must be an object, got " + abbreviate(m.toString()));
            }
            JsonNode role = m.get("role");
            if (role == null || !role.isTextual()) {
                throw ApiError.badField("messages", "message " + i + " needs a string 'role', got " + abbreviate(m.toString()));
            }
            JsonNode toolCalls = m.get("tool_calls");
            boolean hasCalls = toolCalls != null && !toolCalls.isNull();
            String content = messageContent(i, m.get("content"), role.asText().equals("assistant") && hasCalls);
            if (hasCalls && !role.asText().equals("assistant")) {
                throw ApiError.badField("messages", "message " + i + " has 'tool_calls' but role '" + role.asText()
                        + "'; only assistant messages carry tool calls");
            }
            try {
                list.add(switch (role.asText()) {
                    case "system", "developer" -> ChatMessage.system(content);
                    case "user" -> ChatMessage.user(content);
                    case "assistant" -> hasCalls ? ChatMessage.assistant(content, toolCalls(i, toolCalls))
                            : ChatMessage.assistant(content);
                    case "tool" -> {
                        JsonNode callId = m.get("tool_call_id");
                        if (callId == null || !callId.isTextual()) {
                            throw ApiError.badField("messages", "message " + i + " has role 'tool' and needs a string 'tool_call_id', got "
                                    + (callId == null ? "none" : abbreviate(callId.toString())));
                        }
                        yield ChatMessage.tool(callId.asText(), content);
                    }
                    default -> throw ApiError.badField("messages", "message " + i + " has role '" + abbreviate(role.asText())
                            + "'; the roles are system, developer, user, assistant and tool");
                });
            } catch (IllegalArgumentException e) {
                throw ApiError.badField("messages", "message " + i + ": " + e.getMessage());
            }
        }
        String text;
        try {
            text = engine.model().chat().render(list, tools, java.util.Map.of(), true);
        } catch (IllegalArgumentException e) {
            throw ApiError.badField("messages", e.getMessage());
        }
        return tokenizer.encode(text);
    }

    /**
     * The tools to render into the prompt: {@code tools}, each {@code {"type": "function",
     * "function": {"name", "description", "parameters"}}} (a string name, parameters an object when
     * present), unless {@code tool_choice} is {@code "none"}; {@code "auto"}, the default, lets the
     * model choose; {@code "required"} and a named function force a call ({@link #grammar}). Tools
     * for a model with no chat template are a 400.
     * Empty when no tools are to be rendered.
     */
    private List<JsonNode> tools(JsonNode root) throws ApiError {
        JsonNode choice = root.get("tool_choice");
        boolean none = false;
        if (choice != null && !choice.isNull()) {
            if (choice.isTextual() && choice.asText().equals("none")) {
                none = true;
            } else if (!(choice.isTextual() && (choice.asText().equals("auto") || choice.asText().equals("required"))
                    || choice.isObject())) {
                throw ApiError.badField("tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or"
                        + " {\"type\": \"function\", \"function\": {\"name\": ...}}, got " + abbreviate(choice.toString()));
            }
        }
        JsonNode tools = root.get("tools");
        if (tools == null || tools.isNull()) {
            return List.of();
        }
        if (!tools.isArray()) {
            throw ApiError.badField("tools", "'tools' must be an array of function tools, got " + abbreviate(tools.toString()));
        }
        List<JsonNode> out = new ArrayList<>();
        for (int i = 0; i < tools.size(); i++) {
            JsonNode t = tools.get(i);
            if (!t.isObject() || !"function".equals(t.path("type").asText(null))) {
                throw ApiError.badField("tools", "'tools' entry " + i + " must be {\"type\": \"function\", \"function\": {...}}, got "
                        + abbreviate(t.toString()));
            }
            JsonNode f = t.get("function");
            if (f == null || !f.isObject()) {
                throw ApiError.badField("tools", "'tools' entry " + i + " needs a 'function' object, got " + abbreviate(t.toString()));
            }
            JsonNode name = f.get("name");
            if (name == null || !name.isTextual() || name.asText().isEmpty()) {
                throw ApiError.badField("tools", "'tools' entry " + i + " needs a non-empty string 'function.name', got "
                        + (name == null ? "none" : abbreviate(name.toString())));
            }
            JsonNode description = f.get("description");
            if (description != null && !description.isNull() && !description.isTextual()) {
                throw ApiError.badField("tools", "'tools' entry " + i + " ('" + abbreviate(name.asText()) + "') 'function.description' must be a string, got "
                        + abbreviate(description.toString()));
            }
            JsonNode parameters = f.get("parameters");
            if (parameters != null && !parameters.isNull() && !parameters.isObject()) {
                throw ApiError.badField("tools", "'tools' entry " + i + " ('" + abbreviate(name.asText()) + "') 'function.parameters' must be a JSON Schema object, got "
                        + abbreviate(parameters.toString()));
            }
            out.add(t);
        }
        if (none) {
            return List.of();
        }
        if (!out.isEmpty() && !engine.model().chat().usesTemplate()) {
            throw ApiError.badField("tools", "this model has no chat template in tokenizer_config.json, so it cannot be given tools");
        }
        return out;
    }

    /** A message's text: a string, or the text of an array of {@code text} parts; null only where {@code nullable}. */
    private static String messageContent(int i, JsonNode content, boolean nullable) throws ApiError {
        if (content == null || content.isNull()) {
            if (nullable) {
                return "";
            }
            throw ApiError.badField("messages", "message " + i + " needs 'content' (a string or an array of text parts)");
        }
        if (content.isTextual()) {
            return content.asText();
        }
        if (!content.isArray()) {
            throw ApiError.badField("messages", "message " + i + " 'content' must be a string or an array of text parts, got "
                    + abbreviate(content.toString()));
        }
        StringBuilder text = new StringBuilder();
        for (int j = 0; j < content.size(); j++) {
            JsonNode part = content.get(j);
            JsonNode type = part.get("type");
            if (type == null || !type.isTextual()) {
                throw ApiError.badField("messages", "message " + i + " content part " + j + " needs a string 'type', got "
                        + abbreviate(part.toString()));
            }
            if (!type.asText().equals("text")) {
                throw ApiError.badField("messages", "message " + i + " content part " + j + " has type '" + abbreviate(type.asText())
                        + "', which is not supported: only 'text' parts are");
            }
            JsonNode t = part.get("text");
            if (t == null || !t.isTextual()) {
                throw ApiError.badField("messages", "message " + i + " content part " + j + " needs a string 'text', got "
                        + abbreviate(part.toString()));
            }
            if (j > 0) {
                text.append('\n');
            }
            text.append(t.asText());
        }
        return text.toString();
    }

    /**
     * An assistant message's {@code tool_calls} as the JSON text the chat format renders:
     * {@code {"name": ..., "arguments": ...}}, the arguments as parsed JSON when the string is
     * JSON, otherwise as the string.
     */
    private static List<ToolCall> toolCalls(int i, JsonNode calls) throws ApiError {
        if (!calls.isArray()) {
            throw ApiError.badField("messages", "message " + i + " 'tool_calls' must be an array, got " + abbreviate(calls.toString()));
        }
        List<ToolCall> out = new ArrayList<>();
        for (int j = 0; j < calls.size(); j++) {
            JsonNode c = calls.get(j);
            JsonNode type = c.get("type");
            JsonNode function = c.get("function");
            if (type != null && !type.isNull() && !"function".equals(type.asText(null))) {
                throw ApiError.badField("messages", "message " + i + " tool call " + j + " has type " + abbreviate(type.toString())
                        + "; only 'function' calls are supported");
            }
            if (function == null || !function.isObject() || !function.path("name").isTextual()) {
                throw ApiError.badField("messages", "message " + i + " tool call " + j + " needs a 'function' with a string 'name', got "
                        + abbreviate(c.toString()));
            }
            JsonNode args = function.get("arguments");
            JsonNode arguments; // a JSON object as templates expect it; text that is not JSON stays text
            if (args == null || args.isNull()) {
                arguments = JSON.createObjectNode();
            } else if (args.isTextual()) {
                JsonNode parsed;
                try {
                    parsed = JSON.readTree(args.asText());
                } catch (JsonProcessingException e) {
                    parsed = null;
                }
                arguments = parsed == null || parsed.isMissingNode() ? args : parsed;
            } else {
                arguments = args;
            }
            JsonNode id = c.get("id");
            out.add(new ToolCall(id != null && id.isTextual() ? id.asText() : null, function.get("name").asText(), arguments));
        }
        return out;
    }

    private static String abbreviate(String s) {
        return s.length() <= 80 ? s : s.substring(0, 77) + "...";
    }

    private void generate(HttpExchange ex, boolean chat, byte[] body) throws ApiError, IOException {
        Parsed p = parse(chat, body);
        String id = (chat ? "chatcmpl-" : "cmpl-") + UUID.randomUUID().toString().replace("-", "");
        long createdAt = System.currentTimeMillis() / 1000;
        LinkedBlockingQueue<Event> events = new LinkedBlockingQueue<>();
        List<Generator.Handle> handles = new ArrayList<>();
        try {
            for (int i = 0; i < p.choices.size(); i++) { // the choices share the prompt's KV blocks through the prefix cache
                handles.add(generator.submit(p.choices.get(i), new QueueSink(i, events)));
            }
        } catch (IllegalArgumentException e) { // the prompt and max_tokens do not fit one sequence's KV
            handles.forEach(Generator.Handle::cancel);
            throw ApiError.badField("max_tokens", e.getMessage());
        } catch (ModelFileChangedException e) {
            handles.forEach(Generator.Handle::cancel);
            throw modelUnavailable(e);
        } catch (RuntimeException e) {
            handles.forEach(Generator.Handle::cancel);
            throw e;
        }
        GenerationRequest first = p.choices.getFirst();
        List<LogprobsWriter> logprobs = new ArrayList<>();
        for (int i = 0; i < handles.size(); i++) {
            logprobs.add(first.wantsLogprobs() ? new LogprobsWriter(chat, first.topLogprobs()) : null);
        }
        try {
            if (p.stream) {
                stream(ex, chat, id, createdAt, events, handles, logprobs, p.includeUsage, p.toolCalls);
            } else {
                whole(ex, chat, id, createdAt, events, logprobs, p.toolCalls);
            }
        } catch (IOException | RuntimeException | ApiError e) {
            handles.forEach(Generator.Handle::cancel);
            throw e;
        } catch (InterruptedException e) {
            handles.forEach(Generator.Handle::cancel);
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The whole answer once every choice has finished; the first failure fails the request. With
     * {@code toolCalls} each chat choice's text is split into {@code content} (null when only
     * calls were made) and {@code tool_calls}, and a choice that made calls finishes with
     * {@code tool_calls}.
     */
    private void whole(HttpExchange ex, boolean chat, String id, long createdAt, LinkedBlockingQueue<Event> events,
                       List<LogprobsWriter> logprobs, boolean toolCalls) throws IOException, InterruptedException, ApiError {
        int n = logprobs.size();
        StringBuilder[] text = new StringBuilder[n];
        Event[] end = new Event[n];
        for (int i = 0; i < n; i++) {
            text[i] = new StringBuilder();
        }
        for (int finished = 0; finished < n; ) {
            Event e = events.take();
            if (e.logprobs != null) {
                logprobs.get(e.index).add(e.logprobs);
            } else if (e.text != null) {
                text[e.index].append(e.text);
            } else if (e.error instanceof ModelFileChangedException changed) {
                throw modelUnavailable(changed);
            } else if (e.error != null) {
                throw new ApiError(500, "server_error", null, "generation failed: " + e.error.getMessage());
            } else {
                end[e.index] = e;
                finished++;
            }
        }
        ObjectNode out = head(id, chat ? "chat.completion" : "text_completion", createdAt);
        var choices = out.putArray("choices");
        int completionTokens = 0;
        for (int i = 0; i < n; i++) {
            ObjectNode choice = choices.addObject().put("index", i);
            String reason = end[i].reason.openAiName();
            if (chat && toolCalls) {
                ToolCallParser.Result split = ToolCallParser.parse(text[i].toString());
                ObjectNode message = choice.putObject("message").put("role", "assistant").put("content", split.content());
                message.putNull("refusal");
                if (!split.calls().isEmpty()) {
                    var calls = message.putArray("tool_calls");
                    for (ToolCall c : split.calls()) {
                        ObjectNode call = calls.addObject().put("id", toolCallId()).put("type", "function");
                        call.putObject("function").put("name", c.name()).put("arguments", argumentsText(c));
                    }
                    reason = TOOL_CALLS_FINISH;
                }
            } else if (chat) {
                choice.putObject("message").put("role", "assistant").put("content", text[i].toString()).putNull("refusal");
            } else {
                choice.put("text", text[i].toString());
            }
            putLogprobs(choice, logprobs.get(i));
            choice.put("finish_reason", reason);
            completionTokens += end[i].completionTokens;
        }
        usage(out, end[0].promptTokens, completionTokens);
        sendJson(ex, 200, out);
    }

    /** The {@code finish_reason} of a choice that made tool calls. */
    private static final String TOOL_CALLS_FINISH = "tool_calls";

    /** A fresh tool call id, {@code call_} and 24 hex digits, unique per call. */
    private static String toolCallId() {
        return "call_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
    }

    /** A call's {@code function.arguments} as the OpenAI API sends them: JSON text. */
    private static String argumentsText(ToolCall c) {
        return c.arguments().isTextual() ? c.arguments().asText() : c.arguments().toString();
    }

    /** {@code logprobs} of a choice: null when not asked for, else the entries gathered since the last call. */
    private static void putLogprobs(ObjectNode choice, LogprobsWriter logprobs) {
        if (logprobs == null) {
            choice.putNull("logprobs");
        } else {
            choice.set("logprobs", logprobs.drain());
        }
    }

    /**
     * Writes a stream: for chat a first chunk with the role per choice, then one chunk per text
     * delta of a choice (with the log-probabilities of its tokens since its previous chunk, when
     * asked for), a chunk with the choice's {@code finish_reason} (and the log-probabilities of
     * tokens whose text never came); once every choice has finished, with {@code include_usage}
     * a chunk with empty {@code choices} and the {@code usage} (the other chunks then carry
     * {@code "usage": null}, as OpenAI's do), then {@code [DONE]}. A failure of one choice ends
     * the stream with an error event and cancels the others. With {@code toolCalls} a choice's text
     * goes through a {@link ToolCallParser}: its text outside calls is sent as {@code content}
     * deltas (text that may begin a call marker held back until decided), each call, once whole,
     * as two {@code tool_calls} deltas (index, id, type and name; then the arguments), and a choice
     * that made calls finishes with {@code tool_calls}.
     */
    private void stream(HttpExchange ex, boolean chat, String id, long createdAt, LinkedBlockingQueue<Event> events,
                        List<Generator.Handle> handles, List<LogprobsWriter> logprobs, boolean includeUsage, boolean toolCalls)
            throws IOException, InterruptedException {
        ex.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
        ex.getResponseHeaders().set("Cache-Control", "no-cache");
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        String object = chat ? "chat.completion.chunk" : "text_completion";
        int n = handles.size();
        ToolCallParser[] parsers = new ToolCallParser[n]; // per choice; none without tools
        int[] calls = new int[n]; // per choice: tool calls sent so far
        for (int i = 0; i < n && chat && toolCalls; i++) {
            parsers[i] = new ToolCallParser();
        }
        try {
            if (chat) {
                for (int i = 0; i < n; i++) {
                    ObjectNode first = chunkHead(id, object, createdAt, includeUsage);
                    ObjectNode c = first.putArray("choices").addObject().put("index", i);
                    c.putObject("delta").put("role", "assistant").put("content", "");
                    c.putNull("logprobs");
                    c.putNull("finish_reason");
                    event(out, first.toString());
                }
            }
            int promptTokens = 0;
            int completionTokens = 0;
            for (int finished = 0; finished < n; ) {
                Event e = events.take();
                if (e.logprobs != null) {
                    logprobs.get(e.index).add(e.logprobs);
                    continue;
                }
                if (e.error != null) {
                    handles.forEach(Generator.Handle::cancel);
                    ObjectNode err = JSON.createObjectNode();
                    err.putObject("error").put("message", "generation failed: " + e.error.getMessage()).put("type", "server_error");
                    event(out, err.toString());
                    event(out, "[DONE]");
                    return;
                }
                LogprobsWriter lp = logprobs.get(e.index);
                ToolCallParser parser = parsers[e.index];
                if (parser != null) {
                    List<ToolCallParser.Piece> pieces = e.text != null ? parser.feed(e.text) : parser.finish();
                    for (ToolCallParser.Piece piece : pieces) {
                        for (ObjectNode delta : toolDeltas(piece, e.index, calls)) {
                            ObjectNode chunk = chunkHead(id, object, createdAt, includeUsage);
                            ObjectNode c = chunk.putArray("choices").addObject().put("index", e.index);
                            c.set("delta", delta);
                            putLogprobs(c, lp);
                            c.putNull("finish_reason");
                            event(out, chunk.toString());
                        }
                    }
                    if (e.text != null) {
                        continue; // the choice's logprobs not yet sent wait for its next chunk
                    }
                }
                ObjectNode chunk = chunkHead(id, object, createdAt, includeUsage);
                ObjectNode c = chunk.putArray("choices").addObject().put("index", e.index);
                if (e.text != null) {
                    if (chat) {
                        c.putObject("delta").put("content", e.text);
                    } else {
                        c.put("text", e.text);
                    }
                    putLogprobs(c, lp);
                    c.putNull("finish_reason");
                } else {
                    if (chat) {
                        c.putObject("delta");
                    } else {
                        c.put("text", "");
                    }
                    if (lp != null && lp.pending()) {
                        putLogprobs(c, lp);
                    } else {
                        c.putNull("logprobs");
                    }
                    c.put("finish_reason", calls[e.index] > 0 ? TOOL_CALLS_FINISH : e.reason.openAiName());
                    promptTokens = e.promptTokens;
                    completionTokens += e.completionTokens;
                    finished++;
                }
                event(out, chunk.toString());
            }
            if (includeUsage) {
                ObjectNode last = head(id, object, createdAt);
                last.putArray("choices");
                usage(last, promptTokens, completionTokens);
                event(out, last.toString());
            }
            event(out, "[DONE]");
        } catch (IOException e) {
            handles.forEach(Generator.Handle::cancel); // the client is gone: free its sequences now
            throw e;
        }
    }

    /**
     * The chat deltas of one piece of a choice's output: text as one {@code content} delta; a call
     * as a delta naming it (index among the choice's calls, id, type, name, empty arguments) and a
     * delta with its arguments. {@code calls[choice]} counts the choice's calls.
     */
    private static List<ObjectNode> toolDeltas(ToolCallParser.Piece piece, int choice, int[] calls) {
        return switch (piece) {
            case ToolCallParser.Text t -> List.of(JSON.createObjectNode().put("content", t.text()));
            case ToolCallParser.Call c -> {
                int index = calls[choice]++;
                ObjectNode named = JSON.createObjectNode();
                ObjectNode head = named.putArray("tool_calls").addObject().put("index", index).put("id", toolCallId())
                        .put("type", "function");
                head.putObject("function").put("name", c.call().name()).put("arguments", "");
                ObjectNode args = JSON.createObjectNode();
                args.putArray("tool_calls").addObject().put("index", index).putObject("function")
                        .put("arguments", argumentsText(c.call()));
                yield List.of(named, args);
            }
        };
    }

    /** A chunk's head; with {@code include_usage} every chunk but the last has {@code "usage": null}. */
    private ObjectNode chunkHead(String id, String object, long createdAt, boolean includeUsage) {
        ObjectNode h = head(id, object, createdAt);
        if (includeUsage) {
            h.putNull("usage");
        }
        return h;
    }

    /**
     * Builds the OpenAI {@code logprobs} object of one choice from the tokens' log-probabilities,
     * in the endpoint's shape: chat {@code {"content": [{"token", "logprob", "bytes",
     * "top_logprobs": [{"token", "logprob", "bytes"}]}], "refusal": null}}; completions
     * {@code {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}},
     * whose dictionaries hold the top alternatives plus the chosen token, as OpenAI's do. A
     * token's string is its UTF-8 text, or, when its bytes are not whole UTF-8 characters on their
     * own, {@code bytes:} followed by {@code \xNN} per byte; {@code bytes} are always its exact
     * bytes. {@code text_offset} counts characters (code points) of the generated text before the
     * token. Exchange thread only.
     */
    private final class LogprobsWriter {
        private final boolean chat;
        private final int top;
        private final List<TokenLogprobs> pending = new ArrayList<>();
        private long offset; // characters generated before the next token, for text_offset

        LogprobsWriter(boolean chat, int top) {
            this.chat = chat;
            this.top = top;
        }

        void add(TokenLogprobs t) {
            pending.add(t);
        }

        boolean pending() {
            return !pending.isEmpty();
        }

        /** The logprobs object of the tokens added since the last drain. */
        ObjectNode drain() {
            ObjectNode out = JSON.createObjectNode();
            if (chat) {
                var content = out.putArray("content");
                for (TokenLogprobs t : pending) {
                    ObjectNode entry = tokenEntry(content.addObject(), t.token(), t.logprob());
                    var tops = entry.putArray("top_logprobs");
                    for (int i = 0; i < Math.min(top, t.top()); i++) {
                        tokenEntry(tops.addObject(), t.topIds()[i], t.topLogprobs()[i]);
                    }
                }
                out.putNull("refusal");
            } else {
                var tokens = out.putArray("tokens");
                var lps = out.putArray("token_logprobs");
                var tops = out.putArray("top_logprobs");
                var offsets = out.putArray("text_offset");
                for (TokenLogprobs t : pending) {
                    tokens.add(tokenString(t.token()));
                    lps.add(t.logprob());
                    ObjectNode alternatives = tops.addObject();
                    for (int i = 0; i < Math.min(top, t.top()); i++) {
                        alternatives.put(tokenString(t.topIds()[i]), t.topLogprobs()[i]);
                    }
                    alternatives.put(tokenString(t.token()), t.logprob());
                    offsets.add(offset);
                    if (!tokenizer.isSpecial(t.token())) {
                        for (byte b : tokenBytes(t.token())) {
                            if ((b & 0xC0) != 0x80) { // a character starts here
                                offset++;
                            }
                        }
                    }
                }
            }
            pending.clear();
            return out;
        }

        private ObjectNode tokenEntry(ObjectNode entry, int token, double logprob) {
            entry.put("token", tokenString(token)).put("logprob", logprob);
            var bytes = entry.putArray("bytes");
            for (byte b : tokenBytes(token)) {
                bytes.add(b & 0xFF);
            }
            return entry;
        }
    }

    /** A token's exact bytes (a special token's are its text's). */
    private byte[] tokenBytes(int token) {
        return tokenizer.tokenBytes(token);
    }

    /** A token's text, or {@code bytes:\xNN...} when its bytes are not whole UTF-8 characters. */
    private String tokenString(int token) {
        byte[] b = tokenBytes(token);
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            StringBuilder s = new StringBuilder("bytes:");
            for (byte x : b) {
                s.append(String.format("\\x%02x", x & 0xFF));
            }
            return s.toString();
        }
    }

    private static void event(OutputStream out, String data) throws IOException {
        out.write(("data: " + data + "\n\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private ObjectNode head(String id, String object, long createdAt) {
        return JSON.createObjectNode().put("id", id).put("object", object).put("created", createdAt).put("model", config.modelId());
    }

    /** The usage of a request: its prompt counted once, the tokens of all its choices. */
    private static void usage(ObjectNode out, int promptTokens, int completionTokens) {
        out.putObject("usage").put("prompt_tokens", promptTokens).put("completion_tokens", completionTokens)
                .put("total_tokens", promptTokens + completionTokens);
    }

    private static void sendJson(HttpExchange ex, int status, JsonNode body) throws IOException {
        sendText(ex, status, "application/json", body.toString());
    }

    private static void sendText(HttpExchange ex, int status, String type, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", type);
        if (ex.getRequestMethod().equals("HEAD")) {
            ex.sendResponseHeaders(status, -1); // the JDK server sends no body on HEAD; -1 says so
            return;
        }
        ex.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(b);
        }
    }

    /** 503: the model's weights may no longer be read (a mapped file changed); the message names the file. */
    private static ApiError modelUnavailable(ModelFileChangedException e) {
        return new ApiError(503, "server_error", null, "the model is out of service: " + e.getMessage());
    }

    private static void sendError(HttpExchange ex, ApiError e) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode err = root.putObject("error").put("message", e.getMessage()).put("type", e.type);
        if (e.param == null) {
            err.putNull("param");
        } else {
            err.put("param", e.param);
        }
        err.put("code", e.status);
        if (e.status == 401) {
            ex.getResponseHeaders().set("WWW-Authenticate", "Bearer");
        }
        sendJson(ex, e.status, root);
    }

    /** One thing choice {@code index} produced: text, a token's log-probabilities, or its end (reason and usage), or its failure. */
    private record Event(int index, String text, TokenLogprobs logprobs, FinishReason reason, int promptTokens, int completionTokens,
                         RuntimeException error) {
    }

    /** Hands one choice's output from the generator's thread to the exchange's thread, through the request's queue. */
    private static final class QueueSink implements TextSink {
        final int index;
        final LinkedBlockingQueue<Event> events;

        QueueSink(int index, LinkedBlockingQueue<Event> events) {
            this.index = index;
            this.events = events;
        }

        @Override
        public void logprobs(TokenLogprobs token) {
            events.add(new Event(index, null, token, null, 0, 0, null));
        }

        @Override
        public void text(String delta) {
            events.add(new Event(index, delta, null, null, 0, 0, null));
        }

        @Override
        public void finished(FinishReason reason, int promptTokens, int completionTokens) {
            events.add(new Event(index, null, null, reason, promptTokens, completionTokens, null));
        }

        @Override
        public void failed(RuntimeException error) {
            events.add(new Event(index, null, null, null, 0, 0, error));
        }
    }
}
