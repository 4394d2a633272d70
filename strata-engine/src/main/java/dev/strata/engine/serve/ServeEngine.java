package dev.strata.engine.serve;

import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.StridedKvLayout;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Everything one served model needs, opened from its directory: the mapped weights and tokenizer,
 * a kernel pool, a KV block manager over a block-major arena of {@code kvBlocks} blocks of
 * {@code blockTokens}, and for MoE models with {@code expertCap > 0} an expert pager with that many
 * DEVICE slots per layer over masters in a HOST tier. Closes what it opened, in reverse order.
 *
 * <p>Threads: the runner, the KV manager (its {@code stats()} included) and the pager are driven by
 * one thread, the generator's worker; {@code pager().stats()} and the getters may be read from any
 * thread. Close after the generator has stopped.
 */
public final class ServeEngine implements AutoCloseable {
    private final ModelDirectory model;
    private final KernelPool pool;
    private final Arena arena = Arena.ofShared(); // KV arena: kvBlocks × bytesPerBlock
    private final KvBlockManager kv;
    private final HostTier host;
    private final DeviceTier device;
    private final ExpertMasters masters;
    private final ExpertPager pager;
    private final ModelRunner runner;
    private final int capacityTokens; // kvBlocks × blockTokens

    /**
     * @param dir         a model directory ({@code config.json}, safetensors, {@code tokenizer.json})
     * @param threads     kernel threads, at least 1
     * @param blockTokens tokens per KV block
     * @param kvBlocks    KV blocks in the arena; a sequence can hold at most {@code kvBlocks × blockTokens} tokens
     * @param expertCap   DEVICE expert slots per MoE layer; 0 reads experts from the mapped weights (no pager)
     */
    public ServeEngine(Path dir, int threads, int blockTokens, int kvBlocks, int expertCap) {
        if (threads < 1 || blockTokens < 1 || kvBlocks < 1 || expertCap < 0) {
            throw new IllegalArgumentException("threads " + threads + ", block tokens " + blockTokens + " and KV blocks "
                    + kvBlocks + " must be positive and expert cap " + expertCap + " at least 0");
        }
        model = ModelDirectory.open(dir);
        ModelConfig c = model.config();
        if (expertCap > 0 && c.moe() && expertCap < c.numExpertsPerTok()) {
            model.close();
            throw new IllegalArgumentException("expert cap " + expertCap + " is below the model's experts per token "
                    + c.numExpertsPerTok());
        }
        pool = new KernelPool(threads);
        KvGeometry g = ModelRunner.kvGeometry(c, blockTokens);
        MemorySegment kvArena = arena.allocate(StridedKvLayout.blockMajorBytes(g, kvBlocks), 64);
        StridedKvLayout layout = StridedKvLayout.blockMajor(g, kvBlocks, kvArena);
        Path name = dir.toAbsolutePath().normalize().getFileName();
        PrefixHasher hasher = new PrefixHasher(PrefixHashContext.of(ModelFingerprint.of(name == null ? "model" : name.toString(), g), g));
        kv = KvBlockManager.builder(layout, hasher).build();
        capacityTokens = kvBlocks * blockTokens;
        if (expertCap > 0 && c.moe()) {
            long moeLayers = Arrays.stream(ModelRunner.moeLayers(c)).filter(i -> i >= 0).count();
            long expertBytes = ModelRunner.expertLayout(c).bytes();
            host = HostTier.create("host", moeLayers * c.numExperts() * expertBytes + (1L << 20));
            device = DeviceTier.cpu("device", moeLayers * expertCap * expertBytes + (1L << 20));
            masters = ModelRunner.loadMasters(model.weights(), host);
            pager = ExpertPager.builder(masters, device).topK(c.numExpertsPerTok()).slotsPerLayer(expertCap).build();
        } else {
            host = null;
            device = null;
            masters = null;
            pager = null;
        }
        runner = new ModelRunner(model.weights(), new Kernels(pool), kv, kvArena, pager);
    }

    public ModelDirectory model() {
        return model;
    }

    public ModelRunner runner() {
        return runner;
    }

    public KvBlockManager kv() {
        return kv;
    }

    /** The expert pager, or null when experts are read from the mapped weights. */
    public ExpertPager pager() {
        return pager;
    }

    /** The most tokens (prompt plus generated) one sequence can hold. */
    public int capacityTokens() {
        return capacityTokens;
    }

    @Override
    public void close() {
        if (pager != null) {
            pager.close();
            masters.close();
            device.close();
            host.close();
        }
        kv.close();
        pool.close();
        arena.close();
        model.close();
    }
}
