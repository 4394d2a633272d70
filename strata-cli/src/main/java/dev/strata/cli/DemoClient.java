package dev.strata.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.engine.tokenizer.ChatMessage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The demo's HTTP side: streams one chat completion from an engine instance and measures it as a
 * client sees it (time to the first generated text, then the decode), and reads an instance's
 * {@code /metrics}.
 *
 * <p>Threads: any; one {@link HttpClient} shared.
 */
final class DemoClient {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    /**
     * What one streamed completion returned.
     *
     * @param text             the generated text
     * @param promptTokens     prompt tokens the server counted
     * @param completionTokens tokens generated
     * @param finishReason     {@code stop} or {@code length}
     * @param ttftNanos        from sending the request to the first chunk with generated text (or the end)
     * @param decodeNanos      from that chunk to the end of the stream
     */
    record Reply(String text, int promptTokens, int completionTokens, String finishReason, long ttftNanos, long decodeNanos) {
    }

    /** Streams {@code /v1/chat/completions} at {@code base} (greedy, {@code maxTokens}). */
    Reply chat(String base, String model, List<ChatMessage> messages, int maxTokens) {
        ObjectNode body = JSON.createObjectNode().put("model", model).put("stream", true).put("temperature", 0)
                .put("max_tokens", maxTokens);
        body.putObject("stream_options").put("include_usage", true); // the usage comes as a last chunk
        ArrayNode list = body.putArray("messages");
        for (ChatMessage m : messages) {
            list.addObject().put("role", m.role()).put("content", m.content());
        }
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions")).timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
        long start = System.nanoTime();
        HttpResponse<Stream<String>> response = send(request, HttpResponse.BodyHandlers.ofLines());
        if (response.statusCode() != 200) {
            String error = String.join("\n", response.body().toList());
            throw new IllegalStateException("POST " + request.uri() + " answered " + response.statusCode() + ": " + error);
        }
        StringBuilder text = new StringBuilder();
        long first = 0;
        int promptTokens = -1;
        int completionTokens = -1;
        String finish = null;
        try (Stream<String> lines = response.body()) {
            for (Iterator<String> it = lines.iterator(); it.hasNext(); ) {
                String line = it.next();
                if (!line.startsWith("data: ") || line.equals("data: [DONE]")) {
                    continue;
                }
                JsonNode chunk = parse(line.substring(6));
                if (chunk.has("error")) {
                    throw new IllegalStateException("POST " + request.uri() + " failed mid-stream: " + chunk.get("error"));
                }
                JsonNode choice = chunk.path("choices").path(0);
                String delta = choice.path("delta").path("content").asText("");
                boolean end = !choice.path("finish_reason").isNull() && !choice.path("finish_reason").isMissingNode();
                if (first == 0 && (!delta.isEmpty() || end)) {
                    first = System.nanoTime();
                }
                text.append(delta);
                if (end) {
                    finish = choice.get("finish_reason").asText();
                }
                if (chunk.hasNonNull("usage")) {
                    promptTokens = chunk.path("usage").path("prompt_tokens").asInt(-1);
                    completionTokens = chunk.path("usage").path("completion_tokens").asInt(-1);
                }
            }
        }
        long done = System.nanoTime();
        if (finish == null) {
            throw new IllegalStateException("POST " + request.uri() + ": the stream ended without a finish_reason");
        }
        return new Reply(text.toString(), promptTokens, completionTokens, finish, first - start, done - first);
    }

    /** The samples of {@code base}/metrics: {@code name{labels}} (or {@code name}) to value. */
    Map<String, Double> metrics(String base) {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/metrics")).timeout(Duration.ofSeconds(30)).build();
        HttpResponse<String> response = send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException("GET " + request.uri() + " answered " + response.statusCode());
        }
        Map<String, Double> samples = new HashMap<>();
        for (String line : response.body().split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int space = line.lastIndexOf(' ');
            try {
                samples.put(line.substring(0, space), sampleValue(line.substring(space + 1)));
            } catch (NumberFormatException | StringIndexOutOfBoundsException e) {
                throw new IllegalStateException("GET " + request.uri() + ": not a metrics sample: '" + line + "'");
            }
        }
        return samples;
    }

    /** The sum of every sample of the family {@code name} (all label sets). */
    static double sum(Map<String, Double> samples, String name) {
        double s = 0;
        for (Map.Entry<String, Double> e : samples.entrySet()) {
            String key = e.getKey();
            int brace = key.indexOf('{');
            if ((brace < 0 ? key : key.substring(0, brace)).equals(name)) {
                s += e.getValue();
            }
        }
        return s;
    }

    /** A sample's value in the text format: a number, or {@code +Inf}, {@code -Inf}, {@code NaN}. */
    private static double sampleValue(String text) {
        return switch (text) {
            case "+Inf" -> Double.POSITIVE_INFINITY;
            case "-Inf" -> Double.NEGATIVE_INFINITY;
            case "NaN" -> Double.NaN;
            default -> Double.parseDouble(text);
        };
    }

    /** The sample {@code name{label="value"}}, or 0 when absent. */
    static double sample(Map<String, Double> samples, String name, String label, String value) {
        return samples.getOrDefault(name + "{" + label + "=\"" + value + "\"}", 0.0);
    }

    private <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
        try {
            return http.send(request, handler);
        } catch (IOException e) {
            throw new UncheckedIOException(request.method() + " " + request.uri() + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted during " + request.method() + " " + request.uri(), e);
        }
    }

    private static JsonNode parse(String json) {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            throw new UncheckedIOException("not JSON: " + json, e);
        }
    }
}
