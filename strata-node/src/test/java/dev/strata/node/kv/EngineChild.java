package dev.strata.node.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.TieredStore;
import dev.strata.cache.kv.AllocationStatus;
import dev.strata.cache.kv.BlockLocation;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvDropRelay;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvLayout;
import dev.strata.cache.kv.KvManagerConfig;
import dev.strata.cache.kv.KvSequence;
import dev.strata.cache.kv.LoadOutcome;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.OffloadMode;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.PrefixMatch;
import dev.strata.cache.kv.SharedPublishMode;
import dev.strata.cache.kv.StridedKvLayout;
import dev.strata.cache.kv.TokenSelection;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.node.index.BlockIndexConfig;
import dev.strata.node.index.IndexIdentityException;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.index.PoolSharedBlockStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * An engine process for the cross-process KV tests: its own {@link KvBlockManager} over its own
 * DEVICE slots (a layer-major layout in its own memory) and HOST tier, sharing one pool with other
 * engines through {@link PoolBlockIndex} and {@link PoolSharedBlockStore}. Block bytes are a
 * function of (key, position), so any process can check any block.
 *
 * <p>Usage: {@code EngineChild <pool name> <pool path> <model name> <AT_COMMIT|ON_EVICTION>}; then
 * it reads commands on stdin, one a line, and answers each on stdout:
 * <ul>
 *   <li>{@code turn <seed> <blocks>}: the conversation of {@code seed} up to {@code blocks} full
 *       blocks (plus a partial one): match, load the cached prefix and verify its bytes, compute
 *       and commit the rest, release; answers
 *       {@code turn matched=M device=D host=H shared=S loaded=L committed=C}.</li>
 *   <li>{@code flush}: evicts every cached DEVICE block (publishing it in ON_EVICTION mode) and
 *       waits; answers {@code flushed}.</li>
 *   <li>{@code spam <seed> <count> <blocks>}: turns of {@code count} new conversations, printing
 *       {@code progress i} after each (to be killed part-way).</li>
 *   <li>{@code quit}: closes everything, exits 0.</li>
 * </ul>
 * Wrong bytes print {@code WRONG ...} and exit 3; a refused attach prints {@code refused <message>}
 * and exits 4.
 */
public final class EngineChild {
    static final KvGeometry GEOMETRY = new KvGeometry(3, 2, 5, KvDtype.FP16, 4); // 480-byte blocks of 4 tokens
    static final int SLOTS = 16;
    static final int BT = GEOMETRY.blockTokens();

    private final KvBlockManager manager;
    private final KvLayout layout;
    private final PrintStream out;

    private EngineChild(KvBlockManager manager, KvLayout layout, PrintStream out) {
        this.manager = manager;
        this.layout = layout;
        this.out = out;
    }

    /** The model identity both the hasher and the pool's block index use. */
    static ObjectKey fingerprint(String model) {
        return ModelFingerprint.of(model, GEOMETRY);
    }

    static PrefixHasher hasher(String model) {
        return new PrefixHasher(PrefixHashContext.of(fingerprint(model), GEOMETRY));
    }

    static BlockIndexConfig indexConfig(String model) {
        return BlockIndexConfig.builder(PrefixHasher.VERSION, fingerprint(model)).pinDuration(Duration.ofSeconds(5))
                .conclude();
    }

    /** The first {@code length} tokens of conversation {@code seed} (a longer call extends a shorter one). */
    static int[] tokens(long seed, int length) {
        int[] t = new int[length];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < length; i++) {
            t[i] = r.nextInt(50_000);
        }
        return t;
    }

    static byte patternByte(ObjectKey key, long position) {
        long h = key.hash64() + position * 0x9E3779B97F4A7C15L;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        return (byte) ((h >>> 56) | 1); // never zero
    }

    static Process start(String poolName, Path poolPath, String model, SharedPublishMode mode) throws IOException {
        String java = System.getProperty("strata.java");
        if (java == null || java.isBlank()) {
            java = ProcessHandle.current().info().command().orElse("java");
        }
        List<String> command = List.of(java, "--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector",
                "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                EngineChild.class.getName(), poolName, poolPath.toString(), model, mode.name());
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = System.out;
        String model = args[2];
        SharedPublishMode mode = SharedPublishMode.valueOf(args[3]);
        PoolConfig poolConfig = PoolConfig.builder(args[0]).path(Path.of(args[1])).mode(PoolConfig.Mode.ATTACH)
                .sweepInterval(Duration.ZERO).conclude();
        String id = "engine-" + ProcessHandle.current().pid();
        int status;
        try (PoolTier pool = PoolTier.open(poolConfig)) {
            status = run(pool, model, mode, id, out);
        }
        out.flush();
        System.exit(status);
    }

    private static int run(PoolTier pool, String model, SharedPublishMode mode, String id, PrintStream out) {
        PoolBlockIndex index;
        try {
            index = PoolBlockIndex.open(pool, indexConfig(model));
        } catch (IndexIdentityException e) {
            out.println("refused " + e.getMessage());
            return 4;
        }
        {
            try (index;
                 Arena arena = Arena.ofShared();
                 HostTier host = HostTier.slab(id + "-host", 24 * 512L, 512);
                 TransferEngine transfers = new TransferEngine(TransferEngine.Settings.defaults().withStagingBytes(64 * 1024))) {
                MemorySegment[] layers = new MemorySegment[GEOMETRY.layers()];
                for (int l = 0; l < layers.length; l++) {
                    layers[l] = arena.allocate(StridedKvLayout.layerMajorBytesPerLayer(GEOMETRY, SLOTS), 64);
                    layers[l].fill((byte) 0x5A);
                }
                KvLayout layout = StridedKvLayout.layerMajor(GEOMETRY, SLOTS, layers);
                KvDropRelay relay = new KvDropRelay();
                TieredStore store = TieredStore.builder().dropListener(relay).tier(host, 1.0, 0.9, PolicyKind.PRIORITY_LRU)
                        .build();
                KvManagerConfig config = KvManagerConfig.defaults().offload(OffloadMode.WRITE_BACK).sharedPublish(mode)
                        .devicePolicy(PolicyKind.PREFIX_AWARE);
                int status;
                try (KvBlockManager manager = KvBlockManager.builder(layout, hasher(model)).config(config)
                        .store(store, transfers, relay).shared(new PoolSharedBlockStore(index)).build()) {
                    out.println("ready " + pool.processSlot());
                    out.flush();
                    status = new EngineChild(manager, layout, out).serve();
                }
                store.close();
                return status;
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    private int serve() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            switch (w[0]) {
                case "turn" -> {
                    String r = turn(Long.parseLong(w[1]), Integer.parseInt(w[2]));
                    if (r == null) {
                        return 3;
                    }
                    out.println(r);
                }
                case "flush" -> {
                    flush();
                    out.println("flushed");
                }
                case "spam" -> {
                    long seed = Long.parseLong(w[1]);
                    int count = Integer.parseInt(w[2]);
                    int blocks = Integer.parseInt(w[3]);
                    for (int i = 0; i < count; i++) {
                        if (turn(seed + i, blocks) == null) {
                            return 3;
                        }
                        out.println("progress " + i);
                        out.flush();
                    }
                    idle();
                    out.println("spammed " + count);
                }
                case "quit" -> {
                    idle();
                    manager.checkInvariants();
                    out.println("bye");
                    return 0;
                }
                default -> throw new IllegalArgumentException("unknown command '" + line + "'");
            }
            out.flush();
        }
        return 0;
    }

    private void idle() {
        if (!manager.awaitIdle(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("transfers still in flight after 30 s");
        }
        manager.checkInvariants();
    }

    /** One turn; null after printing WRONG if a loaded block's bytes are not its key's. */
    private String turn(long seed, int blocks) {
        int[] tokens = tokens(seed, blocks * BT + 2);
        PrefixMatch match = manager.match(tokens, tokens.length);
        KvSequence seq = manager.newSequence();
        LoadOutcome outcome = manager.load(match, seq).join();
        for (int tries = 0; outcome.slotsShort() > 0 && outcome.failures().isEmpty() && tries < 1000; tries++) {
            manager.awaitIdle(10, TimeUnit.SECONDS); // write-back evictions free their slots when their copies land
            outcome = manager.load(match, seq).join();
        }
        if (!outcome.failures().isEmpty() || outcome.slotsShort() > 0) {
            out.println("WRONG load of conversation " + seed + ": " + outcome);
            return null;
        }
        for (int i = 0; i < seq.committedBlocks(); i++) {
            long at = mismatch(seq.slot(i), seq.key(i));
            if (at >= 0) {
                out.println("WRONG byte " + at + " of block " + i + " (" + seq.key(i) + ") of conversation " + seed
                        + ", loaded from " + match.location(i));
                return null;
            }
        }
        AllocationStatus s = manager.allocateTo(seq, tokens.length);
        for (int tries = 0; s == AllocationStatus.WAIT && tries < 1000; tries++) {
            manager.awaitIdle(10, TimeUnit.SECONDS);
            s = manager.allocateTo(seq, tokens.length);
        }
        if (s != AllocationStatus.ALLOCATED) {
            throw new IllegalStateException("no slots for conversation " + seed + ": " + s);
        }
        ObjectKey[] keys = manager.hasher().chain(tokens, tokens.length);
        for (int i = seq.committedBlocks(); i < keys.length; i++) {
            fill(seq.slot(i), keys[i]);
        }
        int committed = manager.commit(seq, tokens, tokens.length);
        manager.release(seq, PriorityClass.RECENT);
        idle();
        return "turn matched=" + match.blocks() + " device=" + match.count(BlockLocation.DEVICE) + " host="
                + match.count(BlockLocation.HOST) + " shared=" + match.count(BlockLocation.SHARED) + " loaded="
                + outcome.loadedBlocks() + " committed=" + committed;
    }

    /** Evicts every cached block: a sequence takes every slot, writes nothing, and is released. */
    private void flush() {
        KvSequence seq = manager.newSequence();
        AllocationStatus s = manager.allocate(seq, SLOTS * BT);
        for (int tries = 0; s == AllocationStatus.WAIT && tries < 1000; tries++) {
            manager.awaitIdle(10, TimeUnit.SECONDS);
            s = manager.allocateTo(seq, SLOTS * BT);
        }
        if (s != AllocationStatus.ALLOCATED) {
            throw new IllegalStateException("flush could not take every slot: " + s);
        }
        manager.release(seq, PriorityClass.RECENT);
        idle();
    }

    private void fill(int slot, ObjectKey key) {
        List<MemorySegment> segs = new ArrayList<>();
        layout.segments(slot, TokenSelection.all(BT), segs);
        long p = 0;
        for (MemorySegment s : segs) {
            for (long j = 0; j < s.byteSize(); j++, p++) {
                s.set(ValueLayout.JAVA_BYTE, j, patternByte(key, p));
            }
        }
    }

    private long mismatch(int slot, ObjectKey key) {
        List<MemorySegment> segs = new ArrayList<>();
        layout.segments(slot, TokenSelection.all(BT), segs);
        long p = 0;
        for (MemorySegment s : segs) {
            for (long j = 0; j < s.byteSize(); j++, p++) {
                if (s.get(ValueLayout.JAVA_BYTE, j) != patternByte(key, p)) {
                    return p;
                }
            }
        }
        return p == GEOMETRY.bytesPerBlock() ? -1 : p;
    }
}
