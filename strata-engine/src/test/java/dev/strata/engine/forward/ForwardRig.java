package dev.strata.engine.forward;

import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.SlotScope;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.StridedKvLayout;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.transfer.TransferEngine;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * An engine over one model directory for tests: a kernel pool of {@code threads}, a KV manager over
 * a block-major arena of {@code slots} blocks of {@code blockTokens}, and (for MoE models, when
 * {@code slotsPerLayer > 0}) an expert pager over masters in a HOST tier. Closes what it opened.
 */
final class ForwardRig implements AutoCloseable {
    final ModelDirectory model;
    final KernelPool pool;
    final Arena arena = Arena.ofShared();
    final KvBlockManager kv;
    final HostTier host;
    final DeviceTier device;
    final ExpertMasters masters;
    final ExpertPager pager;
    final DiskTier disk; // null unless the masters are on DISK
    final TransferEngine transfers; // null unless the masters are on DISK
    final ModelRunner runner;

    ForwardRig(Path dir, int threads, int blockTokens, int slots, int slotsPerLayer, SlotScope scope) {
        this(dir, threads, blockTokens, slots, slotsPerLayer, scope, null);
    }

    /**
     * With {@code diskDir} not null the expert masters live in a DISK tier there (direct I/O) and
     * misses arrive through a transfer engine, in flight while resident experts run.
     */
    ForwardRig(Path dir, int threads, int blockTokens, int slots, int slotsPerLayer, SlotScope scope, Path diskDir) {
        model = ModelDirectory.open(dir);
        pool = new KernelPool(threads);
        KvGeometry g = ModelRunner.kvGeometry(model.config(), blockTokens);
        MemorySegment kvArena = arena.allocate(StridedKvLayout.blockMajorBytes(g, slots), 64);
        StridedKvLayout layout = StridedKvLayout.blockMajor(g, slots, kvArena);
        PrefixHasher hasher = new PrefixHasher(PrefixHashContext.of(ModelFingerprint.of(dir.getFileName().toString(), g), g));
        kv = KvBlockManager.builder(layout, hasher).build();
        if (slotsPerLayer > 0 && model.config().moe()) {
            host = HostTier.create("host", 64L << 20);
            device = DeviceTier.cpu("device", 64L << 20);
            disk = diskDir == null ? null : DiskTier.open(DiskTierOptions.in(diskDir, 64L << 20).name("disk"));
            transfers = diskDir == null ? null : new TransferEngine();
            masters = ModelRunner.loadMasters(model.weights(), disk == null ? host : disk);
            pager = ExpertPager.builder(masters, device).topK(model.config().numExpertsPerTok()).slotsPerLayer(slotsPerLayer)
                    .scope(scope).transferEngine(transfers).build();
        } else {
            disk = null;
            transfers = null;
            host = null;
            device = null;
            masters = null;
            pager = null;
        }
        runner = new ModelRunner(model.weights(), new Kernels(pool), kv, kvArena, pager);
    }

    /** Prefill of {@code prompt} then {@code steps} greedy decode steps: the logits after the prompt and after each step. */
    Generation greedy(int[] prompt, int steps) {
        try (ModelRunner.Sequence s = runner.newSequence()) {
            List<float[]> logits = new ArrayList<>();
            int[] tokens = new int[steps];
            float[] last = s.prefill(prompt, false)[0];
            logits.add(last.clone()); // the sequence's array, overwritten by its next step
            for (int i = 0; i < steps; i++) {
                tokens[i] = argmax(last);
                last = s.decode(tokens[i]);
                logits.add(last.clone());
            }
            if (pager != null) {
                pager.checkInvariants();
            }
            kv.checkInvariants();
            return new Generation(tokens, logits, s.reusedTokens());
        }
    }

    record Generation(int[] tokens, List<float[]> logits, int reusedTokens) {
    }

    static int argmax(float[] x) {
        int best = 0;
        for (int i = 1; i < x.length; i++) {
            if (x[i] > x[best]) {
                best = i;
            }
        }
        return best;
    }

    static int argmax(double[] x) {
        int best = 0;
        for (int i = 1; i < x.length; i++) {
            if (x[i] > x[best]) {
                best = i;
            }
        }
        return best;
    }

    @Override
    public void close() {
        if (pager != null) {
            pager.close();
            masters.close();
            device.close();
            host.close();
            if (disk != null) {
                transfers.close();
                disk.close();
            }
        }
        kv.close();
        pool.close();
        arena.close();
        model.close();
    }
}
