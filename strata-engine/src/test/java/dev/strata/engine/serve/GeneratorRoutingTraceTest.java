package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.routing.RequestStart;
import dev.strata.cache.routing.RoutingPhase;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceReader;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.schedule.PreemptionMode;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The batching generator records the routing of the requests it serves: the trace's header fits
 * the model, it holds one request start per request, its prefill steps cover every prompt token and
 * its decode steps every generated token but the last of each request, and every id names one of
 * the model's experts, distinct within a token's top-k. A dense model has no routing to record and
 * is refused by name.
 */
class GeneratorRoutingTraceTest {

    @TempDir
    Path dir;

    @Test
    void servedRequestsAreRecordedInTheRoutingTraceFormat() throws Exception {
        Path model = dir.resolve("moe");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3_MOE, 23), model, (d, t, b, tb) -> { });
        Path trace = dir.resolve("served.routing");
        SplittableRandom rnd = new SplittableRandom(7);
        int[] promptLengths = {5, 19, 33};
        int[] maxTokens = {4, 9, 6};
        List<Finished> done = new ArrayList<>();
        ModelConfig c;
        try (ServeEngine engine = new ServeEngine(model, 1, 16, 32, 4)) {
            c = engine.model().config();
            try (ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, new ServeMetrics(),
                    PreemptionMode.SWAP, trace)) {
                for (int i = 0; i < promptLengths.length; i++) {
                    int[] prompt = rnd.ints(promptLengths[i], 10, Math.min(200, c.vocabSize())).toArray();
                    Finished f = new Finished();
                    done.add(f);
                    generator.submit(GenerationRequest.greedy(prompt, maxTokens[i]), f);
                }
                for (Finished f : done) {
                    f.result.get(60, TimeUnit.SECONDS);
                }
            }
        }
        int moeLayers = (int) Arrays.stream(ModelRunner.moeLayers(c)).filter(i -> i >= 0).count();
        int starts = 0;
        long prefillTokens = 0;
        long decodeTokens = 0;
        try (RoutingTraceReader reader = RoutingTraceReader.open(trace)) {
            assertThat(reader.header().layers()).isEqualTo(moeLayers);
            assertThat(reader.header().experts()).isEqualTo(c.numExperts());
            assertThat(reader.header().topK()).isEqualTo(c.numExpertsPerTok());
            for (RoutingRecord r; (r = reader.next()) != null; ) {
                if (r instanceof RequestStart) {
                    starts++;
                } else if (r instanceof RoutingStep s) {
                    if (s.phase() == RoutingPhase.PREFILL) {
                        prefillTokens += s.tokens();
                    } else {
                        decodeTokens += s.tokens();
                    }
                    for (int layer = 0; layer < s.layers(); layer++) {
                        for (int t = 0; t < s.tokens(); t++) {
                            int[] chosen = new int[s.topK()];
                            for (int k = 0; k < s.topK(); k++) {
                                chosen[k] = s.expert(layer, t, k);
                                assertThat(chosen[k]).isBetween(0, c.numExperts() - 1);
                            }
                            assertThat(Arrays.stream(chosen).distinct().count()).isEqualTo(s.topK());
                        }
                    }
                }
            }
            assertThat(reader.ending()).isEqualTo(RoutingTraceReader.Ending.CLEAN);
        }
        assertThat(starts).isEqualTo(promptLengths.length);
        assertThat(prefillTokens).isEqualTo(Arrays.stream(promptLengths).sum());
        long generatedButLast = done.stream().mapToLong(f -> f.completionTokens - 1).sum();
        assertThat(decodeTokens).isEqualTo(generatedButLast);
        assertThat(done).allSatisfy(f -> assertThat(f.completionTokens).isPositive());
    }

    @Test
    void aDenseModelHasNoRoutingToRecord() throws Exception {
        Path model = dir.resolve("dense");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.LLAMA, 5), model, (d, t, b, tb) -> { });
        Path trace = dir.resolve("dense.routing");
        try (ServeEngine engine = new ServeEngine(model, 1, 16, 8, 0)) {
            assertThatThrownBy(() -> new ContinuousBatchingGenerator(engine, new ServeMetrics(), PreemptionMode.SWAP, trace))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(trace.toString())
                    .hasMessageContaining("dense");
        }
        assertThat(Files.exists(trace)).isFalse();
    }

    /** Collects the end of one generation. */
    private static final class Finished implements TextSink {
        final CompletableFuture<FinishReason> result = new CompletableFuture<>();
        volatile int completionTokens;

        @Override
        public void text(String delta) {
        }

        @Override
        public void finished(FinishReason reason, int promptTokens, int completionTokens) {
            this.completionTokens = completionTokens;
            result.complete(reason);
        }

        @Override
        public void failed(RuntimeException error) {
            result.completeExceptionally(error);
        }
    }
}
