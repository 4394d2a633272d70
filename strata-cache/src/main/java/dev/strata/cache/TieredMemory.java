package dev.strata.cache;

import dev.strata.cache.config.ConfigException;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.PeerMemory;
import dev.strata.cache.peer.PeerTier;
import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.transfer.TransferEngine;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * One process's tiered memory, opened from a {@link StrataConfig}: the configured tiers, the
 * transfer engine that moves bytes between them, and the object store over the demotion chain.
 *
 * <p>Opening is all or nothing: if a tier fails to open, the ones already open are closed and the
 * error propagates. {@link #close()} closes the store (freeing its allocations), the engine and
 * the tiers in reverse order, then runs the leak audit.
 *
 * <p>Threads: the accessors and {@link #metrics()} may be called from any thread; {@link #close()}
 * once, after users have stopped.
 */
public final class TieredMemory implements AutoCloseable {

    private final Map<TierKind, Tier> tiers; // opened tiers, fastest first
    private final TransferEngine engine;
    private final TieredStore store;

    private TieredMemory(Map<TierKind, Tier> tiers, TransferEngine engine, TieredStore store) {
        this.tiers = tiers;
        this.engine = engine;
        this.store = store;
    }

    /**
     * Opens everything {@code config} describes.
     *
     * @param config   a concluded configuration
     * @param listener receives each LOSSY object the store drops
     * @throws ConfigException if the configuration has a PEER tier (open it with a peer client)
     */
    public static TieredMemory open(StrataConfig config, DropListener listener) {
        return open(config, listener, null);
    }

    /**
     * Opens everything {@code config} describes; the PEER tier, if configured, borrows through
     * {@code peers} (a peer client built with {@code config.peer().policy()}; not owned: close it
     * after this).
     *
     * @param peers the peer client, or null when no PEER tier is configured
     * @throws ConfigException if a PEER tier is configured and {@code peers} is null
     */
    public static TieredMemory open(StrataConfig config, DropListener listener, PeerMemory peers) {
        return open(config, listener, peers, EvictionSink.NONE);
    }

    /**
     * As {@link #open(StrataConfig, DropListener, PeerMemory)}, telling {@code sink} of every copy
     * evicted out of the HOST tier (a write-behind tier below the store, such as the CLUSTER tier).
     */
    public static TieredMemory open(StrataConfig config, DropListener listener, PeerMemory peers, EvictionSink sink) {
        if (!config.hasTiers()) {
            throw new ConfigException("tiers: no tier is configured; configure at least tiers.host");
        }
        if (config.peer() != null && peers == null) {
            throw new ConfigException("tiers.peer is configured but no peer client was given to borrow through;"
                    + " start the peer agents and open the tiers with a peer client, or remove tiers.peer");
        }
        Map<TierKind, Tier> tiers = new EnumMap<>(TierKind.class);
        TransferEngine engine = null;
        try {
            if (config.device() != null) {
                tiers.put(TierKind.DEVICE, DeviceTier.cpu("device", config.device().capacity()));
            }
            if (config.peer() != null) {
                StrataConfig.PeerTier p = config.peer();
                tiers.put(TierKind.PEER, new PeerTier("peer", peers, p.capacity(), p.chunk(), LeaseHints.of(p.durability())));
            }
            if (config.host() != null) {
                StrataConfig.HostTier h = config.host();
                tiers.put(TierKind.HOST, h.allocator() == StrataConfig.AllocatorKind.SLAB
                        ? HostTier.slab("host", h.capacity(), h.block()) : HostTier.create("host", h.capacity()));
            }
            if (config.pool() != null) {
                StrataConfig.PoolTier p = config.pool();
                tiers.put(TierKind.POOL, PoolTier.open(PoolConfig.builder("pool").paths(p.paths()).capacity(p.capacity())
                        .chunkSize(p.chunk()).mode(p.create() ? PoolConfig.Mode.CREATE_OR_ATTACH : PoolConfig.Mode.ATTACH)
                        .conclude()));
            }
            if (config.disk() != null) {
                StrataConfig.DiskTier d = config.disk();
                tiers.put(TierKind.DISK, DiskTier.open(DiskTierOptions.in(d.directory(), d.capacity()).name("disk")
                        .directIo(d.directIo()).deleteOnClose(d.removeOnClose())));
            }
            engine = new TransferEngine(TransferEngine.Settings.defaults()
                    .withMemoryLinkWorkers(config.transfer().memoryLinkWorkers())
                    .withDiskLinkWorkers(config.transfer().diskLinkWorkers())
                    .withStagingBytes(config.transfer().stagingBytes()));
            StrataConfig.Store s = config.store();
            TieredStore.Builder builder = TieredStore.builder().dropListener(listener).evictionSink(sink);
            for (TierKind kind : s.chain()) {
                StrataConfig.TierPolicy p = s.policyOf(kind);
                builder.tier(tiers.get(kind), p.highWatermark(), p.lowWatermark(), p.policy());
            }
            builder.promotion(switch (s.promotion()) {
                case NEVER -> PromotionRule.never();
                case TO_TOP -> PromotionRule.toTop();
                case ONE_LEVEL_UP -> PromotionRule.oneLevelUp();
                case TO_TOP_AFTER -> PromotionRule.toTopAfter(s.promoteAfter());
            });
            return new TieredMemory(tiers, engine, builder.build());
        } catch (RuntimeException e) {
            if (engine != null) {
                engine.close();
            }
            closeAll(new ArrayList<>(tiers.values()), e);
            throw e;
        }
    }

    private static void closeAll(List<Tier> open, RuntimeException failure) {
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (RuntimeException e) {
                failure.addSuppressed(e);
            }
        }
    }

    /** The tier of {@code kind}, or null when not configured. */
    public Tier tier(TierKind kind) {
        return tiers.get(kind);
    }

    /** The open tiers, fastest first. */
    public List<Tier> tiers() {
        return List.copyOf(tiers.values());
    }

    public TransferEngine engine() {
        return engine;
    }

    public TieredStore store() {
        return store;
    }

    /** Tiers, links and store, measured now. */
    public MetricsSnapshot metrics() {
        List<TierStats> stats = new ArrayList<>();
        for (Tier t : tiers.values()) {
            stats.add(t.stats());
        }
        return new MetricsSnapshot(stats, engine.linkStats(), store.stats(), MemoryAudit.usage());
    }

    /**
     * Closes the store, the engine and the tiers, and returns the leak audit: the off-heap regions
     * still live afterwards (empty when every allocation was freed exactly once).
     */
    public List<MemoryAudit.LiveRegion> closeAndAudit() {
        close();
        return MemoryAudit.liveRegions();
    }

    @Override
    public void close() {
        RuntimeException failure = null;
        try {
            store.close();
        } catch (RuntimeException e) {
            failure = e;
        }
        try {
            engine.close();
        } catch (RuntimeException e) {
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }
        RuntimeException tiersFailure = new RuntimeException("closing tiers failed");
        closeAll(new ArrayList<>(tiers.values()), tiersFailure);
        if (tiersFailure.getSuppressed().length > 0) {
            if (failure == null) {
                failure = tiersFailure;
            } else {
                failure.addSuppressed(tiersFailure);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
