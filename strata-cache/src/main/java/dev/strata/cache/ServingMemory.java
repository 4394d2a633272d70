package dev.strata.cache;

import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.expert.ExpertLayout;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.ExpertRebalancer;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvDropRelay;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvLayout;
import dev.strata.cache.kv.KvManagerConfig;
import dev.strata.cache.kv.OffloadMode;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cache.kv.SharedPoolHealth;
import dev.strata.cache.kv.StridedKvLayout;
import dev.strata.cache.peer.ConsumerLimits;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerTier;
import dev.strata.cache.peer.PeerTierMetrics;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.cache.split.LiveSplit;
import dev.strata.cache.split.SplitDevice;
import dev.strata.memory.Sizes;
import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.metrics.PrometheusText;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * The memory of one serving process, opened in one place: the KV slots (a block-major arena, or
 * the KV side of a live expert/KV split in one DEVICE tier), the KV block manager over them (its
 * slots evicted by the policy of {@code kv.policy}, {@link Builder#kvPolicy}), the
 * KV offload tiers with their transfer engine and store (opened by {@link TieredMemory} from the
 * one configuration), the pool shared with other processes, and for a paged MoE model the expert
 * masters (a HOST tier), the expert slots (a DEVICE tier, or the split's), the expert pager, the
 * rebalancer that keeps popular experts on peers, and the live split.
 *
 * <p>Design note: a serving process never assembles these by hand. Its engine describes the model
 * (KV geometry, the expert image and how to load the masters) and the process's configuration
 * chooses the tiers; this class wires them in the one order that keeps the invariants: the KV
 * floor is allocated before the expert slots (so one sequence of the engine's capacity always
 * fits), write-through offload starts a block's copy at commit (so evicting it later frees its
 * slot at once), the pager's slots under a split are whole KV slots, and closing goes in reverse
 * (the KV manager before the DEVICE tier that holds its slots, the pager before its tier, the
 * offload store before its tiers). The shared pool and the peer client belong to the caller (they
 * outlive a failed engine and are reattached by their owners) and stay open at {@link #close()}.
 *
 * <p>Threads: the KV manager and the pager are driven by the serving loop's one worker; the
 * metrics writers and getters may be called from any thread; {@link #close()} once, after the
 * serving loop has stopped.
 */
public final class ServingMemory implements AutoCloseable {
    /** The KV tiers a serving process offloads into; DEVICE and the shared POOL are reached through the KV manager. */
    public static final Set<TierKind> OFFLOAD_TIERS = EnumSet.of(TierKind.PEER, TierKind.HOST, TierKind.DISK);

    private final Opened parts; // everything opened, in opening order
    private final PeerTier kvPeer; // the PEER KV tier (also in the offload tiers); null without one

    private ServingMemory(Opened parts) {
        this.parts = parts;
        this.kvPeer = parts.offload == null ? null : (PeerTier) parts.offload.tier(TierKind.PEER);
    }

    /**
     * The experts of a MoE model paged between HOST masters and DEVICE slots.
     *
     * @param image         one expert's image (its tensors, in order)
     * @param moeLayers     MoE layers of the model
     * @param experts       experts per MoE layer
     * @param topK          experts routed per token
     * @param slotsPerLayer DEVICE slots per MoE layer (at least {@code topK}; the start under a split)
     * @param loader        allocates the masters in the given tier and writes every expert into them
     */
    public record Experts(ExpertLayout image, int moeLayers, int experts, int topK, int slotsPerLayer,
                          Function<Tier, ExpertMasters> loader) {
        /** @throws IllegalArgumentException naming the value out of range */
        public Experts {
            Objects.requireNonNull(image, "image");
            Objects.requireNonNull(loader, "loader");
            if (moeLayers < 1 || experts < 1 || topK < 1) {
                throw new IllegalArgumentException("experts: " + moeLayers + " MoE layers of " + experts + " experts, top-" + topK
                        + ": each must be at least 1");
            }
            if (slotsPerLayer < topK) {
                throw new IllegalArgumentException("expert cap " + slotsPerLayer + " is below the model's experts per token " + topK);
            }
        }
    }

    /**
     * The KV offload tiers of {@code config}: its PEER, HOST and DISK tiers with their store
     * settings, or null when it has none of them (or is null).
     */
    public static StrataConfig offloadTiers(StrataConfig config) {
        StrataConfig tiers = config == null ? null : config.onlyTiers(OFFLOAD_TIERS);
        return tiers != null && tiers.hasTiers() ? tiers : null;
    }

    /** Starts a description of the serving memory for KV blocks of geometry {@code g}, {@code kvBlocks} of them on DEVICE. */
    public static Builder builder(KvGeometry g, int kvBlocks, PrefixHasher hasher) {
        return new Builder(g, kvBlocks, hasher);
    }

    /**
     * Collects what the serving memory holds; {@link #open()} opens it all or nothing. Not
     * thread-safe.
     */
    public static final class Builder {
        private final KvGeometry geometry;
        private final int kvBlocks; // the DEVICE KV blocks; the floor under a split
        private final PrefixHasher hasher;
        private PolicyKind kvPolicy = PolicyKind.KV_DEFAULT; // of the KV manager's DEVICE slots (kv.policy)
        private boolean kvRecomputeWhenFaster = true; // kv.recompute-when-faster
        private StrataConfig offload;
        private SharedBlockStore shared;
        private PeerClient peers;
        private long peerExpertBytes;
        private Duration rebalancePeriod = Duration.ofMillis(200);
        private Experts experts;
        private java.nio.file.Path expertMastersDir; // null: the masters live in HOST memory
        private LiveSplit.Settings split;

        private Builder(KvGeometry geometry, int kvBlocks, PrefixHasher hasher) {
            this.geometry = Objects.requireNonNull(geometry, "geometry");
            this.hasher = Objects.requireNonNull(hasher, "hasher");
            if (kvBlocks < 1) {
                throw new IllegalArgumentException("KV blocks " + kvBlocks + " must be at least 1");
            }
            this.kvBlocks = kvBlocks;
        }

        /**
         * The KV offload tiers of a concluded configuration: its PEER, HOST and DISK tiers and their
         * store settings (its DEVICE and POOL tiers are not offload tiers and are ignored); a
         * configuration without any of them means no offload.
         */
        public Builder offload(StrataConfig config) {
            offload = offloadTiers(config);
            return this;
        }

        /** The eviction policy of the KV manager's DEVICE slots ({@code kv.policy}; default {@link PolicyKind#KV_DEFAULT}). */
        public Builder kvPolicy(PolicyKind kind) {
            kvPolicy = Objects.requireNonNull(kind, "KV policy");
            return this;
        }

        /**
         * Whether the KV manager leaves cached blocks that load slower than they recompute to the
         * engine ({@code kv.recompute-when-faster}; default on; see {@link KvManagerConfig#recomputeWhenFaster(boolean)}).
         */
        public Builder kvRecomputeWhenFaster(boolean on) {
            kvRecomputeWhenFaster = on;
            return this;
        }

        /** The pool shared with other serving processes (the caller's; its index must hold this model's fingerprint). */
        public Builder shared(SharedBlockStore store) {
            shared = store;
            return this;
        }

        /**
         * Borrows from peers through {@code client} (the caller's): the PEER KV tier of the offload
         * configuration, and {@code expertBytes} of expert copies kept on peers by a rebalancer that
         * runs a pass every {@code period} (0 bytes: none).
         */
        public Builder peers(PeerClient client, long expertBytes, Duration period) {
            peers = client;
            peerExpertBytes = expertBytes;
            rebalancePeriod = period;
            return this;
        }

        /** Pages the experts of a MoE model (null: experts are read where the model keeps them). */
        public Builder experts(Experts value) {
            experts = value;
            return this;
        }

        /**
         * Keeps the expert masters in a DISK tier (files under {@code dir}, direct I/O, removed at
         * close) instead of HOST memory, so a MoE model larger than memory is paged from SSD: only
         * the DEVICE slots hold experts in memory (null: HOST, the default; needs {@link #experts}).
         */
        public Builder expertMastersOnDisk(java.nio.file.Path dir) {
            expertMastersDir = dir;
            return this;
        }

        /** Splits one DEVICE budget live between expert slots and KV slots (null: no split; needs {@link #experts}). */
        public Builder split(LiveSplit.Settings settings) {
            split = settings;
            return this;
        }

        /**
         * Opens everything described; on failure closes what it opened and rethrows.
         *
         * @throws IllegalArgumentException naming the value that cannot be served
         */
        public ServingMemory open() {
            check();
            Opened o = new Opened();
            try {
                o.open(this);
                return new ServingMemory(o);
            } catch (RuntimeException | Error e) {
                o.closeAfterFailure(e);
                throw e;
            }
        }

        private void check() {
            List<String> problems = new ArrayList<>();
            if (expertMastersDir != null && experts == null) {
                problems.add("expert masters on DISK (" + expertMastersDir + ") need a MoE model with paged experts (expert cap > 0)");
            }
            if (split != null && experts == null) {
                problems.add("the expert/KV split of " + split.budgetBytes() + " bytes needs a MoE model with paged experts (expert cap > 0)");
            }
            if (peerExpertBytes < 0) {
                problems.add("peer expert bytes " + peerExpertBytes + " must be at least 0");
            }
            if (peerExpertBytes > 0 && peers == null) {
                problems.add("peer expert bytes " + peerExpertBytes + " need a peer client");
            }
            if (peerExpertBytes > 0 && experts != null && peerExpertBytes < Sizes.alignUp(experts.image().bytes(), PeerTier.ALIGNMENT)) {
                problems.add("peer expert bytes " + peerExpertBytes + " hold no expert of " + experts.image().bytes() + " bytes");
            }
            if (rebalancePeriod == null || rebalancePeriod.isNegative() || rebalancePeriod.isZero()) {
                problems.add("rebalance period " + rebalancePeriod + " must be positive");
            }
            if (offload != null) {
                if (offload.host() == null) {
                    problems.add((offload.peer() != null ? "a PEER KV tier (" + offload.peer().capacity() + " bytes)" : "a DISK KV tier ("
                            + offload.disk().directory() + ")") + " needs a HOST KV tier (tiers.host)");
                }
                if (offload.peer() != null && peers == null) {
                    problems.add("a PEER KV tier of " + offload.peer().capacity() + " bytes needs a peer client");
                }
                if (offload.peer() != null && offload.peer().chunk() < geometry.bytesPerBlock()) {
                    problems.add("tiers.peer.chunk " + offload.peer().chunk() + " bytes (peer KV " + offload.peer().capacity()
                            + " bytes) holds no KV block of " + geometry.bytesPerBlock() + " bytes");
                }
            }
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("serving memory: " + String.join("; ", problems));
            }
        }
    }

    /**
     * What {@link Builder#open()} has opened, in opening order; closed in reverse, at
     * {@link #close()} or when a later step of opening fails. The shared pool and the peer client
     * are the caller's and are only referenced.
     */
    private static final class Opened {
        OffHeapRegion kvArea; // the block-major KV arena (kvBlocks × bytesPerBlock); null under a split
        SplitDevice splitDevice; // null without a split
        TieredMemory offload; // null without offload
        KvBlockManager kv;
        SharedBlockStore shared; // the caller's; null without one
        PeerClient peers; // the caller's; null without one
        dev.strata.memory.Tier masterTier; // HOST, or DISK with expertMastersOnDisk; null without paged experts
        dev.strata.memory.transfer.TransferEngine expertTransfers; // reads DISK masters when there is no offload engine; else null
        DeviceTier slotTier; // the pager's slots (the split's tier under a split); null without paged experts
        ExpertMasters masters; // null without paged experts
        ExpertPager pager; // null without paged experts
        ExpertRebalancer rebalancer; // null without expert copies on peers
        LiveSplit split; // null without a split

        void open(Builder b) {
            shared = b.shared;
            peers = b.peers;
            Experts x = b.experts;
            KvLayout layout;
            if (b.split != null) { // the KV floor first, then the expert slots in the same tier
                splitDevice = SplitDevice.open(b.geometry, b.kvBlocks, x.image().bytes(), x.moeLayers(), x.slotsPerLayer(), b.split);
                layout = splitDevice.layout();
            } else {
                // a region: pre-touched (page faults at start-up, not on a request), audited, and anonymous
                // memory that offload gathers and scatters may stream to and from
                kvArea = OffHeapRegion.allocate("kv-area", StridedKvLayout.blockMajorBytes(b.geometry, b.kvBlocks), true);
                layout = StridedKvLayout.blockMajor(b.geometry, b.kvBlocks, kvArea.segment());
            }
            KvBlockManager.Builder kvb = KvBlockManager.builder(layout, b.hasher);
            KvManagerConfig settings = KvManagerConfig.defaults().devicePolicy(b.kvPolicy).recomputeWhenFaster(b.kvRecomputeWhenFaster);
            if (b.offload != null) {
                KvDropRelay relay = new KvDropRelay();
                PeerClient.ConsumerView view = b.offload.peer() == null ? null
                        : b.peers.forConsumer("kv", ConsumerLimits.bytes(b.offload.peer().capacity()));
                // a write-behind shared store (the CLUSTER tier) takes KV blocks as they leave HOST
                EvictionSink sink = shared == null ? EvictionSink.NONE : (key, kind, bytes) -> {
                    if (kind == ObjectKind.KV_BLOCK) {
                        shared.evicted(key, bytes);
                    }
                };
                offload = TieredMemory.open(b.offload, relay, view, sink);
                kvb.store(offload.store(), offload.engine(), relay);
                // write-through: a block's copy starts at commit, so evicting it later frees its slot at once
                settings = settings.offload(OffloadMode.WRITE_THROUGH)
                        .offloadDurability(b.offload.peer() != null ? b.offload.peer().durability() : Durability.LOSSY);
            }
            kvb.config(settings);
            if (shared != null) {
                kvb.shared(shared);
            }
            kv = kvb.build();
            if (x == null) {
                return;
            }
            long expertBytes = x.image().bytes();
            long masterCount = (long) x.moeLayers() * x.experts();
            masterTier = b.expertMastersDir == null ? HostTier.create("expert-masters", masterCount * expertBytes + (1L << 20))
                    : dev.strata.memory.disk.DiskTier.open(dev.strata.memory.disk.DiskTierOptions.in(b.expertMastersDir,
                            masterCount * Sizes.alignUp(expertBytes + 8192, 4096) + 16 * Sizes.MiB).name("expert-masters").deleteOnClose(true));
            slotTier = splitDevice != null ? splitDevice.tier()
                    : DeviceTier.cpu("device", (long) x.moeLayers() * x.slotsPerLayer() * expertBytes + (1L << 20));
            masters = x.loader().apply(masterTier);
            ExpertPager.Builder pb = ExpertPager.builder(masters, slotTier).topK(x.topK()).slotsPerLayer(x.slotsPerLayer());
            if (splitDevice != null) {
                pb.slotGranule(splitDevice.slotGranule());
            }
            if (!masterTier.isPlainMemory()) { // DISK masters: misses are read through a transfer engine
                if (offload != null) {
                    pb.transferEngine(offload.engine());
                } else {
                    expertTransfers = new dev.strata.memory.transfer.TransferEngine();
                    pb.transferEngine(expertTransfers);
                }
            }
            if (b.peerExpertBytes > 0) {
                long image = Sizes.alignUp(expertBytes, PeerTier.ALIGNMENT);
                long chunk = Math.max(1, Math.min(PeerTier.DEFAULT_CHUNK, b.peerExpertBytes) / image) * image;
                rebalancer = ExpertRebalancer.builder(masters, b.peers.forConsumer("experts", ConsumerLimits.bytes(b.peerExpertBytes)))
                        .name("expert-peer").maxBytes(b.peerExpertBytes).chunkBytes(chunk).build();
                pb.peerSource(rebalancer);
            }
            pager = pb.build();
            if (rebalancer != null) {
                rebalancer.follow(pager).start(b.rebalancePeriod);
            }
            if (splitDevice != null) {
                split = splitDevice.start(pager, kv);
            }
        }

        /** Closes in the reverse order of opening: the KV manager before its slots, the pager before its tier. */
        void close() {
            if (rebalancer != null) {
                rebalancer.close();
            }
            if (kv != null) {
                kv.close();
            }
            if (splitDevice != null) {
                splitDevice.closeLayout();
            }
            if (pager != null) {
                pager.close();
            }
            if (expertTransfers != null) {
                expertTransfers.close();
            }
            if (masters != null) {
                masters.close();
            }
            if (slotTier != null && splitDevice == null) {
                slotTier.close();
            }
            if (splitDevice != null) {
                splitDevice.closeTier();
            }
            if (masterTier != null) {
                masterTier.close();
            }
            if (offload != null) {
                offload.close();
            }
            if (kvArea != null) {
                kvArea.close();
            }
        }

        void closeAfterFailure(Throwable failure) {
            try {
                close();
            } catch (RuntimeException | Error e) {
                failure.addSuppressed(e);
            }
        }
    }

    /** The KV block manager. */
    public KvBlockManager kv() {
        return parts.kv;
    }

    /** The expert pager, or null when experts are not paged. */
    public ExpertPager pager() {
        return parts.pager;
    }

    /** The expert rebalancer placing experts on peers, or null without one. */
    public ExpertRebalancer rebalancer() {
        return parts.rebalancer;
    }

    /** The PEER KV tier, or null without one. */
    public PeerTier kvPeerTier() {
        return kvPeer;
    }

    /** The KV offload tiers with their transfer engine and store, or null without offload. */
    public TieredMemory offload() {
        return parts.offload;
    }

    /** The tiers committed KV blocks are offloaded into, top first (empty without offload). */
    public List<Tier> offloadTiers() {
        return parts.offload == null ? List.of() : parts.offload.tiers();
    }

    /** The live expert/KV split, or null without one. */
    public LiveSplit split() {
        return parts.split;
    }

    /**
     * Appends the memory families in the Prometheus text format for every tier this process runs:
     * the {@code strata_tier_*} occupancy and traffic of the expert slots (DEVICE), the expert
     * masters (HOST), the KV offload tiers and the shared pool; the {@code strata_link_*}
     * families of the offload tiers' transfer engine; and the {@code strata_store_*} families of
     * their store. Any thread.
     */
    public void writeMemoryMetrics(PrometheusText out) {
        List<TierStats> tiers = new ArrayList<>();
        if (parts.slotTier != null) {
            tiers.add(parts.slotTier.stats());
            tiers.add(parts.masterTier.stats());
        }
        MetricsSnapshot o = parts.offload == null ? null : parts.offload.metrics();
        if (o != null) {
            tiers.addAll(o.tiers());
        }
        if (parts.shared != null && parts.shared.tier() != null) {
            tiers.add(parts.shared.tier().stats());
        }
        new MetricsSnapshot(tiers, o == null ? List.of() : o.links(), o == null ? null : o.store(),
                o == null ? MemoryAudit.usage() : o.regions()).writeTo(out);
        if (parts.shared != null) {
            parts.shared.health().writeTo(out); // strata_tier_failed and its counters for the shared pool
            parts.shared.writeMetrics(out); // the store's own families (a cluster's strata_cluster_*)
        }
    }

    /** Whether the shared pool is in the KV chain now ({@link SharedBlockStore#health}); null without one. Any thread. */
    public SharedPoolHealth.Status sharedPoolHealth() {
        return parts.shared == null ? null : parts.shared.health();
    }

    /**
     * Appends the peer families in the Prometheus text format: the peer client's
     * {@code strata_peer_*}, the PEER tiers' {@code strata_peer_tier_*} (labelled {@code tier})
     * and the rebalancer's {@code strata_expert_peer_*}; nothing without peers. Any thread.
     */
    public void writePeerMetrics(PrometheusText out) {
        if (parts.peers == null) {
            return;
        }
        parts.peers.stats().writeTo(out);
        List<PeerTier> tiers = new ArrayList<>();
        if (kvPeer != null) {
            tiers.add(kvPeer);
        }
        if (parts.rebalancer != null) {
            tiers.add(parts.rebalancer.tier());
        }
        PeerTierMetrics.writeTo(out, tiers);
        if (parts.rebalancer != null) {
            parts.rebalancer.stats().writeTo(out);
        }
    }

    /** Closes what it opened, in reverse order; the shared pool and the peer client stay open. */
    @Override
    public void close() {
        parts.close();
    }
}
