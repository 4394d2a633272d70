package dev.strata.cache.policy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link GhostTable} against a plain model of what it promises: per segment a FIFO of at most
 * {@code limit} ring positions (a taken ghost leaves its position until it is the oldest), each
 * hash a ghost of at most one segment, the newest eviction winning. Hashes are drawn from a small
 * set full of shared fingerprints (every small k has fingerprint 1, and k << 32 has k), so probe
 * runs wrap around the table, backward-shift deletion moves entries, and a fingerprint that
 * matches must be told apart by the whole hash; the table's own invariants are checked after
 * every operation.
 */
class GhostTableTest {
    private static final long TAKEN = Long.MIN_VALUE; // a model ring position whose ghost was taken

    /** The model: the rings as deques of hashes (TAKEN for a taken one), and which segment holds each hash. */
    private static final class Model {
        final ArrayDeque<Long>[] rings = newRings();
        final Map<Long, Integer> segmentOf = new HashMap<>();

        @SuppressWarnings("unchecked")
        private static ArrayDeque<Long>[] newRings() {
            return new ArrayDeque[] {new ArrayDeque<Long>(), new ArrayDeque<Long>()};
        }

        void record(long hash, int segment, int limit) {
            long h = hash == 0 ? 1 : hash;
            take(h);
            while (rings[segment].size() >= Math.max(1, limit)) {
                long oldest = rings[segment].pollFirst();
                if (oldest != TAKEN) {
                    segmentOf.remove(oldest);
                }
            }
            rings[segment].addLast(h);
            segmentOf.put(h, segment);
        }

        int take(long hash) {
            long h = hash == 0 ? 1 : hash;
            Integer seg = segmentOf.remove(h);
            if (seg == null) {
                return GhostTable.NONE;
            }
            // the only live position of h in its ring: mark it taken
            var it = rings[seg].descendingIterator();
            ArrayDeque<Long> rebuilt = new ArrayDeque<>();
            boolean marked = false;
            while (it.hasNext()) {
                long v = it.next();
                if (!marked && v == h) {
                    v = TAKEN;
                    marked = true;
                }
                rebuilt.addFirst(v);
            }
            rings[seg] = rebuilt;
            return seg;
        }

        int count(int segment) {
            int n = 0;
            for (long v : rings[segment]) {
                if (v != TAKEN) {
                    n++;
                }
            }
            return n;
        }
    }

    @Test
    void recordsAndTakesAsTheModelDoesThroughGrowthCollisionsAndForgetting() {
        recordsAndTakesAsTheModel(31);
    }

    /**
     * The same with 9 bits of each ring position kept, so the kept positions wrap around five
     * times in a run: the forced sweeps keep every entry young enough to be read back exactly.
     */
    @Test
    void ringPositionsThatWrapAroundAreReadBackExactly() {
        recordsAndTakesAsTheModel(9);
    }

    private static void recordsAndTakesAsTheModel(int seqBits) {
        for (long seed = 1; seed <= 20; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            long[] pool = new long[96];
            for (int i = 0; i < pool.length; i++) {
                long k = random.nextInt(40);
                pool[i] = switch (i % 3) {
                    case 0 -> k;             // small hashes, 0 among them (taken as 1)
                    case 1 -> k << 32;        // the same home slot as k
                    default -> random.nextLong();
                };
            }
            GhostTable table = new GhostTable(seqBits);
            Model model = new Model();
            int limit = 1;
            for (int op = 0; op < 4000; op++) {
                if (op % 400 == 0) {
                    limit = 1 + random.nextInt(op < 2000 ? 8 + op / 20 : 8); // grows (ring and table grow), then shrinks; under 2^(9-2)
                }
                long hash = pool[random.nextInt(pool.length)];
                if (random.nextInt(3) == 0) {
                    assertThat(table.take(hash)).as("seed %d op %d: take %d", seed, op, hash).isEqualTo(model.take(hash));
                } else {
                    int segment = random.nextInt(2);
                    table.record(hash, segment, limit);
                    model.record(hash, segment, limit);
                }
                table.check();
                assertThat(table.count(0)).as("seed %d op %d: ghosts of segment 0", seed, op).isEqualTo(model.count(0));
                assertThat(table.count(1)).as("seed %d op %d: ghosts of segment 1", seed, op).isEqualTo(model.count(1));
            }
            for (long hash : pool) { // every ghost the model remembers is found once, in its segment
                assertThat(table.take(hash)).as("seed %d: final take %d", seed, hash).isEqualTo(model.take(hash));
            }
            assertThat(table.count(0) + table.count(1)).isZero();
        }
    }

    /**
     * A stale entry outlives no wrap of the kept ring positions, even when the table never fills:
     * with 6 bits kept, two forgotten ghosts stay behind while a thousand ghosts are recorded and
     * taken again at once (so the table holds three entries at most and never passes half full);
     * the forced sweeps drop them before their positions read as the ring's newest.
     */
    @Test
    void staleEntriesAreSweptBeforeTheirRingPositionsWrap() {
        GhostTable table = new GhostTable(6);
        long a = 11 * 0x9E3779B97F4A7C15L;
        long b = 12 * 0x9E3779B97F4A7C15L;
        table.record(a, 0, 1);
        table.record(b, 0, 1); // forgets a: stale
        table.record(b + 1, 0, 1); // forgets b: stale
        assertThat(table.take(b + 1)).isZero();
        for (long k = 100; k < 1100; k++) {
            long h = k * 0xC2B2AE3D27D4EB4FL;
            table.record(h, 0, 1);
            table.check();
            assertThat(table.take(h)).as("ghost %d", k).isZero();
            table.check();
        }
        assertThat(table.take(a)).as("forgotten").isEqualTo(GhostTable.NONE);
        assertThat(table.take(b)).as("forgotten").isEqualTo(GhostTable.NONE);
        assertThat(table.count(0)).isZero();
    }

    /**
     * Forgotten ghosts leave stale entries behind (forgetting is lazy), which the table drops
     * when it would pass half full: a million evictions through a limit of 100 keep it at a few
     * hundred slots (at most 6 per ghost remembered), and every ghost still remembered is found.
     */
    @Test
    void staleEntriesAreDroppedSoTheTableStaysBoundedByTheLimit() {
        GhostTable table = new GhostTable();
        int limit = 100;
        for (long k = 1; k <= 1_000_000; k++) {
            table.record(k * 0x9E3779B97F4A7C15L, (int) (k & 1), limit);
        }
        table.check();
        assertThat(table.slots()).as("slots after a million evictions through 2 x %d ghosts", limit).isLessThanOrEqualTo(6 * 2 * limit);
        assertThat(table.count(0)).isEqualTo(limit);
        assertThat(table.count(1)).isEqualTo(limit);
        for (long k = 1_000_000; k > 1_000_000 - 2 * limit; k--) {
            assertThat(table.take(k * 0x9E3779B97F4A7C15L)).as("ghost %d", k).isEqualTo((int) (k & 1));
        }
        assertThat(table.take((1_000_000 - 2 * limit) * 0x9E3779B97F4A7C15L)).as("forgotten").isEqualTo(GhostTable.NONE);
        table.check();
    }
}
