package dev.strata.bench.engine;

import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvManagerConfig;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cache.kv.StridedKvLayout;
import dev.strata.cache.ObjectKey;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelDirectory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

/**
 * One engine instance as the benchmark drives it: its own block-major KV arena, KV block manager
 * (optionally over a shared pool) and {@link ModelRunner} (optionally with an expert pager), over
 * a model directory and kernels it does not own. Several instances may share one model mapping:
 * two serving processes map the same files read-only.
 *
 * <p>Threads: one thread drives an instance (the runner's and manager's thread); close it on that
 * thread after its sequences are closed.
 */
final class EngineInstance implements AutoCloseable {
    private final Arena arena = Arena.ofShared(); // the KV arena: kvBlocks × bytesPerBlock
    private final KvBlockManager kv;
    private final ModelRunner runner;

    /**
     * @param model       the model (not closed here)
     * @param kernels     kernels on their pool (not closed here)
     * @param blockTokens tokens per KV block
     * @param kvBlocks    KV block slots of the instance
     * @param shared      the cross-instance block pool, or null
     * @param pager       the expert pager, or null (experts read from the model's weights)
     */
    EngineInstance(ModelDirectory model, Kernels kernels, int blockTokens, int kvBlocks, SharedBlockStore shared,
            ExpertPager pager) {
        this(model, kernels, blockTokens, kvBlocks, shared, pager, KvManagerConfig.defaults());
    }

    /** As above, with the KV manager's {@code settings} (e.g. {@link KvManagerConfig#recomputeWhenFaster(boolean)}). */
    EngineInstance(ModelDirectory model, Kernels kernels, int blockTokens, int kvBlocks, SharedBlockStore shared,
            ExpertPager pager, KvManagerConfig settings) {
        KvGeometry g = ModelRunner.kvGeometry(model.config(), blockTokens);
        MemorySegment kvArena = arena.allocate(StridedKvLayout.blockMajorBytes(g, kvBlocks), 4096);
        kvArena.fill((byte) 0); // pre-touch: first touches are not what a TTFT measures
        StridedKvLayout layout = StridedKvLayout.blockMajor(g, kvBlocks, kvArena);
        KvBlockManager.Builder b = KvBlockManager.builder(layout, new PrefixHasher(PrefixHashContext.of(fingerprint(model, g), g)));
        if (shared != null) {
            b.shared(shared);
        }
        kv = b.config(settings).build();
        runner = new ModelRunner(model.weights(), kernels, kv, kvArena, pager);
    }

    /** The fingerprint every instance of this model and KV geometry shares (the pool index checks it). */
    static ObjectKey fingerprint(ModelDirectory model, KvGeometry g) {
        String name = model.dir().toAbsolutePath().normalize().getFileName().toString();
        return ModelFingerprint.of(name, g);
    }

    ModelRunner runner() {
        return runner;
    }

    KvBlockManager kv() {
        return kv;
    }

    /** Waits until the manager's background work (publication in the pool) has finished. */
    void awaitIdle() {
        if (!kv.awaitIdle(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("KV manager still busy after 60 s (publication into the pool stuck?)");
        }
    }

    /** Greedy choice: the index of the largest logit (the lower index on ties). */
    static int argmax(float[] logits) {
        int best = 0;
        for (int i = 1; i < logits.length; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        return best;
    }

    @Override
    public void close() {
        kv.close();
        arena.close();
    }
}
