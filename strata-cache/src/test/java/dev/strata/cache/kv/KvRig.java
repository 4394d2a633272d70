package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.StoreStats;
import dev.strata.cache.TieredStore;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Tier;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.transfer.TransferEngine;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Test fixture: an engine's KV (a layer-major layout over one shared arena, so every block is
 * gathered from and scattered to several segments), real HOST, POOL and DISK tiers of small
 * capacities, a transfer engine, the store over them and a {@link KvBlockManager}; plus the
 * engine's side of the byte-exact checks: block bytes derived from (block key, position).
 *
 * <p>{@link #close()} closes the manager and checks that nothing leaked: the store is empty, every
 * tier's used bytes are zero, and no off-heap region of this rig outlives it.
 */
final class KvRig implements AutoCloseable {
    static final KvGeometry GEOMETRY = new KvGeometry(3, 2, 5, KvDtype.FP16, 4); // 480-byte blocks, 4 tokens
    private static final AtomicInteger COUNTER = new AtomicInteger();

    /** Capacities in blocks (0: tier absent) and manager settings. */
    record Spec(int slots, int hostBlocks, int poolBlocks, int diskBlocks, KvManagerConfig config,
            KvDiskAdmission admission, SharedBlockStore shared, Tier deviceTier, Tier peer) {
        static Spec of(int slots, int hostBlocks, int poolBlocks, int diskBlocks) {
            return new Spec(slots, hostBlocks, poolBlocks, diskBlocks, KvManagerConfig.defaults(), null, null, null, null);
        }

        Spec config(KvManagerConfig c) {
            return new Spec(slots, hostBlocks, poolBlocks, diskBlocks, c, admission, shared, deviceTier, peer);
        }

        Spec admission(KvDiskAdmission a) {
            return new Spec(slots, hostBlocks, poolBlocks, diskBlocks, config.diskAdmission(a), a, shared, deviceTier, peer);
        }

        Spec shared(SharedBlockStore s) {
            return new Spec(slots, hostBlocks, poolBlocks, diskBlocks, config, admission, s, deviceTier, peer);
        }

        /** A PEER tier (memory lent by peers) at the top of the store's chain, before HOST; the caller closes it. */
        Spec peer(Tier tier) {
            return new Spec(slots, hostBlocks, poolBlocks, diskBlocks, config, admission, shared, deviceTier, tier);
        }

        /** The slots are allocations in {@code tier} ({@link TierSlotKvLayout}, resizable), not one arena. */
        Spec deviceTier(Tier tier) {
            return new Spec(slots, hostBlocks, poolBlocks, diskBlocks, config, admission, shared, tier, peer);
        }
    }

    final String id = "kvrig-" + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet();
    final Arena arena = Arena.ofShared(); // the engine's KV memory, for the rig's lifetime
    final KvLayout layout;
    final PrefixHasher hasher = new PrefixHasher(PrefixHashContext.of(ModelFingerprint.of("rig-model", GEOMETRY), GEOMETRY));
    final List<Tier> tiers = new ArrayList<>();
    HostTier host;
    PoolTier pool;
    DiskTier disk;
    Path diskDir;
    Path poolFile;
    final TransferEngine transfers;
    final TieredStore store;
    final KvBlockManager manager;
    final long blockBytes = GEOMETRY.bytesPerBlock();

    KvRig(Spec spec) throws IOException {
        if (spec.deviceTier() != null) {
            layout = TierSlotKvLayout.allocate(spec.deviceTier(), GEOMETRY, spec.slots());
        } else {
            MemorySegment[] layers = new MemorySegment[GEOMETRY.layers()];
            for (int l = 0; l < layers.length; l++) {
                layers[l] = arena.allocate(StridedKvLayout.layerMajorBytesPerLayer(GEOMETRY, spec.slots()), 64);
                layers[l].fill((byte) 0x5A);
            }
            layout = StridedKvLayout.layerMajor(GEOMETRY, spec.slots(), layers);
        }
        KvDropRelay relay = new KvDropRelay();
        TieredStore.Builder b = TieredStore.builder().dropListener(relay);
        if (spec.peer() != null) {
            b.tier(spec.peer(), 1.0, 0.9, PolicyKind.PRIORITY_LRU);
        }
        if (spec.hostBlocks() > 0) {
            host = HostTier.slab(id + "-host", spec.hostBlocks() * 512L, 512);
            tiers.add(host);
            b.tier(host, 1.0, 0.9, PolicyKind.PRIORITY_LRU);
        }
        if (spec.poolBlocks() > 0) {
            poolFile = Path.of("/dev/shm", "strata-" + id + ".pool");
            pool = PoolTier.open(PoolConfig.builder(id).path(poolFile).capacity(spec.poolBlocks() * 4096L)
                    .chunkSize(4096).conclude());
            tiers.add(pool);
            b.tier(pool, 1.0, 0.9, PolicyKind.PRIORITY_LRU);
        }
        if (spec.diskBlocks() > 0) {
            diskDir = Files.createTempDirectory(id);
            disk = DiskTier.open(DiskTierOptions.in(diskDir, spec.diskBlocks() * 8192L).name(id + "-disk").dataFiles(1)
                    .deleteOnClose(true));
            tiers.add(disk);
            b.tier(disk, 1.0, 0.9, PolicyKind.PRIORITY_LRU);
            if (spec.admission() != null) {
                b.admission(spec.admission());
            }
        }
        transfers = new TransferEngine(TransferEngine.Settings.defaults().withStagingBytes(64 * 1024));
        store = tiers.isEmpty() ? null : b.build();
        KvBlockManager.Builder mb = KvBlockManager.builder(layout, hasher).config(spec.config());
        if (store != null) {
            mb.store(store, transfers, relay);
        }
        if (spec.shared() != null) {
            mb.shared(spec.shared());
        }
        manager = mb.build();
    }

    /** The engine writes block {@code i} of {@code seq}: bytes derived from {@code key}. */
    void fill(KvSequence seq, int i, ObjectKey key) {
        List<MemorySegment> segs = new ArrayList<>();
        layout.segments(seq.slot(i), TokenSelection.all(GEOMETRY.blockTokens()), segs);
        long p = 0;
        for (MemorySegment s : segs) {
            for (long j = 0; j < s.byteSize(); j++, p++) {
                s.set(ValueLayout.JAVA_BYTE, j, patternByte(key, p));
            }
        }
    }

    /** The first position of slot {@code slot}'s bytes that differs from {@code key}'s pattern, or -1. */
    long mismatch(int slot, ObjectKey key) {
        List<MemorySegment> segs = new ArrayList<>();
        layout.segments(slot, TokenSelection.all(GEOMETRY.blockTokens()), segs);
        long p = 0;
        for (MemorySegment s : segs) {
            for (long j = 0; j < s.byteSize(); j++, p++) {
                if (s.get(ValueLayout.JAVA_BYTE, j) != patternByte(key, p)) {
                    return p;
                }
            }
        }
        return p == blockBytes ? -1 : p;
    }

    /** Asserts that every committed block of {@code seq} holds its key's bytes. */
    void assertCommittedBytes(KvSequence seq) {
        for (int i = 0; i < seq.committedBlocks(); i++) {
            assertThat(mismatch(seq.slot(i), seq.key(i))).as("block %d of %s (slot %d) first wrong byte", i, seq, seq.slot(i))
                    .isEqualTo(-1L);
        }
    }

    static byte patternByte(ObjectKey key, long position) {
        long h = key.hash64() + position * 0x9E3779B97F4A7C15L;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        return (byte) ((h >>> 56) | 1); // never zero
    }

    /**
     * Engine step: gives {@code seq} slots for its tokens up to {@code length}, fills its new full
     * blocks and commits them; waits for write-back evictions if needed.
     */
    AllocationStatus extend(KvSequence seq, int[] tokens, int length) {
        AllocationStatus s = manager.allocateTo(seq, length);
        for (int tries = 0; s == AllocationStatus.WAIT && tries < 1000; tries++) {
            manager.awaitIdle(10, TimeUnit.SECONDS);
            s = manager.allocateTo(seq, length);
        }
        if (s != AllocationStatus.ALLOCATED) {
            return s;
        }
        ObjectKey[] keys = hasher.chain(tokens, length);
        for (int i = seq.committedBlocks(); i < keys.length; i++) {
            fill(seq, i, keys[i]);
        }
        manager.commit(seq, tokens, length);
        return s;
    }

    /** Tokens: a prompt of {@code length} ids from {@code seed}. */
    static int[] tokens(long seed, int length) {
        int[] t = new int[length];
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        for (int i = 0; i < length; i++) {
            t[i] = r.nextInt(50_000);
        }
        return t;
    }

    void idle() {
        assertThat(manager.awaitIdle(30, TimeUnit.SECONDS)).as("transfers finish").isTrue();
        manager.checkInvariants();
    }

    @Override
    public void close() throws IOException {
        try {
            manager.close();
            if (store != null) {
                assertThat(store.size()).as("objects left in the store").isZero();
                StoreStats stats = store.stats();
                for (Tier t : tiers) {
                    assertThat(t.used()).as("bytes used in tier %s after the manager closed: only blocks the store keeps for reuse", t.name())
                            .isEqualTo(stats.tier(t.name()).reusableBytes());
                }
                store.close();
                for (Tier t : tiers) {
                    assertThat(t.used()).as("bytes used in tier %s after the store closed", t.name()).isZero();
                }
            }
        } finally {
            if (layout instanceof TierSlotKvLayout t) {
                t.close();
            }
            transfers.close();
            for (int i = tiers.size() - 1; i >= 0; i--) {
                tiers.get(i).close();
            }
            arena.close();
            if (poolFile != null) {
                Files.deleteIfExists(poolFile);
            }
            if (diskDir != null) {
                try (Stream<Path> files = Files.walk(diskDir)) {
                    for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                        Files.deleteIfExists(p);
                    }
                }
            }
        }
        assertThat(MemoryAudit.liveRegions().stream().filter(r -> r.name().contains(id)).toList())
                .as("off-heap regions of this rig still live").isEmpty();
        assertThat(MemoryAudit.liveRegions().stream().filter(r -> r.name().contains("kv-resume-staging")).toList())
                .as("resume staging regions still live").isEmpty();
        if (disk != null) { // the manager's own HOST staging for two-stage disk reads is released too
            assertThat(MemoryAudit.liveRegions().stream().filter(r -> r.name().contains("kv-staging")).toList())
                    .as("staging regions still live").isEmpty();
        }
    }
}
