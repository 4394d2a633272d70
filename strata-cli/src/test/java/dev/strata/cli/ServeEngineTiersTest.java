package dev.strata.cli;

import dev.strata.engine.serve.ServeEngine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.kv.BlockLocation;
import dev.strata.cache.kv.KvManagerStats;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.node.index.BlockIndexConfig;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.index.PoolSharedBlockStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ServeEngine} with KV offload tiers and a shared pool computes exactly what it computes
 * without them: conversations whose turns share prefixes run through an engine with a small DEVICE
 * cache over a HOST tier and a pool (and through a second engine on the same pool, which loads what
 * the first wrote), and every greedy token equals the unpaged engine's.
 */
class ServeEngineTiersTest {
    private static final int BLOCK_TOKENS = 8;

    @TempDir
    static Path dir;
    static Path model;

    @BeforeAll
    static void synthesise() throws Exception {
        model = dir.resolve("tiers-moe");
        SynthSpec spec = new SynthSpec(ModelFamily.QWEN3_MOE, 2, 6, 2, 48, 40, 24, 6, 2, 8, 400, DType.BF16, 77, 1, 3, false);
        ModelSynthesizer.write(spec, model, (d, t, b, tb) -> { });
    }

    /** Greedy decoding of {@code prompt} for {@code n} tokens, driven on this thread as the generator's worker would. */
    private static int[] greedy(ServeEngine engine, int[] prompt, int n) {
        engine.kv().awaitIdle(30, TimeUnit.SECONDS);
        int[] out = new int[n];
        try (ModelRunner.Sequence seq = engine.runner().newSequence()) {
            float[] logits = seq.prefill(prompt, false)[0];
            for (int i = 0; i < n; i++) {
                int best = 0;
                for (int v = 1; v < logits.length; v++) {
                    if (logits[v] > logits[best]) {
                        best = v;
                    }
                }
                out[i] = best;
                if (i + 1 < n) {
                    logits = seq.decode(best);
                }
            }
        }
        return out;
    }

    /** Conversations: a shared system prefix, then turns that each extend the previous prompt by its answer and a new message. */
    private static List<int[]> conversation(ServeEngine reference, long seed, int sessions, int turns) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] system = r.ints(37, 1, 390).toArray(); // odd length: the shared prefix ends mid-block
        List<int[]> prompts = new ArrayList<>();
        List<int[]> histories = new ArrayList<>();
        for (int s = 0; s < sessions; s++) {
            histories.add(system);
        }
        for (int t = 0; t < turns; t++) {
            for (int s = 0; s < sessions; s++) {
                int[] user = r.ints(5 + r.nextInt(13), 1, 390).toArray();
                int[] prompt = concat(histories.get(s), user);
                prompts.add(prompt);
                histories.set(s, concat(prompt, greedy(reference, prompt, 6)));
            }
        }
        return prompts;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    @Test
    void hostOffloadAndASharedPoolReturnTheSameGreedyTokens() throws Exception {
        Path poolFile = Path.of("/dev/shm", "strata-serve-tiers-" + ProcessHandle.current().pid() + ".pool");
        long capacity = 16L << 20;
        PoolConfig poolConfig = PoolConfig.builder("serve-tiers").path(poolFile).capacity(capacity).chunkSize(4096)
                .rootRegionSize(PoolBlockIndex.suggestedRegionSize(capacity, 4096, PoolConfig.DEFAULT_PROCESS_SLOTS)).conclude();
        try (ServeEngine reference = new ServeEngine(model, ServeEngine.Options.builder().blockTokens(BLOCK_TOKENS).kvBlocks(128).conclude());
             PoolTier pool = PoolTier.open(poolConfig);
             PoolBlockIndex index = PoolBlockIndex.open(pool, BlockIndexConfig.builder(PrefixHasher.VERSION,
                     ServeEngine.fingerprint(model, BLOCK_TOKENS)).conclude())) {
            assertThat(reference.kvTiers()).isEmpty();
            List<int[]> prompts = conversation(reference, 5, 3, 3);
            int[][] expected = new int[prompts.size()][];
            for (int i = 0; i < prompts.size(); i++) {
                expected[i] = greedy(reference, prompts.get(i), 6);
            }
            PoolSharedBlockStore shared = new PoolSharedBlockStore(index);
            ServeEngine.Options small = ServeEngine.Options.builder().blockTokens(BLOCK_TOKENS).kvBlocks(16).expertCap(3)
                    .hostKv(4L << 20).shared(shared).conclude();
            try (ServeEngine a = new ServeEngine(model, small);
                 ServeEngine b = new ServeEngine(model, ServeEngine.Options.builder().blockTokens(BLOCK_TOKENS).kvBlocks(16)
                         .hostKv(4L << 20).diskKv(dir.resolve("kv-disk"), 8L << 20).shared(shared).conclude())) {
                assertThat(a.fingerprint()).isEqualTo(reference.fingerprint());
                assertThat(b.kvTiers()).hasSize(2);
                for (int i = 0; i < prompts.size(); i++) {
                    ServeEngine engine = i % 2 == 0 ? a : b; // turns alternate, as between two instances
                    assertThat(greedy(engine, prompts.get(i), 6)).as("prompt %d on engine %s", i, i % 2 == 0 ? "a" : "b")
                            .containsExactly(expected[i]);
                    engine.kv().checkInvariants();
                }
                KvManagerStats sa = a.kv().stats();
                KvManagerStats sb = b.kv().stats();
                assertThat(sa.hits(BlockLocation.HOST) + sb.hits(BlockLocation.HOST)).as("blocks reloaded from HOST").isPositive();
                assertThat(sa.hits(BlockLocation.SHARED) + sb.hits(BlockLocation.SHARED)).as("blocks loaded from the pool").isPositive();
                assertThat(a.pager().stats().misses()).as("expert fetches under a cap of 3 of 6").isPositive();
            }
        } finally {
            Files.deleteIfExists(poolFile);
        }
    }

    @Test
    void optionsNameEveryBadValue() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ServeEngine.Options.builder().threads(0).kvBlocks(0).hostKv(-1)
                        .expertCap(-2).conclude())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("threads 0").hasMessageContaining("KV blocks 0").hasMessageContaining("host KV bytes -1")
                .hasMessageContaining("expert cap -2");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ServeEngine.Options.builder().diskKv(dir, 1L << 20).conclude())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs a HOST KV tier");
    }
}
