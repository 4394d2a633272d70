package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.memory.metrics.PrometheusText;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server on {@link ContinuousBatchingGenerator} when one request's work fails: a shared pool
 * whose node daemon cannot be reached while one prompt's prefix is looked up fails that request
 * alone (a 500 naming the cause), while the requests batched with it get the answers they get
 * without it, and no KV sequence stays open.
 */
class OneRequestFailureServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MODEL = "synth-failure";
    private static final int BLOCK_TOKENS = 16;
    private static final int KV_BLOCKS = 48;
    private static final int PROMPT_TOKENS = 2 * BLOCK_TOKENS + 3; // two full blocks looked up in the pool

    @TempDir
    static Path dir;

    static UnreachablePool pool;
    static ServeEngine engine;
    static ContinuousBatchingGenerator generator;
    static HoldingGenerator holding;
    static OpenAiServer server;
    static HttpClient client;
    static int[][] prompts; // [3][PROMPT_TOKENS]: two that succeed, then the one whose lookup fails

    @BeforeAll
    static void start() throws Exception {
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3_MOE, 12), dir, (d, t, b, tb) -> { });
        pool = new UnreachablePool();
        engine = new ServeEngine(dir, ServeEngine.Options.builder().threads(1).blockTokens(BLOCK_TOKENS).kvBlocks(KV_BLOCKS)
                .expertCap(4).shared(pool).conclude());
        int vocab = Math.min(engine.model().tokenizer().size(), engine.model().config().vocabSize());
        SplittableRandom random = new SplittableRandom(77);
        prompts = new int[3][PROMPT_TOKENS];
        for (int[] p : prompts) {
            for (int i = 0; i < p.length; i++) {
                p[i] = random.nextInt(vocab);
            }
        }
        int[] failing = prompts[2];
        pool.unreachableFor(engine.kv().hasher().chain(failing, failing.length - 1)[0]); // before the worker drives the manager
        ServeMetrics metrics = new ServeMetrics();
        generator = new ContinuousBatchingGenerator(engine, metrics);
        holding = new HoldingGenerator(generator);
        server = OpenAiServer.start(ServerConfig.local(0, MODEL, 256, 512), engine, holding, metrics);
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

    @Test
    void aRequestWhosePoolLookupFailsGetsA500AndTheOthersGetTheirAnswers() throws Exception {
        // the first request is running (the worker holds it in its start until the two others are
        // queued) when the two others are admitted together in the next step
        CountDownLatch firstStarted = holding.holdNext(2);
        CompletableFuture<HttpResponse<String>> first = send(prompts[0]);
        assertThat(firstStarted.await(10, TimeUnit.SECONDS)).as("the first request started").isTrue();
        CompletableFuture<HttpResponse<String>> second = send(prompts[1]);
        CompletableFuture<HttpResponse<String>> failing = send(prompts[2]);

        HttpResponse<String> failed = failing.get(30, TimeUnit.SECONDS);
        assertThat(failed.statusCode()).as(failed.body()).isEqualTo(500);
        JsonNode error = JSON.readTree(failed.body()).get("error");
        assertThat(error.get("type").asText()).isEqualTo("server_error");
        assertThat(error.get("message").asText()).contains("node daemon of the shared pool is unreachable");
        HttpResponse<String> one = first.get(30, TimeUnit.SECONDS);
        HttpResponse<String> two = second.get(30, TimeUnit.SECONDS);
        assertThat(one.statusCode()).as(one.body()).isEqualTo(200);
        assertThat(two.statusCode()).as(two.body()).isEqualTo(200);
        awaitNoOpenSequence();
        assertThat(pool.refusedLookups()).isPositive();

        // without the failing request: the same answers
        assertThat(choices(send(prompts[0]).get(30, TimeUnit.SECONDS))).as("first request alone").isEqualTo(choices(one));
        assertThat(choices(send(prompts[1]).get(30, TimeUnit.SECONDS))).as("second request alone").isEqualTo(choices(two));
        awaitNoOpenSequence();
        assertThat(engine.kv().stats().freeSlots() + engine.kv().stats().residentBlocks()).isEqualTo(KV_BLOCKS);
    }

    private static CompletableFuture<HttpResponse<String>> send(int[] prompt) {
        String body = "{\"prompt\":" + Arrays.toString(prompt) + ",\"max_tokens\":12}";
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
                .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return client.sendAsync(request, HttpResponse.BodyHandlers.ofString());
    }

    private static String choices(HttpResponse<String> r) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body()).get("choices").toString();
    }

    /** Waits until the generator is idle and its KV manager's sequences gauge is back at zero. */
    private static void awaitNoOpenSequence() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            String text = server.prometheus();
            if (generator.queueLength() == 0 && sample(text, "strata_serve_running") == 0 && sample(text, "strata_kv_sequences") == 0) {
                engine.kv().checkInvariants();
                assertThat(engine.kv().stats().openSequences()).isZero();
                return;
            }
            Thread.sleep(5);
        }
        throw new AssertionError("a KV sequence stayed open:\n" + server.prometheus());
    }

    private static double sample(String text, String name) {
        return text.lines().filter(l -> l.startsWith(name + " ")).mapToDouble(l -> Double.parseDouble(l.split(" ")[1]))
                .findFirst().orElseThrow(() -> new AssertionError("no sample " + name + " in\n" + text));
    }

    /**
     * The real generator, able to hold the next request's start on the worker until a number of
     * others are queued (so they are admitted together in the following step whatever the HTTP
     * timing). Any thread.
     */
    static final class HoldingGenerator implements Generator {
        private final ContinuousBatchingGenerator inner;
        private final AtomicReference<Hold> hold = new AtomicReference<>();

        private record Hold(int others, CountDownLatch started) {
        }

        HoldingGenerator(ContinuousBatchingGenerator inner) {
            this.inner = inner;
        }

        /** Holds the start of the next request to start until {@code others} requests are queued; the latch opens when it starts. */
        CountDownLatch holdNext(int others) {
            CountDownLatch started = new CountDownLatch(1);
            hold.set(new Hold(others, started));
            return started;
        }

        @Override
        public Handle submit(GenerationRequest request, TextSink sink) {
            return inner.submit(request, new TextSink() {
                @Override
                public void started(int promptTokens, int reusedTokens) {
                    Hold h = hold.getAndSet(null);
                    if (h != null) {
                        h.started().countDown();
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                        while (inner.queueLength() < h.others() && System.nanoTime() < deadline) {
                            Thread.onSpinWait();
                        }
                    }
                    sink.started(promptTokens, reusedTokens);
                }

                @Override
                public void text(String delta) {
                    sink.text(delta);
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

    /**
     * A shared pool holding nothing, whose node daemon cannot be reached while a lookup asks for
     * one key (the first block of one prompt): that lookup throws, as a pool client does when its
     * daemon is gone. Any thread.
     */
    static final class UnreachablePool implements SharedBlockStore {
        private volatile ObjectKey unreachable;
        private final AtomicInteger refused = new AtomicInteger();

        void unreachableFor(ObjectKey key) {
            unreachable = key;
        }

        int refusedLookups() {
            return refused.get();
        }

        @Override
        public int matchPrefix(ObjectKey[] keys, int from, int count) {
            for (int i = from; i < from + count; i++) {
                if (keys[i].equals(unreachable)) {
                    refused.incrementAndGet();
                    throw new IllegalStateException("the node daemon of the shared pool is unreachable (looking up block " + i
                            + ")");
                }
            }
            return 0;
        }

        @Override
        public boolean read(ObjectKey key, List<MemorySegment> destinations) {
            return false;
        }

        @Override
        public PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
            return PublishStatus.EXISTS;
        }
    }
}
