package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.memory.metrics.PrometheusText;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Work the KV manager finishes after the last request ended (write-through offloads of the
 * committed blocks, publishes into a shared pool) is applied and shows in the server's metrics
 * while the server is idle, without waiting for another request: {@code /metrics} of an idle
 * server is not stale. The shared store here publishes slowly, as a pool behind a busy node
 * daemon does, so that its publishes end well after the request.
 */
class GeneratorIdleStatsTest {
    private static final long PUBLISH_MILLIS = 50; // each publish takes this long

    /** A shared store in this process whose publishes take {@link #PUBLISH_MILLIS}. */
    private static final class SlowSharedStore implements SharedBlockStore {
        private final Map<ObjectKey, byte[]> blocks = new ConcurrentHashMap<>();

        @Override
        public int matchPrefix(ObjectKey[] keys, int from, int count) {
            int n = 0;
            while (n < count && blocks.containsKey(keys[from + n])) {
                n++;
            }
            return n;
        }

        @Override
        public boolean read(ObjectKey key, List<MemorySegment> destinations) {
            byte[] b = blocks.get(key);
            if (b == null) {
                return false;
            }
            long at = 0;
            for (MemorySegment d : destinations) {
                MemorySegment.copy(MemorySegment.ofArray(b), at, d, 0, d.byteSize());
                at += d.byteSize();
            }
            return true;
        }

        @Override
        public PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
            try {
                Thread.sleep(PUBLISH_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            long size = sources.stream().mapToLong(MemorySegment::byteSize).sum();
            byte[] b = new byte[(int) size];
            long at = 0;
            for (MemorySegment s : sources) {
                MemorySegment.copy(s, 0, MemorySegment.ofArray(b), at, s.byteSize());
                at += s.byteSize();
            }
            return blocks.putIfAbsent(key, b) == null ? PublishStatus.PUBLISHED : PublishStatus.EXISTS;
        }
    }

    @TempDir
    Path dir;

    @Test
    void publishesFinishedAfterTheLastRequestShowInTheMetricsOfAnIdleServer() throws Exception {
        Path model = dir.resolve("dense");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.LLAMA, 11), model, (d, t, b, tb) -> { });
        try (ServeEngine engine = new ServeEngine(model, ServeEngine.Options.builder().blockTokens(4).kvBlocks(64).shared(new SlowSharedStore()).conclude());
             ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, new ServeMetrics())) {
            int[] prompt = new SplittableRandom(3).ints(41, 10, 200).toArray(); // 10 full blocks
            CompletableFuture<FinishReason> done = new CompletableFuture<>();
            generator.submit(GenerationRequest.greedy(prompt, 2), completing(done, reason -> reason));
            assertThat(done.get(60, TimeUnit.SECONDS)).isEqualTo(FinishReason.LENGTH);
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            double commits;
            double published;
            do {
                PrometheusText out = new PrometheusText();
                generator.writeEngineMetrics(out);
                String text = out.toString();
                commits = sample(text, "strata_kv_commits_total");
                published = sample(text, "strata_kv_link_blocks_total{link=\"shared_publish\"}");
                if (commits >= 10 && published >= commits) {
                    break;
                }
                Thread.sleep(10);
            } while (System.nanoTime() < until);
            assertThat(commits).as("blocks committed by the one request").isGreaterThanOrEqualTo(10);
            assertThat(published).as("their publishes into the shared pool, seen in the metrics of the idle server").isEqualTo(commits);
        }
    }

    /**
     * A request's KV counters are in the metrics by the time its reply ends: the sink reads them in
     * its {@code finished} call, which is when a server completes the HTTP response, so a client
     * that scrapes {@code /metrics} right after its reply finds the request there. Before, the
     * snapshot was refreshed only after the step in which the request ended, and a scrape in
     * between saw the counters from before the request.
     */
    @Test
    void aRequestsKvCountersAreInTheMetricsWhenItsReplyEnds() throws Exception {
        Path model = dir.resolve("dense-counters");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.LLAMA, 12), model, (d, t, b, tb) -> { });
        try (ServeEngine engine = new ServeEngine(model, ServeEngine.Options.builder().blockTokens(4).kvBlocks(64).conclude());
             ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, new ServeMetrics())) {
            for (int request = 1; request <= 3; request++) {
                int[] prompt = new SplittableRandom(100 + request).ints(41, 10, 200).toArray(); // 10 full blocks, none shared
                CompletableFuture<String> atFinish = new CompletableFuture<>();
                generator.submit(GenerationRequest.greedy(prompt, 2), completing(atFinish, reason -> {
                    PrometheusText out = new PrometheusText(); // read in the sink's finished call, on the worker
                    generator.writeEngineMetrics(out);
                    return out.toString();
                }));
                String text = atFinish.get(60, TimeUnit.SECONDS);
                assertThat(sample(text, "strata_kv_commits_total")).as("blocks committed by %d requests", request)
                        .isGreaterThanOrEqualTo(10.0 * request);
                assertThat(sample(text, "strata_kv_misses_total")).as("prompt blocks computed by %d requests", request)
                        .isEqualTo(10.0 * request);
            }
        }
    }

    /** A sink that ignores the text and completes {@code result} with {@code atFinish} of the finish reason, or with the failure. */
    private static <T> TextSink completing(CompletableFuture<T> result, Function<FinishReason, T> atFinish) {
        return new TextSink() {
            @Override
            public void text(String delta) {
            }

            @Override
            public void finished(FinishReason reason, int promptTokens, int completionTokens) {
                result.complete(atFinish.apply(reason));
            }

            @Override
            public void failed(RuntimeException error) {
                result.completeExceptionally(error);
            }
        };
    }

    private static double sample(String text, String series) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(text);
        assertThat(m.find()).as("%s in%n%s", series, text).isTrue();
        return Double.parseDouble(m.group(1));
    }
}
