package dev.strata.node.index;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.ObjectKey;
import dev.strata.memory.Sizes;
import dev.strata.memory.pool.PoolTier;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Real JVMs ({@link IndexChild}) sharing KV blocks through one pool's block index. */
class PoolBlockIndexMultiProcessTest {
    private static final long CHUNK = 16 * Sizes.KiB;

    private static String awaitLine(BufferedReader in, String prefix) throws Exception {
        String line;
        List<String> seen = new ArrayList<>();
        while ((line = in.readLine()) != null) {
            if (line.startsWith(prefix)) {
                return line;
            }
            seen.add(line);
        }
        throw new AssertionError("child ended without printing a line starting with '" + prefix + "': " + seen);
    }

    private static List<String> finish(Process p) throws Exception {
        List<String> lines = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))
                .lines().toList();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("child finished").isTrue();
        assertThat(p.exitValue()).as("child exit status, output " + lines).isZero();
        return lines;
    }

    private static void kill(Process p) throws Exception {
        p.destroyForcibly(); // SIGKILL
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }

    /** Every published block's bytes are right, and the pool holds exactly the published blocks. */
    private static void assertNoLeaks(PoolBlockIndex index, PoolTier tier, int keys) {
        index.reap();
        IndexStats stats = index.stats();
        assertThat(stats.writing()).as("reservations left by the dead").isZero();
        assertThat(stats.evicting()).isZero();
        assertThat(stats.livePins()).as("stray pins").isZero();
        assertThat(stats.pinned()).as("stray pins").isZero();
        assertThat(stats.quarantined()).isZero();
        PoolSharedBlockStore store = new PoolSharedBlockStore(index);
        long expectedUsed = 0;
        long expectedBytes = 0;
        int published = 0;
        for (int i = 0; i < keys; i++) {
            ObjectKey k = IndexChild.key(i);
            if (!index.isPublished(k.high(), k.low())) {
                continue;
            }
            byte[] back = new byte[IndexChild.length(i)];
            assertThat(store.read(k, List.of(MemorySegment.ofArray(back)))).isTrue();
            assertThat(back).isEqualTo(TestPools.content(k.high(), k.low(), back.length));
            expectedUsed += Sizes.alignUp(back.length, CHUNK);
            expectedBytes += back.length;
            published++;
        }
        assertThat(stats.published()).isEqualTo(published);
        assertThat(stats.publishedBytes()).isEqualTo(expectedBytes);
        assertThat(tier.usedByScan()).as("pool space is exactly the published blocks").isEqualTo(expectedUsed);
        assertThat(tier.used()).isEqualTo(expectedUsed);
    }

    @Test
    void twoWritersAndSeveralReadersShareBlocksThroughRandomKills() throws Exception {
        int keys = 120; // about 9.4 MiB of blocks for a 5 MiB pool: writers evict
        SplittableRandom random = new SplittableRandom(0x5EED_1DE7L);
        try (TestPools files = new TestPools("mp");
             PoolTier tier = files.open(5 * Sizes.MiB, CHUNK);
             PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
            List<Process> survivors = new ArrayList<>();
            List<Process> victims = new ArrayList<>();
            String path = files.path.toString();
            for (int w = 0; w < 2; w++) {
                Process p = IndexChild.start("write", files.name, path, Long.toString(random.nextLong()), "4000", Integer.toString(keys));
                (w == 0 ? victims : survivors).add(p);
            }
            for (int r = 0; r < 3; r++) {
                Process p = IndexChild.start("read", files.name, path, Long.toString(random.nextLong()), "4000", Integer.toString(keys));
                (r == 0 ? victims : survivors).add(p);
            }
            // one writer and one reader are killed with SIGKILL part-way (mid-copy, holding a
            // reservation or a pin, whatever they are doing at the time)
            for (Process v : victims) {
                BufferedReader out = new BufferedReader(new InputStreamReader(v.getInputStream(), StandardCharsets.UTF_8));
                awaitLine(out, "progress");
                Thread.sleep(random.nextInt(400));
                kill(v);
            }
            List<String> outputs = new ArrayList<>();
            for (Process s : survivors) {
                outputs.addAll(finish(s));
            }
            assertThat(outputs).anyMatch(l -> l.startsWith("published")).anyMatch(l -> l.startsWith("read hits"));
            assertThat(outputs).noneMatch(l -> l.startsWith("WRONG"));
            assertThat(outputs.stream().filter(l -> l.startsWith("read hits"))
                    .mapToInt(l -> Integer.parseInt(l.split(" ")[2])).sum()).as("readers found shared blocks").isPositive();
            assertNoLeaks(index, tier, keys);
        }
    }

    @Test
    void pinsAndReservationsOfKilledProcessesAreClearedByTheReaper() throws Exception {
        int keys = 4;
        try (TestPools files = new TestPools("dead");
             PoolTier tier = files.open(4 * Sizes.MiB, CHUNK);
             PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
            PoolSharedBlockStore store = new PoolSharedBlockStore(index);
            for (int i = 0; i < 2; i++) {
                ObjectKey k = IndexChild.key(i);
                store.publish(k, List.of(MemorySegment.ofArray(TestPools.content(k.high(), k.low(), IndexChild.length(i)))));
            }
            String path = files.path.toString();
            Process holder = IndexChild.start("hold", files.name, path, "0");
            Process reserver = IndexChild.start("reserve", files.name, path, "3");
            BufferedReader holderOut = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            BufferedReader reserverOut = new BufferedReader(new InputStreamReader(reserver.getInputStream(), StandardCharsets.UTF_8));
            assertThat(awaitLine(holderOut, "held")).startsWith("held ");
            assertThat(Long.parseLong(awaitLine(reserverOut, "reserved").split(" ")[1])).isNotNegative();
            assertThat(index.stats().pinned()).isEqualTo(1);
            assertThat(index.stats().writing()).isEqualTo(1);
            long unpinned = Sizes.alignUp(IndexChild.length(1), CHUNK);
            assertThat(index.evict(Long.MAX_VALUE)).as("only the unpinned block goes").isEqualTo(unpinned);
            assertThat(index.isPublished(IndexChild.key(0).high(), IndexChild.key(0).low())).isTrue();
            assertThat(index.reap()).as("nothing to reap while both live").isZero();

            kill(holder);
            kill(reserver);
            assertThat(index.stats().pinned()).as("a dead process's pin no longer holds its block").isZero();
            assertThat(index.reap()).as("the dead pin and the dead reservation").isEqualTo(2);
            assertThat(index.stats().writing()).isZero();
            assertThat(index.reap()).isZero();
            assertThat(tier.attachedProcesses()).isEqualTo(1);
            assertNoLeaks(index, tier, keys);
            assertThat(index.evict(Long.MAX_VALUE)).isEqualTo(Sizes.alignUp(IndexChild.length(0), CHUNK));
            assertThat(tier.used()).isZero();
        }
    }

    @Test
    void aFreshProcessSeesEveryBlockAfterAllOthersExited() throws Exception {
        int keys = 40;
        try (TestPools files = new TestPools("reattach")) {
            try (PoolTier tier = files.open(16 * Sizes.MiB, CHUNK);
                 PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
                // only formats the index; the children publish
                assertThat(index.stats().published()).isZero();
            }
            String path = files.path.toString();
            List<String> written = finish(IndexChild.start("write", files.name, path, "99", "600", Integer.toString(keys)));
            assertThat(written).anyMatch(l -> l.startsWith("published"));
            // nobody has the pool open now; a fresh process attaches
            List<String> verified = finish(IndexChild.start("verify", files.name, path, Integer.toString(keys)));
            int seen = Integer.parseInt(verified.stream().filter(l -> l.startsWith("verified")).findFirst().orElseThrow()
                    .split(" ")[1]);
            try (PoolTier tier = PoolTier.open(files.config(16 * Sizes.MiB, CHUNK).conclude());
                 PoolBlockIndex index = PoolBlockIndex.open(tier, TestPools.identity().conclude())) {
                assertThat(index.stats().published()).isEqualTo(seen).isPositive();
                assertNoLeaks(index, tier, keys);
                long[] all = new long[2 * keys];
                for (int i = 0; i < keys; i++) {
                    all[2 * i] = IndexChild.key(i).high();
                    all[2 * i + 1] = IndexChild.key(i).low();
                }
                int leading = 0;
                while (leading < keys && index.isPublished(all[2 * leading], all[2 * leading + 1])) {
                    leading++;
                }
                assertThat(index.matchPrefix(all, 0, keys)).isEqualTo(leading);
            }
        }
    }
}
