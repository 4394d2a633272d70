package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.sample.SamplingParams;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.engine.tokenizer.StreamDecoder;
import dev.strata.memory.metrics.PrometheusText;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server on {@link ContinuousBatchingGenerator}, end to end over real HTTP and a synthesized
 * Qwen3-MoE with paged experts: concurrent requests run as one batch and each gets what it gets
 * alone; seeded sampling repeats; temperature, top-k and top-p give the distributions they define
 * (a goodness-of-fit test at fixed seeds); stop strings cut streamed text; a client that
 * disconnects mid-stream has its sequence cancelled and its blocks freed while another stream goes
 * on.
 */
class ContinuousBatchingServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MODEL = "synth-batching";
    private static final int BLOCK_TOKENS = 16;
    private static final int KV_BLOCKS = 48;

    @TempDir
    static Path dir;

    static ServeEngine engine;
    static ServeMetrics metrics;
    static ContinuousBatchingGenerator generator;
    static TestGenerator controlled;
    static OpenAiServer server;
    static HttpClient client;

    @BeforeAll
    static void start() throws Exception {
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3_MOE, 11), dir, (d, t, b, tb) -> { });
        engine = new ServeEngine(dir, 1, BLOCK_TOKENS, KV_BLOCKS, 4);
        metrics = new ServeMetrics();
        generator = new ContinuousBatchingGenerator(engine, metrics);
        controlled = new TestGenerator(generator);
        server = OpenAiServer.start(ServerConfig.local(0, MODEL, 256, 512), engine, controlled, metrics);
        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        if (generator != null) {
            generator.close();
        }
        if (engine != null) {
            engine.kv().checkInvariants();
            assertThat(engine.kv().stats().openSequences()).isZero();
            engine.close();
        }
    }

    private static HttpRequest request(String body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
                .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    private static JsonNode post(String body) throws Exception {
        HttpResponse<String> r = client.send(request(body), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    private static String completion(String prompt, int maxTokens, String extra) throws Exception {
        return "{\"prompt\":" + JSON.writeValueAsString(prompt) + ",\"max_tokens\":" + maxTokens + extra + "}";
    }

    /** A Prometheus sample's value from /metrics (the server's and the engine's). */
    private static double metric(String name) {
        String text = server.prometheus();
        return text.lines().filter(l -> l.startsWith(name + " ")).mapToDouble(l -> Double.parseDouble(l.split(" ")[1]))
                .findFirst().orElseThrow(() -> new AssertionError("no sample " + name + " in\n" + text));
    }

    /** Waits until nothing is queued or running and the worker has published that. */
    private static void awaitIdle() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            if (generator.queueLength() == 0 && metric("strata_serve_running") == 0 && metric("strata_kv_sequences") == 0) {
                return;
            }
            Thread.sleep(5);
        }
        throw new AssertionError("the generator did not go idle:\n" + server.prometheus());
    }

    @Test
    void concurrentHttpRequestsRunAsOneBatchAndEachGetsItsAloneAnswer() throws Exception {
        String[] prompts = {"Tiers: device, host, pool, disk. ", "Experts are paged in slots. ", "A block holds sixteen tokens. ",
                "Continuous batching admits requests between steps. ", "x"};
        String[] alone = new String[prompts.length];
        for (int i = 0; i < prompts.length; i++) {
            alone[i] = post(completion(prompts[i], 14, "")).get("choices").toString();
        }
        awaitIdle();
        double batches = metric("strata_serve_decode_batches_total");
        double decoded = metric("strata_serve_decoded_tokens_total");
        controlled.holdFirstUntilQueued(prompts.length - 1); // the first request waits until the others are queued
        List<CompletableFuture<HttpResponse<String>>> together = new ArrayList<>();
        for (String p : prompts) {
            together.add(client.sendAsync(request(completion(p, 14, "")), HttpResponse.BodyHandlers.ofString()));
        }
        for (int i = 0; i < prompts.length; i++) {
            HttpResponse<String> r = together.get(i).get(30, TimeUnit.SECONDS);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(JSON.readTree(r.body()).get("choices").toString()).as("request " + i).isEqualTo(alone[i]);
        }
        awaitIdle();
        assertThat(generator.peakRunning()).as("sequences running together").isEqualTo(prompts.length);
        double batchCalls = metric("strata_serve_decode_batches_total") - batches;
        double batchTokens = metric("strata_serve_decoded_tokens_total") - decoded;
        assertThat(batchTokens / batchCalls).as("mean decode batch (%s tokens in %s passes)", batchTokens, batchCalls)
                .isGreaterThan(2.0);
        assertThat(metric("strata_serve_queue_length")).isZero();
        assertThat(metric("strata_serve_preempted")).isZero();
    }

    @Test
    void seededSamplingRepeatsAloneAndInABatch() throws Exception {
        String prompt = "Seeds make sampling repeatable. ";
        String sampled = ",\"temperature\":0.9,\"top_p\":0.95,\"top_k\":40,\"presence_penalty\":0.4,\"frequency_penalty\":0.3";
        String first = post(completion(prompt, 20, sampled + ",\"seed\":1234")).get("choices").toString();
        String again = post(completion(prompt, 20, sampled + ",\"seed\":1234")).get("choices").toString();
        assertThat(again).isEqualTo(first);
        awaitIdle();
        controlled.holdFirstUntilQueued(3);
        List<CompletableFuture<HttpResponse<String>>> together = new ArrayList<>();
        for (int seed : new int[] {1234, 7, 8, 9}) {
            together.add(client.sendAsync(request(completion(prompt, 20, sampled + ",\"seed\":" + seed)),
                    HttpResponse.BodyHandlers.ofString()));
        }
        Set<String> texts = new HashSet<>();
        for (int i = 0; i < together.size(); i++) {
            JsonNode choices = JSON.readTree(together.get(i).get(30, TimeUnit.SECONDS).body()).get("choices");
            if (i == 0) {
                assertThat(choices.toString()).as("seed 1234 in a batch").isEqualTo(first);
            }
            texts.add(choices.get(0).get("text").asText());
        }
        assertThat(texts).as("other seeds, other texts").hasSizeGreaterThan(1);
        awaitIdle();
    }

    @Test
    void temperatureTopKAndTopPGiveTheDistributionsTheyDefine() throws Exception {
        int[] prompt = engine.model().tokenizer().encode("Sampling picks the next token: ");
        int validVocab = Math.min(engine.model().tokenizer().size(), engine.model().config().vocabSize());
        float[] logits;
        try (ServeEngine reference = new ServeEngine(dir, 1, BLOCK_TOKENS, 8, 0);
                ModelRunner.Sequence seq = reference.runner().newSequence()) {
            logits = seq.prefill(prompt, false)[0];
        }
        Set<Integer> eos = generator.eosTokens();
        String[] textOf = new String[validVocab];
        for (int t = 0; t < validVocab; t++) {
            StreamDecoder d = engine.model().tokenizer().streamDecoder(true);
            textOf[t] = eos.contains(t) ? "" : d.push(t) + d.finish();
        }
        int samples = 240;
        double[] argmaxShare = new double[3];
        double[][] configs = {{0.4, 0, 1}, {1.0, 0, 1}, {2.0, 0, 1}, {1.0, 4, 1}, {1.0, 0, 0.5}}; // temperature, top_k, top_p
        for (int c = 0; c < configs.length; c++) {
            double temperature = configs[c][0];
            int topK = (int) configs[c][1];
            double topP = configs[c][2];
            double[] p = expected(logits, validVocab, temperature, topK, topP);
            Map<String, Double> want = new HashMap<>();
            for (int t = 0; t < validVocab; t++) {
                if (p[t] > 0) {
                    want.merge(textOf[t], p[t], Double::sum);
                }
            }
            Map<String, Integer> got = sample(prompt, samples, 1000L * c, temperature, topK, topP);
            assertThat(want.keySet()).as("config %d: every sampled text is in the support", c).containsAll(got.keySet());
            double chi = chiSquare(want, got, samples);
            assertThat(chi).as("config %d (T %s, top_k %d, top_p %s): chi-square %s against %s over %d categories", c, temperature,
                    topK, topP, chi, want, got.size()).isLessThan(critical(want, samples));
            if (c < 3) {
                String best = textOf[argmax(logits, validVocab)];
                argmaxShare[c] = got.getOrDefault(best, 0) / (double) samples;
            }
        }
        assertThat(argmaxShare[0]).as("a low temperature sharpens").isGreaterThan(argmaxShare[1]);
        assertThat(argmaxShare[1]).as("a high temperature flattens").isGreaterThan(argmaxShare[2]);
        awaitIdle();
    }

    /** {@code n} one-token generations of {@code prompt} with seeds {@code seed0, seed0 + 1, ...}, counted by text. */
    private static Map<String, Integer> sample(int[] prompt, int n, long seed0, double temperature, int topK, double topP)
            throws InterruptedException {
        Map<String, Integer> counts = new HashMap<>();
        CountDownLatch done = new CountDownLatch(n);
        List<String> errors = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            SamplingParams params = SamplingParams.builder().temperature(temperature).topK(topK).topP(topP).seed(seed0 + i)
                    .maxTokens(1).build();
            StringBuilder text = new StringBuilder();
            generator.submit(new GenerationRequest(prompt, params), new TextSink() {
                @Override
                public void text(String delta) {
                    text.append(delta);
                }

                @Override
                public void finished(FinishReason reason, int promptTokens, int completionTokens) {
                    synchronized (counts) {
                        counts.merge(text.toString(), 1, Integer::sum);
                    }
                    done.countDown();
                }

                @Override
                public void failed(RuntimeException error) {
                    synchronized (counts) {
                        errors.add(error.toString());
                    }
                    done.countDown();
                }
            });
        }
        assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
        assertThat(errors).isEmpty();
        return counts;
    }

    /**
     * The probability of each id under the sampling rules: top-k by logit (ties to the lower id),
     * weights {@code exp((l − max) / T)}, then the smallest prefix by probability (ties to the lower
     * id) whose mass reaches {@code topP} of the total.
     */
    private static double[] expected(float[] logits, int vocab, double temperature, int topK, double topP) {
        Integer[] order = new Integer[vocab];
        for (int t = 0; t < vocab; t++) {
            order[t] = t;
        }
        java.util.Arrays.sort(order, (a, b) -> logits[a] != logits[b] ? Float.compare(logits[b], logits[a]) : Integer.compare(a, b));
        int kept = topK > 0 && topK < vocab ? topK : vocab;
        double max = logits[order[0]];
        double[] w = new double[vocab];
        double total = 0;
        for (int i = 0; i < kept; i++) {
            w[order[i]] = Math.exp((logits[order[i]] - max) / temperature);
            total += w[order[i]];
        }
        if (topP < 1) {
            double mass = 0;
            int i = 0;
            for (; i < kept; i++) {
                mass += w[order[i]];
                if (mass >= topP * total) {
                    i++;
                    break;
                }
            }
            for (int j = i; j < kept; j++) {
                w[order[j]] = 0;
            }
            total = mass;
        }
        for (int t = 0; t < vocab; t++) {
            w[t] /= total;
        }
        return w;
    }

    /** Pearson's statistic over the texts expected at least 5 times, the rest pooled (into the smallest when rare). */
    private static double chiSquare(Map<String, Double> want, Map<String, Integer> got, int n) {
        List<double[]> cells = new ArrayList<>(); // {expected, observed}
        double restExpected = 0;
        double restObserved = 0;
        for (Map.Entry<String, Double> e : want.entrySet()) {
            double expected = e.getValue() * n;
            int observed = got.getOrDefault(e.getKey(), 0);
            if (expected >= 5) {
                cells.add(new double[] {expected, observed});
            } else {
                restExpected += expected;
                restObserved += observed;
            }
        }
        if (restExpected >= 5 || cells.isEmpty()) {
            cells.add(new double[] {restExpected, restObserved});
        } else if (restExpected > 0) {
            double[] smallest = cells.stream().min((a, b) -> Double.compare(a[0], b[0])).orElseThrow();
            smallest[0] += restExpected;
            smallest[1] += restObserved;
        }
        double chi = 0;
        for (double[] cell : cells) {
            chi += (cell[1] - cell[0]) * (cell[1] - cell[0]) / cell[0];
        }
        return chi;
    }

    /** The 0.999 quantile of chi-square with the cells' degrees of freedom (Wilson–Hilferty). */
    private static double critical(Map<String, Double> want, int n) {
        long cells = want.values().stream().filter(p -> p * n >= 5).count();
        double rest = want.values().stream().filter(p -> p * n < 5).mapToDouble(p -> p * n).sum();
        if (rest >= 5) {
            cells++;
        }
        int df = (int) Math.max(1, cells - 1);
        double z = 3.0902;
        double a = 2.0 / (9 * df);
        return df * Math.pow(1 - a + z * Math.sqrt(a), 3);
    }

    private static int argmax(float[] x, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (x[i] > x[best]) {
                best = i;
            }
        }
        return best;
    }

    @Test
    void stopStringsCutStreamedTextAndFinishWithStop() throws Exception {
        String prompt = "Stop strings end generation early. ";
        JsonNode whole = post(completion(prompt, 30, "")).get("choices").get(0);
        String text = whole.get("text").asText();
        assertThat(text.length()).as("greedy text long enough to cut: '%s'", text).isGreaterThanOrEqualTo(6);
        String stop = text.substring(text.length() / 2, text.length() / 2 + 3);
        String cut = text.substring(0, text.indexOf(stop));
        HttpResponse<String> streamed = client.send(request(completion(prompt, 30, ",\"stream\":true,"
                + "\"stream_options\":{\"include_usage\":true},\"stop\":["
                + JSON.writeValueAsString(stop) + ",\"never-produced\"]")), HttpResponse.BodyHandlers.ofString());
        assertThat(streamed.statusCode()).isEqualTo(200);
        StringBuilder joined = new StringBuilder();
        String reason = null;
        int completionTokens = -1;
        for (String block : streamed.body().split("\n\n")) {
            String data = block.substring("data: ".length());
            if (data.equals("[DONE]")) {
                break;
            }
            JsonNode chunk = JSON.readTree(data);
            if (chunk.get("choices").isEmpty()) { // the usage chunk, last
                completionTokens = chunk.get("usage").get("completion_tokens").asInt();
                continue;
            }
            JsonNode choice = chunk.get("choices").get(0);
            joined.append(choice.get("text").asText());
            if (!choice.get("finish_reason").isNull()) {
                reason = choice.get("finish_reason").asText();
            }
        }
        assertThat(joined.toString()).isEqualTo(cut);
        assertThat(reason).isEqualTo("stop");
        assertThat(completionTokens).isBetween(1, 29);
        awaitIdle();
    }

    @Test
    void aDisconnectMidStreamFreesItsBlocksWhileAnotherStreamGoesOn() throws Exception {
        int maxTokens = 160;
        List<String> fullLength = new ArrayList<>(); // prompts whose greedy continuation runs to max_tokens
        for (String p : List.of("Memory tiers move blocks. ", "abc def ghi ", "Hello, world! ", "0 1 2 3 4 5 ", "Pages and slots. ")) {
            JsonNode r = post(completion(p, maxTokens, ""));
            if (r.get("choices").get(0).get("finish_reason").asText().equals("length")) {
                fullLength.add(p);
            }
        }
        assertThat(fullLength).as("two prompts that generate %d tokens without eos", maxTokens).hasSizeGreaterThanOrEqualTo(2);
        String other = fullLength.get(1);
        String otherAlone = post(completion(other, maxTokens, "")).get("choices").get(0).get("text").asText();
        awaitIdle();
        long cancelledBefore = metrics.cancelledCount();

        controlled.slowTextNanos(4_000_000); // each text delta holds the worker 4 ms, so both streams outlive the disconnect
        try {
            CompletableFuture<HttpResponse<String>> survivor = client.sendAsync(request(completion(other, maxTokens,
                    ",\"stream\":true")), HttpResponse.BodyHandlers.ofString());
            String body = completion(fullLength.get(0), maxTokens, ",\"stream\":true");
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            try (Socket socket = new Socket("127.0.0.1", server.port())) {
                OutputStream out = socket.getOutputStream();
                out.write(("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: "
                        + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(bytes);
                out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                assertThat(in.readLine()).isEqualTo("HTTP/1.1 200 OK");
                int dataLines = 0;
                for (String line; dataLines < 3 && (line = in.readLine()) != null; ) {
                    if (line.contains("data: ")) {
                        dataLines++;
                    }
                }
                assertThat(dataLines).isEqualTo(3);
            } // closed mid-stream
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (metrics.cancelledCount() == cancelledBefore && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(metrics.cancelledCount()).as("the disconnected generation was cancelled").isEqualTo(cancelledBefore + 1);
            assertThat(survivor).as("the other stream is still running").isNotDone();
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (metric("strata_kv_sequences") != 1 && System.nanoTime() < deadline) {
                Thread.sleep(2);
            }
            assertThat(metric("strata_kv_sequences")).as("only the survivor holds a sequence").isEqualTo(1);
            assertThat(survivor).as("the other stream is still running").isNotDone();

            HttpResponse<String> r = survivor.get(60, TimeUnit.SECONDS);
            assertThat(r.statusCode()).isEqualTo(200);
            StringBuilder joined = new StringBuilder();
            String reason = null;
            for (String block : r.body().split("\n\n")) {
                String data = block.substring("data: ".length());
                if (!data.equals("[DONE]")) {
                    JsonNode choice = JSON.readTree(data).get("choices").get(0);
                    joined.append(choice.get("text").asText());
                    if (!choice.get("finish_reason").isNull()) {
                        reason = choice.get("finish_reason").asText();
                    }
                }
            }
            assertThat(reason).isEqualTo("length");
            assertThat(joined.toString()).as("the survivor's text is its alone answer").isEqualTo(otherAlone);
        } finally {
            controlled.slowTextNanos(0);
        }
        awaitIdle();
        // allocator audit: no open sequence, every slot free or holding a cached block, the manager consistent
        engine.kv().checkInvariants();
        assertThat(engine.kv().stats().openSequences()).isZero();
        assertThat(engine.kv().stats().freeSlots() + engine.kv().stats().residentBlocks()).isEqualTo(KV_BLOCKS);
    }

    @Test
    void aSinkThatThrowsFailsOnlyItsOwnRequest() throws Exception {
        int[] prompt = engine.model().tokenizer().encode("One bad sink among good ones. ");
        List<String> events = java.util.Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(4);
        for (int i = 0; i < 4; i++) {
            int which = i;
            generator.submit(GenerationRequest.greedy(prompt, 12), new TextSink() {
                @Override
                public void text(String delta) {
                    if (which == 1) {
                        throw new IllegalStateException("sink " + which + " is broken");
                    }
                }

                @Override
                public void finished(FinishReason reason, int promptTokens, int completionTokens) {
                    events.add(which + ":" + reason + ":" + completionTokens);
                    done.countDown();
                }

                @Override
                public void failed(RuntimeException error) {
                    events.add(which + ":failed:" + error.getMessage());
                    done.countDown();
                }
            });
        }
        assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(events).containsExactlyInAnyOrder("0:LENGTH:12", "1:failed:sink 1 is broken", "2:LENGTH:12", "3:LENGTH:12");
        int vocab = engine.model().config().vocabSize();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> generator.submit(GenerationRequest.greedy(new int[] {1, vocab + 5}, 3),
                new TextSink() {
                    @Override
                    public void text(String delta) {
                    }

                    @Override
                    public void finished(FinishReason reason, int promptTokens, int completionTokens) {
                    }

                    @Override
                    public void failed(RuntimeException error) {
                    }
                })).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("prompt token 1 is " + (vocab + 5));
        awaitIdle();
        engine.kv().checkInvariants();
        assertThat(engine.kv().stats().openSequences()).isZero();
    }

    /**
     * The real generator with two test controls: hold the first request's start until a number of
     * others are queued (so they join one batch whatever the HTTP timing), and hold each text delta
     * for a while (so streams outlive a disconnect).
     */
    static final class TestGenerator implements Generator {
        private final ContinuousBatchingGenerator inner;
        private volatile int holdUntilQueued; // 0: no hold
        private volatile long slowNanos;

        TestGenerator(ContinuousBatchingGenerator inner) {
            this.inner = inner;
        }

        void holdFirstUntilQueued(int others) {
            holdUntilQueued = others;
        }

        void slowTextNanos(long nanos) {
            slowNanos = nanos;
        }

        @Override
        public Handle submit(GenerationRequest request, TextSink sink) {
            return inner.submit(request, new TextSink() {
                @Override
                public void started(int promptTokens, int reusedTokens) {
                    int others = holdUntilQueued;
                    if (others > 0) {
                        holdUntilQueued = 0;
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                        while (inner.queueLength() < others && System.nanoTime() < deadline) {
                            Thread.onSpinWait();
                        }
                    }
                    sink.started(promptTokens, reusedTokens);
                }

                @Override
                public void text(String delta) {
                    sink.text(delta);
                    long nanos = slowNanos;
                    if (nanos > 0) {
                        try {
                            Thread.sleep(Duration.ofNanos(nanos));
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                }

                @Override
                public void finished(FinishReason reason, int promptTokens, int completionTokens) {
                    sink.finished(reason, promptTokens, completionTokens);
                }

                @Override
                public void failed(RuntimeException error) {
                    sink.failed(error);
                }
            });
        }

        @Override
        public int queueLength() {
            return inner.queueLength();
        }

        @Override
        public void writeEngineMetrics(PrometheusText out) {
            inner.writeEngineMetrics(out);
        }

        @Override
        public void close() {
        }
    }
}
