package dev.strata.engine.serve;

import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.ServingMemory;
import dev.strata.cache.TieredMemory;
import dev.strata.cache.config.ConfigException;
import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.ExpertRebalancer;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cache.kv.SharedPoolHealth;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerTier;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.cache.split.LiveSplit;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.engine.model.ModelWeights;
import dev.strata.engine.model.WeightLoad;
import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.metrics.PrometheusText;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Everything one served model needs, opened from its directory: the weights (copied into private
 * memory, or mapped: {@link Options#weightLoad}) and tokenizer,
 * a kernel pool, a KV block manager over a block-major arena of {@code kvBlocks} blocks of
 * {@code blockTokens} (its slots evicted by {@link Options#kvPolicy}), and for MoE models with
 * {@code expertCap > 0} an expert pager with that many
 * DEVICE slots per layer over masters in a HOST tier. With {@link Options#hostKvBytes} (and
 * optionally a DISK directory) the KV manager copies committed blocks (write-through) into a tiered store of its
 * own (HOST, then DISK); with {@link Options#shared} it publishes committed blocks into a pool that
 * other engine processes read, and loads the blocks they published. With {@link Options#peers} the
 * engine borrows memory lent by peers through that {@link PeerClient}: a PEER tier above the HOST
 * KV tier ({@link Options#peerKvBytes}; blocks LOSSY by default, so a revoked copy is recomputed,
 * or BACKED, written through to HOST), and for a paged MoE model an {@link ExpertRebalancer} that
 * keeps the most-routed experts on peers ({@link Options#peerExpertBytes}, a pass every
 * {@link Options#rebalancePeriod}) so that pager misses fetch them from there. With
 * {@link Options#split} (a MoE model with a pager) one DEVICE tier of the split budget holds both
 * the expert slots and the KV slots (a {@code TierSlotKvLayout} instead of the block-major arena;
 * {@code kvBlocks} is then the KV floor) and a {@link LiveSplit} moves bytes between them at the
 * generator's barriers ({@link #split()}). All of that memory is opened in one place, by
 * {@link ServingMemory} from the model's KV geometry and expert image and the process's one
 * configuration; this class adds the model, the kernels and the forward pass. Closes what it
 * opened, in reverse order; a shared store and a peer client are the caller's and stay open.
 *
 * <p>Threads: the runner, the KV manager (its {@code stats()} included) and the pager are driven by
 * one thread, the generator's worker; {@code pager().stats()} and the getters may be read from any
 * thread. Close after the generator has stopped.
 */
public final class ServeEngine implements AutoCloseable {
    private final ModelDirectory model;
    private final KernelPool pool;
    private final ServingMemory memory; // KV slots and manager, offload tiers, expert masters, slots and pager, the split
    private final ModelRunner runner;
    private final int capacityTokens; // kvBlocks × blockTokens
    private final ObjectKey fingerprint; // the model's identity in prefix keys and shared indexes

    /**
     * How a {@link ServeEngine} runs. Build with {@link #builder()}; immutable; any thread.
     *
     * @param threads      kernel threads, at least 1
     * @param blockTokens  tokens per KV block
     * @param kvBlocks     KV blocks in the DEVICE arena; a sequence can hold at most {@code kvBlocks × blockTokens} tokens
     * @param expertCap    DEVICE expert slots per MoE layer; 0 reads experts from the model's weights (no pager)
     * @param offload      the tiers committed KV blocks are offloaded into (PEER, HOST, DISK of the one
     *                     configuration, opened through {@link TieredMemory}), or null for none
     * @param shared       the pool shared with other engine processes (null: none); the caller opens and closes it
     * @param peers        the client that borrows memory lent by peers (null: none); the caller opens and closes it
     * @param peerExpertBytes bytes of expert copies kept on peers (0: none; used with {@code peers} and a paged MoE model)
     * @param rebalancePeriod time between the expert rebalancer's passes
     * @param split        the live expert/KV split of one DEVICE budget (null: none; needs {@code expertCap > 0}
     *                     and a MoE model); {@code kvBlocks} is then the KV floor and {@code expertCap} the start
     * @param weightLoad   how the model's weights are brought into memory ({@code model.load}): copied (default) or mapped
     * @param expertMastersDir a directory on SSD where the expert masters live (DISK) instead of HOST memory; null: HOST
     * @param kvPolicy     the eviction policy of the KV manager's DEVICE slots ({@code kv.policy})
     * @param kvRecomputeWhenFaster recompute cached KV blocks whose load is slower ({@code kv.recompute-when-faster})
     */
    public record Options(int threads, int blockTokens, int kvBlocks, int expertCap, StrataConfig offload, SharedBlockStore shared,
                          PeerClient peers, long peerExpertBytes, Duration rebalancePeriod, LiveSplit.Settings split,
                          WeightLoad weightLoad, Path expertMastersDir, PolicyKind kvPolicy, boolean kvRecomputeWhenFaster) {
        /** The KV tiers a serving process offloads into; DEVICE and the shared POOL are reached through the KV manager. */
        public static final Set<TierKind> OFFLOAD_TIERS = ServingMemory.OFFLOAD_TIERS;

        /** @throws IllegalArgumentException naming every value out of range */
        public Options {
            List<String> problems = problems(threads, blockTokens, kvBlocks, expertCap, offload, peers, peerExpertBytes, rebalancePeriod,
                    split);
            if (weightLoad == null) {
                problems.add("weight load must be COPY or MAP, not null");
            }
            if (expertMastersDir != null && expertCap == 0) {
                problems.add("expert masters on DISK (" + expertMastersDir + ") need paged experts: an expert cap above 0");
            }
            if (kvPolicy == null) {
                problems.add("KV policy must be one of priority-lru, lru, tiny-lfu, prefix-aware or adaptive-reach, not null");
            }
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("serve engine: " + String.join("; ", problems));
            }
        }

        private static List<String> problems(int threads, int blockTokens, int kvBlocks, int expertCap, StrataConfig offload,
                                             PeerClient peers, long peerExpertBytes, Duration rebalancePeriod,
                                             LiveSplit.Settings split) {
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
            if (offload != null) {
                if (offload.device() != null || offload.pool() != null) {
                    problems.add("KV offload tiers are PEER, HOST and DISK; DEVICE and POOL are reached through the KV manager");
                }
                if (offload.host() == null && (offload.peer() != null || offload.disk() != null)) {
                    problems.add((offload.peer() != null ? "a PEER KV tier (" + offload.peer().capacity() + " bytes)" : "a DISK KV tier ("
                            + offload.disk().directory() + ")") + " needs a HOST KV tier (tiers.host; host KV bytes is 0)");
                }
                if (offload.peer() != null && peers == null) {
                    problems.add("a PEER KV tier of " + offload.peer().capacity() + " bytes needs a peer client");
                }
            }
            if (peerExpertBytes < 0) {
                problems.add("peer expert bytes " + peerExpertBytes + " must be at least 0");
            }
            if (peers == null && peerExpertBytes > 0) {
                problems.add("peer expert bytes " + peerExpertBytes + " need a peer client");
            }
            if (rebalancePeriod == null || rebalancePeriod.isNegative() || rebalancePeriod.isZero()) {
                problems.add("rebalance period " + rebalancePeriod + " must be positive");
            }
            if (split != null && expertCap == 0) {
                problems.add("the expert/KV split of " + split.budgetBytes() + " bytes needs paged experts (expert cap > 0)");
            }
            return problems;
        }

        /** Bytes of the HOST KV tier (0: no offload). */
        public long hostKvBytes() {
            return offload == null || offload.host() == null ? 0 : offload.host().capacity();
        }

        /** Bytes of the PEER KV tier (0: none). */
        public long peerKvBytes() {
            return offload == null || offload.peer() == null ? 0 : offload.peer().capacity();
        }

        /** Durability of KV blocks offloaded to peers: LOSSY (a revoked PEER copy is a miss) or BACKED (also on HOST). */
        public Durability peerKvDurability() {
            return offload == null || offload.peer() == null ? Durability.LOSSY : offload.peer().durability();
        }

        public static Builder builder() {
            return new Builder();
        }

        /**
         * Collects options; defaults: 1 thread, 256 blocks of 16 tokens evicted by {@link PolicyKind#KV_DEFAULT}, no pager,
         * no offload, no pool.
         * The KV tiers come either from the one configuration ({@link #offload(StrataConfig)}) or from
         * the shorthands {@link #hostKv}, {@link #diskKv}, {@link #peers} and {@link #peerKvDurability},
         * which are translated into the same configuration keys. Not thread-safe.
         */
        public static final class Builder {
            private int threads = 1;
            private int blockTokens = 16;
            private int kvBlocks = 256;
            private int expertCap;
            private StrataConfig offload;
            private long hostKvBytes;
            private Path diskKvDir;
            private long diskKvBytes;
            private SharedBlockStore shared;
            private PeerClient peers;
            private long peerKvBytes;
            private Durability peerKvDurability = Durability.LOSSY;
            private long peerExpertBytes;
            private Duration rebalancePeriod = Duration.ofMillis(200);
            private LiveSplit.Settings split;
            private WeightLoad weightLoad = WeightLoad.COPY;
            private Path expertMastersDir; // null: the expert masters in HOST memory
            private PolicyKind kvPolicy = PolicyKind.KV_DEFAULT; // of the KV manager's DEVICE slots
            private boolean kvRecomputeWhenFaster = true; // kv.recompute-when-faster

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

            /** The eviction policy of the KV manager's DEVICE slots ({@code kv.policy}; default {@link PolicyKind#KV_DEFAULT}). */
            public Builder kvPolicy(PolicyKind kind) {
                kvPolicy = kind;
                return this;
            }

            /** Recompute cached KV blocks that load slower than they recompute ({@code kv.recompute-when-faster}; default on). */
            public Builder kvRecomputeWhenFaster(boolean on) {
                kvRecomputeWhenFaster = on;
                return this;
            }

            /**
             * The KV offload tiers of a concluded configuration: its PEER, HOST and DISK tiers with
             * their store settings (its DEVICE and POOL tiers are left to the caller).
             */
            public Builder offload(StrataConfig config) {
                offload = ServingMemory.offloadTiers(config);
                return this;
            }

            /** A HOST tier of {@code bytes} that evicted KV blocks are offloaded into (0: none): {@code tiers.host.capacity}. */
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

            /**
             * Splits one DEVICE tier of {@code budgetBytes} live between expert slots and KV slots, with
             * the serving defaults ({@link LiveSplit.Settings#defaults}); 0: no split.
             */
            public Builder split(long budgetBytes) {
                split = budgetBytes == 0 ? null : LiveSplit.Settings.defaults(budgetBytes);
                return this;
            }

            /** The live expert/KV split with these settings (null: none). */
            public Builder split(LiveSplit.Settings settings) {
                split = settings;
                return this;
            }

            /** How the weights are brought into memory (default COPY: private memory, immune to changes of the files). */
            public Builder weightLoad(WeightLoad load) {
                weightLoad = load;
                return this;
            }

            /** Keeps the expert masters on DISK under {@code dir} instead of HOST memory (null: HOST). */
            public Builder expertMasters(Path dir) {
                expertMastersDir = dir;
                return this;
            }

            /** @throws IllegalArgumentException naming every value out of range */
            public Options conclude() {
                StrataConfig tiers = offload;
                if (tiers == null) {
                    List<String> problems = new ArrayList<>();
                    if (hostKvBytes < 0) {
                        problems.add("host KV bytes " + hostKvBytes + " must be at least 0");
                    }
                    if (diskKvDir != null && hostKvBytes == 0) {
                        problems.add("a DISK KV tier (" + diskKvDir + ") needs a HOST KV tier above it (host KV bytes is 0)");
                    }
                    if (diskKvDir != null && diskKvBytes <= 0) {
                        problems.add("disk KV bytes " + diskKvBytes + " must be positive with a DISK KV tier");
                    }
                    if (peerKvBytes < 0) {
                        problems.add("peer KV bytes " + peerKvBytes + " must be at least 0");
                    }
                    if (peers == null && peerKvBytes > 0) {
                        problems.add("peer KV bytes " + peerKvBytes + " need a peer client");
                    }
                    if (peerKvBytes > 0 && hostKvBytes == 0) {
                        problems.add("a PEER KV tier (" + peerKvBytes + " bytes) needs a HOST KV tier below it (host KV bytes is 0)");
                    }
                    if (peerKvDurability == null) {
                        problems.add("peer KV durability must be LOSSY or BACKED, not null");
                    }
                    if (!problems.isEmpty()) {
                        problems.addAll(problems(threads, blockTokens, kvBlocks, expertCap, null, peers, peerExpertBytes, rebalancePeriod,
                                split));
                        throw new IllegalArgumentException("serve engine: " + String.join("; ", problems));
                    }
                    tiers = hostKvBytes == 0 ? null : shorthandTiers();
                }
                return new Options(threads, blockTokens, kvBlocks, expertCap, tiers, shared, peers, peerExpertBytes, rebalancePeriod, split,
                        weightLoad, expertMastersDir, kvPolicy, kvRecomputeWhenFaster);
            }

            /** The shorthands as configuration keys: PEER (watermarks 0.95/0.85), HOST and DISK (1.0/0.9). */
            private StrataConfig shorthandTiers() {
                List<String> keys = new ArrayList<>();
                List<String> chain = new ArrayList<>();
                if (peers != null && peerKvBytes > 0) {
                    long chunk = Math.max(PeerTier.ALIGNMENT, Math.min(peerKvBytes, PeerTier.DEFAULT_CHUNK) / PeerTier.ALIGNMENT * PeerTier.ALIGNMENT);
                    keys.addAll(List.of("tiers.peer.capacity=" + peerKvBytes, "tiers.peer.chunk=" + chunk,
                            "tiers.peer.durability=" + peerKvDurability.name().toLowerCase(java.util.Locale.ROOT)));
                    chain.add("peer");
                }
                keys.addAll(List.of("tiers.host.capacity=" + hostKvBytes, "store.tiers.host.high-watermark=1.0",
                        "store.tiers.host.low-watermark=0.9"));
                chain.add("host");
                if (diskKvDir != null) {
                    keys.addAll(List.of("tiers.disk.capacity=" + diskKvBytes, "tiers.disk.directory=" + diskKvDir,
                            "tiers.disk.remove-on-close=true", "store.tiers.disk.high-watermark=1.0", "store.tiers.disk.low-watermark=0.9"));
                    chain.add("disk");
                }
                keys.add("store.chain=[" + String.join(",", chain) + "]");
                try {
                    return ConfigLoader.load(keys, null, List.of(), null, List.of()).conclude();
                } catch (ConfigException e) {
                    throw new IllegalArgumentException("serve engine: " + e.getMessage(), e);
                }
            }
        }
    }

    /**
     * @param dir         a model directory ({@code config.json}, safetensors, {@code tokenizer.json})
     * @param threads     kernel threads, at least 1
     * @param blockTokens tokens per KV block
     * @param kvBlocks    KV blocks in the arena; a sequence can hold at most {@code kvBlocks × blockTokens} tokens
     * @param expertCap   DEVICE expert slots per MoE layer; 0 reads experts from the model's weights (no pager)
     */
    public ServeEngine(Path dir, int threads, int blockTokens, int kvBlocks, int expertCap) {
        this(dir, Options.builder().threads(threads).blockTokens(blockTokens).kvBlocks(kvBlocks).expertCap(expertCap).conclude());
    }

    /** Opens the model in {@code dir} and everything {@code options} ask for. */
    public ServeEngine(Path dir, Options options) {
        // with a pager the masters hold the experts: a copy leaves them mapped, read once below, never twice in memory
        model = ModelDirectory.open(dir, options.weightLoad(), options.expertCap() > 0 ? ModelWeights::isExpertTensor : name -> false);
        try {
            ModelConfig c = model.config();
            KvGeometry g = ModelRunner.kvGeometry(c, options.blockTokens());
            fingerprint = fingerprint(dir, g);
            ServingMemory.Builder mb = ServingMemory.builder(g, options.kvBlocks(), new PrefixHasher(PrefixHashContext.of(fingerprint, g)))
                    .kvPolicy(options.kvPolicy()).kvRecomputeWhenFaster(options.kvRecomputeWhenFaster()).offload(options.offload()).shared(options.shared())
                    .peers(options.peers(), options.peerExpertBytes(), options.rebalancePeriod());
            if (options.expertCap() > 0 && c.moe()) {
                ModelWeights weights = model.weights();
                mb.experts(new ServingMemory.Experts(ModelRunner.expertLayout(c), ModelRunner.moeLayerCount(c), c.numExperts(),
                        c.numExpertsPerTok(), options.expertCap(), tier -> ModelRunner.loadMasters(weights, tier)))
                        .expertMastersOnDisk(options.expertMastersDir());
            }
            if (options.split() != null && !c.moe()) {
                throw new IllegalArgumentException("the expert/KV split of " + options.split().budgetBytes() + " bytes needs a MoE"
                        + " model with paged experts; the model has " + c.numExperts() + " experts");
            }
            memory = mb.split(options.split()).open();
        } catch (RuntimeException | Error e) {
            model.close();
            throw e;
        }
        pool = new KernelPool(options.threads());
        capacityTokens = options.kvBlocks() * options.blockTokens();
        try {
            runner = new ModelRunner(model.weights(), new Kernels(pool), memory.kv(), memory.pager());
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
        LiveSplit split = memory.split();
        if (split != null) {
            runner.routingObserver(split::routed);
            runner.recomputeMeter(split.calibrator()); // KV misses cost the prefill speed measured here
        }
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
        return memory.offloadTiers();
    }

    /** The KV offload tiers with their transfer engine and store, or null without offload. */
    public TieredMemory offloadMemory() {
        return memory.offload();
    }

    /** Everything this engine holds in memory tiers, opened by the one manager. */
    public ServingMemory memory() {
        return memory;
    }

    public ModelDirectory model() {
        return model;
    }

    public ModelRunner runner() {
        return runner;
    }

    public KvBlockManager kv() {
        return memory.kv();
    }

    /** The expert pager, or null when experts are read from the model's weights. */
    public ExpertPager pager() {
        return memory.pager();
    }

    /** The PEER KV tier, or null without one. */
    public PeerTier kvPeerTier() {
        return memory.kvPeerTier();
    }

    /** The expert rebalancer placing experts on peers, or null without one. */
    public ExpertRebalancer rebalancer() {
        return memory.rebalancer();
    }

    /**
     * The peer families in the Prometheus text format: the peer client's {@code strata_peer_*},
     * the PEER tiers' {@code strata_peer_tier_*} (labelled {@code tier}) and the rebalancer's
     * {@code strata_expert_peer_*}; empty without peers. Any thread.
     */
    public String peerMetrics() {
        PrometheusText out = new PrometheusText();
        memory.writePeerMetrics(out);
        return out.toString();
    }

    /** Appends the families of {@link #peerMetrics()} to {@code out}; nothing without peers. Any thread. */
    public void writePeerMetrics(PrometheusText out) {
        memory.writePeerMetrics(out);
    }

    /** Appends the tier, link and store families of every tier this engine runs ({@link ServingMemory#writeMemoryMetrics}). Any thread. */
    public void writeMemoryMetrics(PrometheusText out) {
        memory.writeMemoryMetrics(out);
    }

    /** Whether the shared pool is in the KV chain now ({@link ServingMemory#sharedPoolHealth}); null without one. Any thread. */
    public SharedPoolHealth.Status sharedPoolHealth() {
        return memory.sharedPoolHealth();
    }

    /**
     * The live expert/KV split, or null without one. Its barriers ({@link LiveSplit#atBarrier},
     * {@link LiveSplit#atIdleBarrier}) are the generator worker's to call between steps; its
     * snapshot and metrics may be read from any thread.
     */
    public LiveSplit split() {
        return memory.split();
    }

    /** The most tokens (prompt plus generated) one sequence can hold. */
    public int capacityTokens() {
        return capacityTokens;
    }

    @Override
    public void close() {
        memory.close();
        pool.close();
        model.close();
    }
}
