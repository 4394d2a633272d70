package dev.strata.bench;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.AllocationStatus;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvManagerConfig;
import dev.strata.cache.kv.KvSequence;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.OffloadMode;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.PrefixMatch;
import dev.strata.cache.kv.StridedKvLayout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The KV block manager's bookkeeping speed on one thread, per block: a request of one block that
 * misses (match, allocate a slot evicting the least recently used cached block, commit under the
 * chained key computed by the match, release) and one that hits (match, share the resident block,
 * release). No bytes
 * move: the figures are the manager's own cost (hashing the block's tokens included), against
 * the same key set through a {@link HashMap} (get, put, remove per key) measured in the same run.
 *
 * <p>Confined to the calling thread.
 */
public final class KvBlockOpsMeasure {
    /** The goal on the value: two million block operations per second on one thread. */
    public static final String GOAL = ">= 2000000 ops/s";
    private static final String BASELINE = "java.util.HashMap get+put+remove, same keys";

    private KvBlockOpsMeasure() {
    }

    /** Measures both figures; {@code quick} uses fewer keys and rounds. */
    public static List<Figure> figures(boolean quick) {
        int keys = quick ? 8192 : 65536;
        int rounds = quick ? 3 : Trials.FULL_ROUNDS;
        int passes = quick ? 4 : 8; // passes over the key set per measurement
        KvGeometry geometry = KvGeometry.of(2, 2, 8, KvDtype.FP16);
        int bt = geometry.blockTokens();
        SplittableRandom random = new SplittableRandom(0x5EEDL);
        int[][] blocks = new int[keys][bt];
        for (int[] b : blocks) {
            for (int i = 0; i < bt; i++) {
                b[i] = random.nextInt(150_000);
            }
        }
        PrefixHasher hasher = new PrefixHasher(PrefixHashContext.of(ModelFingerprint.of("bench-model", geometry), geometry));
        ObjectKey[] keySet = new ObjectKey[keys];
        for (int i = 0; i < keys; i++) {
            keySet[i] = hasher.next(hasher.root(), blocks[i], 0);
        }
        List<Figure> figures = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            // misses: half as many slots as keys, visited in a cycle, so LRU evicts every block before its reuse
            int missSlots = keys / 2;
            MemorySegment missKv = arena.allocate(StridedKvLayout.blockMajorBytes(geometry, missSlots), 64);
            KvBlockManager missing = manager(geometry, hasher, missSlots, missKv);
            // hits: a slot for every key, all committed before measuring
            MemorySegment hitKv = arena.allocate(StridedKvLayout.blockMajorBytes(geometry, keys), 64);
            KvBlockManager hitting = manager(geometry, hasher, keys, hitKv);
            HashMap<ObjectKey, Integer> map = new HashMap<>(2 * keys);
            try {
                runBlocks(hitting, blocks, bt, 1); // commits every key
                long warmUntil = System.nanoTime() + (quick ? 500_000_000L : 4_000_000_000L);
                while (System.nanoTime() < warmUntil) { // until the hot paths are compiled: steady state only
                    runBlocks(missing, blocks, bt, 1);
                    runBlocks(hitting, blocks, bt, 1);
                    mapOps(map, keySet, 1);
                }
                Paired miss = Trials.paired(rounds, () -> mapOps(map, keySet, passes),
                        () -> runBlocks(missing, blocks, bt, passes));
                figures.add(Figure.paired("kv_block_match_commit_release_ops", "ops/s", BASELINE, miss, GOAL)
                        .withNote("one-block requests that miss: match, allocate (evicting the LRU cached block), commit, release; "
                                + keys + " keys, " + missSlots + " slots"));
                Paired hit = Trials.paired(rounds, () -> mapOps(map, keySet, passes),
                        () -> runBlocks(hitting, blocks, bt, passes));
                figures.add(Figure.paired("kv_block_match_share_release_ops", "ops/s", BASELINE, hit, GOAL)
                        .withNote("one-block requests that hit a resident block: match, load by reference, release; " + keys
                                + " keys"));
            } finally {
                missing.close();
                hitting.close();
            }
        }
        return figures;
    }

    private static KvBlockManager manager(KvGeometry geometry, PrefixHasher hasher, int slots, MemorySegment kv) {
        return KvBlockManager.builder(StridedKvLayout.blockMajor(geometry, slots, kv), hasher)
                .config(KvManagerConfig.defaults().offload(OffloadMode.NONE)).build();
    }

    /** Block operations per second of one-block requests over every key, {@code passes} times. */
    private static double runBlocks(KvBlockManager m, int[][] blocks, int bt, int passes) {
        long start = System.nanoTime();
        long ops = 0;
        for (int p = 0; p < passes; p++) {
            for (int[] tokens : blocks) {
                KvSequence s = m.newSequence();
                PrefixMatch match = m.match(tokens, bt);
                if (match.blocks() == 1) {
                    m.load(match, s);
                } else {
                    if (m.allocate(s, bt) != AllocationStatus.ALLOCATED) {
                        throw new IllegalStateException("no slot for a one-block request: " + m.stats().freeSlots() + " free");
                    }
                    m.commit(s, match, 1); // the keys the match computed for these tokens
                }
                m.release(s);
                ops++;
            }
        }
        return ops / ((System.nanoTime() - start) / 1e9);
    }

    /** Operations per second of get, put and remove per key on a map. */
    private static double mapOps(HashMap<ObjectKey, Integer> map, ObjectKey[] keys, int passes) {
        long start = System.nanoTime();
        long ops = 0;
        int sink = 0;
        for (int p = 0; p < passes; p++) {
            for (int i = 0; i < keys.length; i++) {
                Integer v = map.get(keys[i]);
                sink += v == null ? 1 : v;
                map.put(keys[i], i);
                sink += map.remove(keys[i]);
                ops++;
            }
        }
        if (sink == 42) {
            System.err.print(""); // keeps the loop's work observable
        }
        return ops / ((System.nanoTime() - start) / 1e9);
    }
}
