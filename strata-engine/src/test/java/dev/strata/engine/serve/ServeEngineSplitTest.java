package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.split.LiveSplit;
import dev.strata.cache.split.MissCosts;
import dev.strata.cache.split.SplitController.Mode;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.schedule.PreemptionMode;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.memory.Sizes;
import dev.strata.memory.device.CpuDeviceBackend;
import dev.strata.memory.metrics.PrometheusText;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The live expert/KV split under served traffic: a {@link ServeEngine} with one DEVICE budget for
 * the expert slots and the KV slots serves, through the {@link ContinuousBatchingGenerator}, a
 * phase of long prompts reused round-robin (KV-heavy: the prompts' blocks are reused at a distance
 * of their total size), then a phase of short distinct prompts (expert-heavy: no KV reuse, each
 * prefill routes widely). The split must give KV more bytes in the first phase and give them back
 * to the experts in the second; at every barrier the DEVICE tier holds exactly the two pools and
 * never more than the budget; and every output is byte-identical to an engine without a split
 * (greedy). {@code /metrics} shows the split.
 */
class ServeEngineSplitTest {
    private static final int BLOCK_TOKENS = 16;
    private static final int KV_FLOOR = 16; // the engine's kvBlocks: one sequence of 256 tokens always fits
    private static final int LONG_PROMPTS = 3;
    private static final int LONG_BLOCKS = 7; // full blocks per long prompt: 21 distinct blocks reused round-robin
    private static final int LONG_ROUNDS = 6;
    private static final int SHORT_REQUESTS = 40;
    private static final int SHORT_TOKENS = 20;
    private static final int MAX_TOKENS = 6;

    @TempDir
    static Path dir;

    static ModelConfig config;
    static long slotBytes; // one expert slot of one layer, DEVICE allocation (whole KV slots under a split)
    static long blockBytes; // one KV slot, DEVICE allocation
    static int moeLayers;
    static int experts;

    @BeforeAll
    static void model() throws Exception {
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3_MOE, 31), dir, (d, t, b, tb) -> { });
        config = ModelConfig.read(dir);
        blockBytes = Sizes.alignUp(ModelRunner.kvGeometry(config, BLOCK_TOKENS).bytesPerBlock(), CpuDeviceBackend.ALIGNMENT);
        slotBytes = Sizes.alignUp(ModelRunner.expertLayout(config).bytes(), blockBytes); // under a split: whole KV slots
        moeLayers = ModelRunner.moeLayerCount(config);
        experts = config.numExperts();
    }

    /** The shifting workload: long reused prompts, then short distinct ones. */
    private static List<int[]> longPhase() {
        SplittableRandom random = new SplittableRandom(41);
        int[][] prompts = new int[LONG_PROMPTS][];
        for (int p = 0; p < LONG_PROMPTS; p++) {
            prompts[p] = random.ints(LONG_BLOCKS * BLOCK_TOKENS, 10, 500).toArray();
        }
        List<int[]> out = new ArrayList<>();
        for (int round = 0; round < LONG_ROUNDS; round++) {
            for (int[] p : prompts) {
                out.add(p);
            }
        }
        return out;
    }

    private static List<int[]> shortPhase() {
        SplittableRandom random = new SplittableRandom(43);
        List<int[]> out = new ArrayList<>();
        for (int i = 0; i < SHORT_REQUESTS; i++) {
            out.add(random.ints(SHORT_TOKENS, 10, 500).toArray());
        }
        return out;
    }

    @Test
    void theSplitFollowsTheShiftingWorkloadWithinTheBudgetAndOutputsMatchAnUnsplitEngine() throws Exception {
        List<int[]> kvHeavy = longPhase();
        List<int[]> expertHeavy = shortPhase();
        List<String> reference = new ArrayList<>();
        try (ServeEngine plain = new ServeEngine(dir, ServeEngine.Options.builder().blockTokens(BLOCK_TOKENS).kvBlocks(64)
                .expertCap(experts).conclude());
             ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(plain, new ServeMetrics(), PreemptionMode.SWAP)) {
            reference.addAll(serve(generator, kvHeavy));
            reference.addAll(serve(generator, expertHeavy));
        }

        long budget = experts * moeLayers * slotBytes + KV_FLOOR * blockBytes; // every expert resident, KV at its floor
        LiveSplit.Settings settings = LiveSplit.Settings.defaults(budget).withBursts(4, 0.5).withControl(Mode.ESTIMATOR, 0.0, 2, 0);
        List<String> served = new ArrayList<>();
        List<String> violations = new CopyOnWriteArrayList<>();
        List<LiveSplit.Barrier> barriers = new CopyOnWriteArrayList<>();
        try (ServeEngine engine = new ServeEngine(dir, ServeEngine.Options.builder().blockTokens(BLOCK_TOKENS).kvBlocks(KV_FLOOR)
                .expertCap(experts).split(settings).conclude())) {
            LiveSplit split = engine.split();
            assertThat(split).isNotNull();
            assertThat(split.tier().capacity()).as("the DEVICE tier is the budget").isEqualTo(budget);
            assertThat(engine.pager().units()).isEqualTo(experts);
            assertThat(engine.kv().slotCount()).isEqualTo(KV_FLOOR);
            split.observer(b -> {
                barriers.add(b);
                if (b.tierUsedBytes() > budget || b.tierCapacityBytes() != budget) {
                    violations.add("tier holds " + b.tierUsedBytes() + " of " + b.tierCapacityBytes() + " bytes at " + b);
                }
                if (b.tierUsedBytes() != b.expertBytes() + b.kvBytes()) {
                    violations.add("tier holds " + b.tierUsedBytes() + " bytes, the pools " + (b.expertBytes() + b.kvBytes())
                            + " at " + b);
                }
            });
            try (ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, new ServeMetrics(),
                    PreemptionMode.SWAP)) {
                LiveSplit.Snapshot start = split.snapshot();
                served.addAll(serve(generator, kvHeavy));
                LiveSplit.Snapshot afterKv = split.snapshot();
                assertThat(afterKv.expertSlotsPerLayer()).as("reused long contexts take expert slots: %s", afterKv)
                        .isLessThan(start.expertSlotsPerLayer());
                assertThat(afterKv.kvBlocks()).as("and give KV their bytes: %s", afterKv)
                        .isGreaterThanOrEqualTo(LONG_PROMPTS * LONG_BLOCKS);
                assertThat(afterKv.costs().recomputeSource()).as("KV misses cost the prefill speed measured while serving")
                        .isEqualTo(MissCosts.Source.MEASURED);
                served.addAll(serve(generator, expertHeavy));
                awaitIdleBarrier(barriers);
                LiveSplit.Snapshot afterExperts = split.snapshot();
                assertThat(afterExperts.expertSlotsPerLayer()).as("short distinct prompts give the experts back: %s", afterExperts)
                        .isGreaterThan(afterKv.expertSlotsPerLayer());
                assertThat(afterExperts.kvBlocks()).as("KV shrinks toward its floor: %s", afterExperts)
                        .isLessThan(afterKv.kvBlocks()).isGreaterThanOrEqualTo(KV_FLOOR);
                assertThat(afterExperts.applied()).isPositive();
                assertThat(afterExperts.tierPeakBytes()).isLessThanOrEqualTo(budget);

                PrometheusText page = new PrometheusText();
                generator.writeEngineMetrics(page); // one page: every family declared once
                String metrics = page.toString();
                assertThat(sample(metrics, "strata_split_bytes{side=\"experts\"}")).isEqualTo(afterExperts.expertBytes());
                assertThat(sample(metrics, "strata_split_bytes{side=\"kv\"}")).isEqualTo(afterExperts.kvBytes());
                assertThat(sample(metrics, "strata_split_budget_bytes")).isEqualTo(budget);
                assertThat(sample(metrics, "strata_split_resizes_total{outcome=\"applied\"}")).isEqualTo(afterExperts.applied());
                assertThat(sample(metrics, "strata_split_last_resize_timestamp_seconds")).isPositive();
                assertThat(metrics).contains("strata_split_marginal_seconds_per_byte{side=\"experts\"}")
                        .contains("strata_split_marginal_seconds_per_byte{side=\"kv\"}")
                        .contains("strata_split_resizes_total{outcome=\"failed_kept_previous\"}");
            }
            engine.kv().checkInvariants();
            engine.pager().checkInvariants();
        }
        assertThat(violations).as("budget checks at every barrier").isEmpty();
        assertThat(barriers.size()).as("a barrier after every step").isGreaterThan(kvHeavy.size() + expertHeavy.size());
        assertThat(served).as("outputs byte-identical to the unsplit engine").containsExactlyElementsOf(reference);
    }

    @Test
    void aSplitNeedsPagedExpertsAndABudgetThatHoldsTheStart() {
        assertThatThrownBy(() -> ServeEngine.Options.builder().kvBlocks(KV_FLOOR).split(1L << 20).conclude())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs paged experts");
        long tooSmall = experts * moeLayers * slotBytes + (KV_FLOOR - 1) * blockBytes;
        assertThatThrownBy(() -> new ServeEngine(dir, ServeEngine.Options.builder().blockTokens(BLOCK_TOKENS).kvBlocks(KV_FLOOR)
                .expertCap(experts).split(tooSmall).conclude()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("split budget " + tooSmall)
                .hasMessageContaining("KV floor of " + KV_FLOOR);
    }

    /** Serves the prompts one after another (greedy); returns each output's text and finish reason. */
    private static List<String> serve(ContinuousBatchingGenerator generator, List<int[]> prompts) throws Exception {
        List<String> out = new ArrayList<>();
        for (int[] prompt : prompts) {
            Collect c = new Collect();
            generator.submit(GenerationRequest.greedy(prompt, MAX_TOKENS), c);
            out.add(c.result.get(60, TimeUnit.SECONDS));
        }
        return out;
    }

    /** Waits until the worker has gone idle after the last request (its idle barrier ran). */
    private static void awaitIdleBarrier(List<LiveSplit.Barrier> barriers) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int seen = -1;
        while (System.nanoTime() < deadline) {
            int n = barriers.size();
            if (n == seen) {
                return;
            }
            seen = n;
            Thread.sleep(200);
        }
    }

    private static double sample(String text, String name) {
        return text.lines().filter(l -> l.startsWith(name + " ")).mapToDouble(l -> Double.parseDouble(l.substring(name.length() + 1)))
                .findFirst().orElseThrow(() -> new AssertionError("no sample " + name + " in\n" + text));
    }

    /** One generation's text and how it ended. */
    /** Collects one request's text and ends with its finish reason, token count and text (shared by this package's tests). */
    static final class Collect implements TextSink {
        final StringBuilder text = new StringBuilder();
        final CompletableFuture<String> result = new CompletableFuture<>();

        @Override
        public void text(String delta) {
            text.append(delta);
        }

        @Override
        public void finished(FinishReason reason, int promptTokens, int completionTokens) {
            result.complete(reason + " " + completionTokens + ": " + text);
        }

        @Override
        public void failed(RuntimeException error) {
            result.completeExceptionally(error);
        }
    }
}
