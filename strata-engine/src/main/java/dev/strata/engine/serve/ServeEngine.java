package dev.strata.engine.serve;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.TieredStore;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvDropRelay;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvManagerConfig;
import dev.strata.cache.kv.OffloadMode;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cache.kv.StridedKvLayout;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.memory.Tier;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.transfer.TransferEngine;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Everything one served model needs, opened from its directory: the mapped weights and tokenizer,
 * a kernel pool, a KV block manager over a block-major arena of {@code kvBlocks} blocks of
 * {@code blockTokens}, and for MoE models with {@code expertCap > 0} an expert pager with that many
 * DEVICE slots per layer over masters in a HOST tier. With {@link Options#hostKvBytes} (and
 * optionally a DISK directory) the KV manager copies committed blocks (write-through) into a tiered store of its
 * own (HOST, then DISK); with {@link Options#shared} it publishes committed blocks into a pool that
 * other engine processes read, and loads the blocks they published. Closes what it opened, in
 * reverse order; a shared store is the caller's and stays open.
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
    private final ObjectKey fingerprint; // the model's identity in prefix keys and shared indexes
    private final List<Tier> kvTiers = new ArrayList<>(); // the KV store's tiers, top first; empty without offload
    private final TieredStore kvStore; // null without offload
    private final TransferEngine kvTransfers; // null without offload

    /**
     * How a {@link ServeEngine} runs. Build with {@link #builder()}; immutable; any thread.
     *
     * @param threads      kernel threads, at least 1
     * @param blockTokens  tokens per KV block
     * @param kvBlocks     KV blocks in the DEVICE arena; a sequence can hold at most {@code kvBlocks × blockTokens} tokens
     * @param expertCap    DEVICE expert slots per MoE layer; 0 reads experts from the mapped weights (no pager)
     * @param hostKvBytes  bytes of the HOST tier evicted KV blocks are offloaded into; 0: no offload
     * @param diskKvDir    directory of a DISK tier below HOST (null: none; needs {@code hostKvBytes > 0})
     * @param diskKvBytes  bytes of that DISK tier
     * @param shared       the pool shared with other engine processes (null: none); the caller opens and closes it
     */
    public record Options(int threads, int blockTokens, int kvBlocks, int expertCap, long hostKvBytes, Path diskKvDir,
                          long diskKvBytes, SharedBlockStore shared) {
        /** @throws IllegalArgumentException naming every value out of range */
        public Options {
            List<String> problems = new ArrayList<>();
            if (threads < 1) {
                problems.add("threads " + threads + " must be at least 1");
            }
            if (blockTokens < 1) {
                problems.add("block tokens " + blockTokens + " must be at least 1");
            }
            if (kvBlocks < 1) {
                problems.add("KV blocks " + kvBlocks + " must be at least 1");
            }
            if ((long) kvBlocks * blockTokens > Integer.MAX_VALUE) {
                problems.add("KV blocks " + kvBlocks + " × block tokens " + blockTokens + " is too many tokens");
            }
            if (expertCap < 0) {
                problems.add("expert cap " + expertCap + " must be at least 0");
            }
            if (hostKvBytes < 0) {
                problems.add("host KV bytes " + hostKvBytes + " must be at least 0");
            }
            if (diskKvDir != null && hostKvBytes == 0) {
                problems.add("a DISK KV tier (" + diskKvDir + ") needs a HOST KV tier above it (host KV bytes is 0)");
            }
            if (diskKvDir != null && diskKvBytes <= 0) {
                problems.add("disk KV bytes " + diskKvBytes + " must be positive with a DISK KV tier");
            }
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("serve engine: " + String.join("; ", problems));
            }
        }

        public static Builder builder() {
            return new Builder();
        }

        /** Collects options; defaults: 1 thread, 256 blocks of 16 tokens, no pager, no offload, no pool. Not thread-safe. */
        public static final class Builder {
            private int threads = 1;
            private int blockTokens = 16;
            private int kvBlocks = 256;
            private int expertCap;
            private long hostKvBytes;
            private Path diskKvDir;
            private long diskKvBytes;
            private SharedBlockStore shared;

            private Builder() {
            }

            public Builder threads(int n) {
                threads = n;
                return this;
            }

            public Builder blockTokens(int n) {
                blockTokens = n;
                return this;
            }

            public Builder kvBlocks(int n) {
                kvBlocks = n;
                return this;
            }

            public Builder expertCap(int n) {
                expertCap = n;
                return this;
            }

            /** A HOST tier of {@code bytes} that evicted KV blocks are offloaded into (0: none). */
            public Builder hostKv(long bytes) {
                hostKvBytes = bytes;
                return this;
            }

            /** A DISK tier of {@code bytes} in {@code dir} below the HOST KV tier (its files are removed at close). */
            public Builder diskKv(Path dir, long bytes) {
                diskKvDir = dir;
                diskKvBytes = bytes;
                return this;
            }

            /** The pool shared with other engine processes (its index must hold this model's fingerprint). */
            public Builder shared(SharedBlockStore store) {
                shared = store;
                return this;
            }

            /** @throws IllegalArgumentException naming every value out of range */
            public Options conclude() {
                return new Options(threads, blockTokens, kvBlocks, expertCap, hostKvBytes, diskKvDir, diskKvBytes, shared);
            }
        }
    }

    /**
     * @param dir         a model directory ({@code config.json}, safetensors, {@code tokenizer.json})
     * @param threads     kernel threads, at least 1
     * @param blockTokens tokens per KV block
     * @param kvBlocks    KV blocks in the arena; a sequence can hold at most {@code kvBlocks × blockTokens} tokens
     * @param expertCap   DEVICE expert slots per MoE layer; 0 reads experts from the mapped weights (no pager)
     */
    public ServeEngine(Path dir, int threads, int blockTokens, int kvBlocks, int expertCap) {
        this(dir, Options.builder().threads(threads).blockTokens(blockTokens).kvBlocks(kvBlocks).expertCap(expertCap).conclude());
    }

    /** Opens the model in {@code dir} and everything {@code options} ask for. */
    public ServeEngine(Path dir, Options options) {
        model = ModelDirectory.open(dir);
        ModelConfig c = model.config();
        int expertCap = options.expertCap();
        if (expertCap > 0 && c.moe() && expertCap < c.numExpertsPerTok()) {
            model.close();
            throw new IllegalArgumentException("expert cap " + expertCap + " is below the model's experts per token "
                    + c.numExpertsPerTok());
        }
        pool = new KernelPool(options.threads());
        KvGeometry g = ModelRunner.kvGeometry(c, options.blockTokens());
        MemorySegment kvArena = arena.allocate(StridedKvLayout.blockMajorBytes(g, options.kvBlocks()), 64);
        StridedKvLayout layout = StridedKvLayout.blockMajor(g, options.kvBlocks(), kvArena);
        fingerprint = fingerprint(dir, g);
        PrefixHasher hasher = new PrefixHasher(PrefixHashContext.of(fingerprint, g));
        KvBlockManager.Builder kvb = KvBlockManager.builder(layout, hasher);
        TieredStore store = null;
        TransferEngine transfers = null;
        try {
            if (options.hostKvBytes() > 0) {
                KvDropRelay relay = new KvDropRelay();
                TieredStore.Builder sb = TieredStore.builder().dropListener(relay);
                HostTier kvHost = HostTier.create("kv-host", options.hostKvBytes());
                kvTiers.add(kvHost);
                sb.tier(kvHost, 1.0, 0.9, PolicyKind.PRIORITY_LRU);
                if (options.diskKvDir() != null) {
                    DiskTier kvDisk = DiskTier.open(DiskTierOptions.in(options.diskKvDir(), options.diskKvBytes()).name("kv-disk")
                            .deleteOnClose(true));
                    kvTiers.add(kvDisk);
                    sb.tier(kvDisk, 1.0, 0.9, PolicyKind.PRIORITY_LRU);
                }
                store = sb.build();
                long staging = Math.max(1L << 20, 8 * g.bytesPerBlock());
                transfers = new TransferEngine(TransferEngine.Settings.defaults().withStagingBytes(staging));
                kvb.store(store, transfers, relay);
                // write-through: a block's copy starts at commit, so evicting it later frees its slot at once
                kvb.config(KvManagerConfig.defaults().offload(OffloadMode.WRITE_THROUGH));
            }
            if (options.shared() != null) {
                kvb.shared(options.shared());
            }
        } catch (RuntimeException | Error e) {
            closeStore(store, transfers, kvTiers);
            pool.close();
            arena.close();
            model.close();
            throw e;
        }
        kvStore = store;
        kvTransfers = transfers;
        kv = kvb.build();
        capacityTokens = options.kvBlocks() * options.blockTokens();
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

    /**
     * The fingerprint the engine serving the model in {@code dir} with blocks of {@code blockTokens}
     * keys its KV blocks with: a shared pool's index must hold it ({@code strata node --model-fingerprint}).
     * Reads only {@code config.json}.
     */
    public static ObjectKey fingerprint(Path dir, int blockTokens) {
        return fingerprint(dir, ModelRunner.kvGeometry(ModelConfig.read(dir), blockTokens));
    }

    private static ObjectKey fingerprint(Path dir, KvGeometry g) {
        Path name = dir.toAbsolutePath().normalize().getFileName();
        return ModelFingerprint.of(name == null ? "model" : name.toString(), g);
    }

    /** The model fingerprint in this engine's prefix keys. */
    public ObjectKey fingerprint() {
        return fingerprint;
    }

    /** The tiers evicted KV blocks are offloaded into, top first (empty without offload). */
    public List<Tier> kvTiers() {
        return List.copyOf(kvTiers);
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
        closeStore(kvStore, kvTransfers, kvTiers);
        pool.close();
        arena.close();
        model.close();
    }

    private static void closeStore(TieredStore store, TransferEngine transfers, List<Tier> tiers) {
        if (store != null) {
            store.close();
        }
        if (transfers != null) {
            transfers.close();
        }
        for (int i = tiers.size() - 1; i >= 0; i--) {
            tiers.get(i).close();
        }
    }
}
