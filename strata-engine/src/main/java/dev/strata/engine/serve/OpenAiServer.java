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
import dev.strata.engine.sample.SamplingFieldException;
import dev.strata.engine.sample.SamplingParams;
import dev.strata.engine.tokenizer.BpeTokenizer;
import dev.strata.engine.tokenizer.ChatMessage;
import dev.strata.engine.tokenizer.TokenizerConfig;
import dev.strata.memory.metrics.PrometheusText;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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
 * stream sends one {@code data: {chunk}} per text delta, a final chunk carrying
 * {@code finish_reason} and {@code usage}, then {@code data: [DONE]}. A failed write (the client
 * went away) cancels the generation through its {@link Generator.Handle}, which releases its KV
 * blocks.
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

    /** A parsed generation request plus what the response needs. */
    private record Parsed(GenerationRequest request, boolean stream) {
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
        int[] prompt = chat ? chatPrompt(root.get("messages")) : completionPrompt(root.get("prompt"));
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
        SamplingParams params;
        try {
            params = sampling.build();
        } catch (SamplingFieldException e) {
            SamplingFieldException named = e.field().equals("max_tokens") ? e.renamed(maxField) : e;
            throw ApiError.badField(named.field(), named.getMessage());
        }
        return new Parsed(new GenerationRequest(prompt, params), stream != null && stream.asBoolean(false));
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

    private int[] chatPrompt(JsonNode messages) throws ApiError {
        if (messages == null || !messages.isArray() || messages.isEmpty()) {
            throw ApiError.badField("messages", "'messages' must be a non-empty array, got " + (messages == null ? "nothing" : abbreviate(messages.toString())));
        }
        List<ChatMessage> list = new ArrayList<>();
        for (int i = 0; i < messages.size(); i++) {
            JsonNode m = messages.get(i);
            JsonNode role = m.get("role");
            JsonNode content = m.get("content");
            if (role == null || !role.isTextual() || content == null || !content.isTextual()) {
                throw ApiError.badField("messages", "message " + i + " needs a string 'role' and a string 'content', got "
                        + abbreviate(m.toString()));
            }
            try {
                list.add(new ChatMessage(role.asText(), content.asText()));
            } catch (IllegalArgumentException e) {
                throw ApiError.badField("messages", "message " + i + ": " + e.getMessage());
            }
        }
        String text;
        try {
            text = engine.model().chatFormat().render(list, true, tokenizerConfig.bosToken(), tokenizerConfig.eosToken());
        } catch (IllegalArgumentException e) {
            throw ApiError.badField("messages", e.getMessage());
        }
        return tokenizer.encode(text);
    }

    private static String abbreviate(String s) {
        return s.length() <= 80 ? s : s.substring(0, 77) + "...";
    }

    private void generate(HttpExchange ex, boolean chat, byte[] body) throws ApiError, IOException {
        Parsed p = parse(chat, body);
        String id = (chat ? "chatcmpl-" : "cmpl-") + UUID.randomUUID().toString().replace("-", "");
        long createdAt = System.currentTimeMillis() / 1000;
        QueueSink sink = new QueueSink();
        Generator.Handle handle;
        try {
            handle = generator.submit(p.request, sink);
        } catch (IllegalArgumentException e) { // the prompt and max_tokens do not fit one sequence's KV
            throw ApiError.badField("max_tokens", e.getMessage());
        } catch (ModelFileChangedException e) {
            throw modelUnavailable(e);
        }
        try {
            if (p.stream) {
                stream(ex, chat, id, createdAt, sink, handle);
            } else {
                whole(ex, chat, id, createdAt, sink);
            }
        } catch (IOException | RuntimeException e) {
            handle.cancel();
            throw e;
        } catch (InterruptedException e) {
            handle.cancel();
            Thread.currentThread().interrupt();
        }
    }

    private void whole(HttpExchange ex, boolean chat, String id, long createdAt, QueueSink sink)
            throws IOException, InterruptedException, ApiError {
        StringBuilder text = new StringBuilder();
        while (true) {
            Event e = sink.events.take();
            if (e.text != null) {
                text.append(e.text);
                continue;
            }
            if (e.error instanceof ModelFileChangedException changed) {
                throw modelUnavailable(changed);
            }
            if (e.error != null) {
                throw new ApiError(500, "server_error", null, "generation failed: " + e.error.getMessage());
            }
            ObjectNode out = head(id, chat ? "chat.completion" : "text_completion", createdAt);
            ObjectNode choice = out.putArray("choices").addObject().put("index", 0);
            if (chat) {
                choice.putObject("message").put("role", "assistant").put("content", text.toString());
            } else {
                choice.put("text", text.toString());
                choice.putNull("logprobs");
            }
            choice.put("finish_reason", e.reason.openAiName());
            usage(out, e);
            sendJson(ex, 200, out);
            return;
        }
    }

    private void stream(HttpExchange ex, boolean chat, String id, long createdAt, QueueSink sink, Generator.Handle handle)
            throws IOException, InterruptedException {
        ex.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
        ex.getResponseHeaders().set("Cache-Control", "no-cache");
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        String object = chat ? "chat.completion.chunk" : "text_completion";
        try {
            if (chat) {
                ObjectNode first = head(id, object, createdAt);
                ObjectNode c = first.putArray("choices").addObject().put("index", 0);
                c.putObject("delta").put("role", "assistant").put("content", "");
                c.putNull("finish_reason");
                event(out, first.toString());
            }
            while (true) {
                Event e = sink.events.take();
                ObjectNode chunk = head(id, object, createdAt);
                ObjectNode c = chunk.putArray("choices").addObject().put("index", 0);
                if (e.text != null) {
                    if (chat) {
                        c.putObject("delta").put("content", e.text);
                    } else {
                        c.put("text", e.text);
                    }
                    c.putNull("finish_reason");
                    event(out, chunk.toString());
                    continue;
                }
                if (e.error != null) {
                    ObjectNode err = JSON.createObjectNode();
                    err.putObject("error").put("message", "generation failed: " + e.error.getMessage()).put("type", "server_error");
                    event(out, err.toString());
                } else {
                    if (chat) {
                        c.putObject("delta");
                    } else {
                        c.put("text", "");
                    }
                    c.put("finish_reason", e.reason.openAiName());
                    usage(chunk, e);
                    event(out, chunk.toString());
                }
                event(out, "[DONE]");
                return;
            }
        } catch (IOException e) {
            handle.cancel(); // the client is gone: free its sequence now
            throw e;
        }
    }

    private static void event(OutputStream out, String data) throws IOException {
        out.write(("data: " + data + "\n\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private ObjectNode head(String id, String object, long createdAt) {
        return JSON.createObjectNode().put("id", id).put("object", object).put("created", createdAt).put("model", config.modelId());
    }

    private static void usage(ObjectNode out, Event e) {
        out.putObject("usage").put("prompt_tokens", e.promptTokens).put("completion_tokens", e.completionTokens)
                .put("total_tokens", e.promptTokens + e.completionTokens);
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

    /** One thing a generation produced: text, or its end (reason and usage), or its failure. */
    private record Event(String text, FinishReason reason, int promptTokens, int completionTokens, RuntimeException error) {
    }

    /** Hands a generation's output from the generator's thread to the exchange's thread. */
    private static final class QueueSink implements TextSink {
        final LinkedBlockingQueue<Event> events = new LinkedBlockingQueue<>();

        @Override
        public void text(String delta) {
            events.add(new Event(delta, null, 0, 0, null));
        }

        @Override
        public void finished(FinishReason reason, int promptTokens, int completionTokens) {
            events.add(new Event(null, reason, promptTokens, completionTokens, null));
        }

        @Override
        public void failed(RuntimeException error) {
            events.add(new Event(null, null, 0, 0, error));
        }
    }
}
