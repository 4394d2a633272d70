package dev.strata.engine.serve;

import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.TieredStore;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.ExpertRebalancer;
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
import dev.strata.cache.peer.ConsumerLimits;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerTier;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.memory.Sizes;
import dev.strata.memory.Tier;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.metrics.PrometheusText;
import dev.strata.memory.transfer.TransferEngine;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Everything one served model needs, opened from its directory: the mapped weights and tokenizer,
 * a kernel pool, a KV block manager over a block-major arena of {@code kvBlocks} blocks of
 * {@code blockTokens}, and for MoE models with {@code expertCap > 0} an expert pager with that many
 * DEVICE slots per layer over masters in a HOST tier. With {@link Options#hostKvBytes} (and
 * optionally a DISK directory) the KV manager copies committed blocks (write-through) into a tiered store of its
 * own (HOST, then DISK); with {@link Options#shared} it publishes committed blocks into a pool that
 * other engine processes read, and loads the blocks they published. With {@link Options#peers} the
 * engine borrows memory lent by peers through that {@link PeerClient}: a PEER tier above the HOST
 * KV tier ({@link Options#peerKvBytes}; blocks LOSSY by default, so a revoked copy is recomputed,
 * or BACKED, written through to HOST), and for a paged MoE model an {@link ExpertRebalancer} that
 * keeps the most-routed experts on peers ({@link Options#peerExpertBytes}, a pass every
 * {@link Options#rebalancePeriod}) so that pager misses fetch them from there. Closes what it
 * opened, in reverse order; a shared store and a peer client are the caller's and stay open.
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
    private final PeerClient peers; // the caller's; null without peers
    private final PeerTier kvPeer; // the PEER KV tier (also in kvTiers); null without one
    private final ExpertRebalancer rebalancer; // null without expert copies on peers

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
     * @param peers        the client that borrows memory lent by peers (null: none); the caller opens and closes it
     * @param peerKvBytes  bytes of the PEER KV tier above HOST (0: none; needs {@code peers} and {@code hostKvBytes > 0})
     * @param peerKvDurability durability of offloaded KV blocks: LOSSY (a revoked PEER copy is a miss) or
     *                     BACKED (every block also written to HOST)
     * @param peerExpertBytes bytes of expert copies kept on peers (0: none; used with {@code peers} and a paged MoE model)
     * @param rebalancePeriod time between the expert rebalancer's passes
     */
    public record Options(int threads, int blockTokens, int kvBlocks, int expertCap, long hostKvBytes, Path diskKvDir,
                          long diskKvBytes, SharedBlockStore shared, PeerClient peers, long peerKvBytes,
                          Durability peerKvDurability, long peerExpertBytes, Duration rebalancePeriod) {
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
            if (peerKvBytes < 0 || peerExpertBytes < 0) {
                problems.add("peer KV bytes " + peerKvBytes + " and peer expert bytes " + peerExpertBytes + " must be at least 0");
            }
            if (peers == null && (peerKvBytes > 0 || peerExpertBytes > 0)) {
                problems.add("peer KV bytes " + peerKvBytes + " and peer expert bytes " + peerExpertBytes + " need a peer client");
            }
            if (peerKvBytes > 0 && hostKvBytes == 0) {
                problems.add("a PEER KV tier (" + peerKvBytes + " bytes) needs a HOST KV tier below it (host KV bytes is 0)");
            }
            if (peerKvDurability == null) {
                problems.add("peer KV durability must be LOSSY or BACKED, not null");
            }
            if (rebalancePeriod == null || rebalancePeriod.isNegative() || rebalancePeriod.isZero()) {
                problems.add("rebalance period " + rebalancePeriod + " must be positive");
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
            private PeerClient peers;
            private long peerKvBytes;
            private Durability peerKvDurability = Durability.LOSSY;
            private long peerExpertBytes;
            private Duration rebalancePeriod = Duration.ofMillis(200);

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

            /**
             * Borrows from peers through {@code client}: {@code kvBytes} for a PEER KV tier above HOST and
             * {@code expertBytes} for expert copies (either may be 0).
             */
            public Builder peers(PeerClient client, long kvBytes, long expertBytes) {
                peers = client;
                peerKvBytes = kvBytes;
                peerExpertBytes = expertBytes;
                return this;
            }

            /** LOSSY (default): KV blocks on PEER only; BACKED: written through to HOST as well. */
            public Builder peerKvDurability(Durability durability) {
                peerKvDurability = durability;
                return this;
            }

            /** Time between the expert rebalancer's passes (default 200 ms). */
            public Builder rebalancePeriod(Duration period) {
                rebalancePeriod = period;
                return this;
            }

            /** @throws IllegalArgumentException naming every value out of range */
            public Options conclude() {
                return new Options(threads, blockTokens, kvBlocks, expertCap, hostKvBytes, diskKvDir, diskKvBytes, shared, peers,
                        peerKvBytes, peerKvDurability, peerExpertBytes, rebalancePeriod);
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
        PeerTier peerTier = null;
        try {
            if (options.hostKvBytes() > 0) {
                KvDropRelay relay = new KvDropRelay();
                TieredStore.Builder sb = TieredStore.builder().dropListener(relay);
                if (options.peerKvBytes() > 0) {
                    long chunk = Math.min(options.peerKvBytes(), PeerTier.DEFAULT_CHUNK) / PeerTier.ALIGNMENT * PeerTier.ALIGNMENT;
                    if (chunk < g.bytesPerBlock()) {
                        throw new IllegalArgumentException("peer KV bytes " + options.peerKvBytes() + " hold no KV block of "
                                + g.bytesPerBlock() + " bytes");
                    }
                    PeerClient.ConsumerView view = options.peers().forConsumer("kv", ConsumerLimits.bytes(options.peerKvBytes()));
                    peerTier = new PeerTier("kv-peer", view, options.peerKvBytes(), chunk, LeaseHints.of(options.peerKvDurability()));
                    kvTiers.add(peerTier);
                    sb.tier(peerTier, 0.95, 0.85, PolicyKind.PRIORITY_LRU);
                }
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
                kvb.config(KvManagerConfig.defaults().offload(OffloadMode.WRITE_THROUGH).offloadDurability(options.peerKvDurability()));
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
        kvPeer = peerTier;
        peers = options.peers();
        kv = kvb.build();
        capacityTokens = options.kvBlocks() * options.blockTokens();
        if (expertCap > 0 && c.moe()) {
            long moeLayers = ModelRunner.moeLayerCount(c);
            long expertBytes = ModelRunner.expertLayout(c).bytes();
            host = HostTier.create("host", moeLayers * c.numExperts() * expertBytes + (1L << 20));
            device = DeviceTier.cpu("device", moeLayers * expertCap * expertBytes + (1L << 20));
            masters = ModelRunner.loadMasters(model.weights(), host);
            ExpertPager.Builder pb = ExpertPager.builder(masters, device).topK(c.numExpertsPerTok()).slotsPerLayer(expertCap);
            if (options.peers() != null && options.peerExpertBytes() > 0) {
                long image = Sizes.alignUp(expertBytes, PeerTier.ALIGNMENT);
                if (options.peerExpertBytes() < image) {
                    throw new IllegalArgumentException("peer expert bytes " + options.peerExpertBytes() + " hold no expert of "
                            + expertBytes + " bytes");
                }
                long chunk = Math.max(1, Math.min(PeerTier.DEFAULT_CHUNK, options.peerExpertBytes()) / image) * image;
                rebalancer = ExpertRebalancer.builder(masters,
                                options.peers().forConsumer("experts", ConsumerLimits.bytes(options.peerExpertBytes())))
                        .name("expert-peer").maxBytes(options.peerExpertBytes()).chunkBytes(chunk).build();
                pb.peerSource(rebalancer);
            } else {
                rebalancer = null;
            }
            pager = pb.build();
            if (rebalancer != null) {
                rebalancer.follow(pager).start(options.rebalancePeriod());
            }
        } else {
            host = null;
            device = null;
            masters = null;
            pager = null;
            rebalancer = null;
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

    /** The PEER KV tier, or null without one. */
    public PeerTier kvPeerTier() {
        return kvPeer;
    }

    /** The expert rebalancer placing experts on peers, or null without one. */
    public ExpertRebalancer rebalancer() {
        return rebalancer;
    }

    /**
     * The peer families in the Prometheus text format: the peer client's {@code strata_peer_*},
     * the PEER tiers' {@code strata_peer_tier_*} (labelled {@code tier}) and the rebalancer's
     * {@code strata_expert_peer_*}; empty without peers. Any thread.
     */
    public String peerMetrics() {
        PrometheusText out = new PrometheusText();
        writePeerMetrics(out);
        return out.toString();
    }

    /** Appends the families of {@link #peerMetrics()} to {@code out}; nothing without peers. Any thread. */
    public void writePeerMetrics(PrometheusText out) {
        if (peers == null) {
            return;
        }
        peers.stats().writeTo(out);
        List<PeerTier> tiers = new ArrayList<>();
        if (kvPeer != null) {
            tiers.add(kvPeer);
        }
        if (rebalancer != null) {
            tiers.add(rebalancer.tier());
        }
        dev.strata.cache.peer.PeerTierMetrics.writeTo(out, tiers);
        if (rebalancer != null) {
            rebalancer.stats().writeTo(out);
        }
    }

    /** The most tokens (prompt plus generated) one sequence can hold. */
    public int capacityTokens() {
        return capacityTokens;
    }

    @Override
    public void close() {
        if (rebalancer != null) {
            rebalancer.close();
        }
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
