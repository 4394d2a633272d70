package dev.strata.node.kv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedPublishMode;
import dev.strata.memory.Sizes;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.node.index.IndexStats;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.index.PoolSharedBlockStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Engine processes (real JVMs, {@link EngineChild}), each with its own {@link
 * dev.strata.cache.kv.KvBlockManager} over its own DEVICE slots and HOST tier, sharing KV blocks
 * through one pool's {@link PoolBlockIndex} used as the managers' shared block store: what one
 * commits the other finds, loads and verifies byte for byte; a process killed while publishing
 * leaves every published block readable and no pool space behind; another model is refused.
 */
class KvCrossProcessTest {
    private static final long CHUNK = 4 * Sizes.KiB;
    private static final long CAPACITY = 4 * Sizes.MiB;
    private static final String MODEL = "cross-process-model";
    private static final AtomicInteger COUNTER = new AtomicInteger();

    /** A pool file under /dev/shm whose block index is formatted for {@link #MODEL}. */
    private static final class SharedPool implements AutoCloseable {
        final String name = "kvx-" + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet();
        final Path path = Path.of("/dev/shm", "strata-" + name + ".pool");
        final PoolTier tier;
        final PoolBlockIndex index;

        SharedPool() {
            tier = PoolTier.open(PoolConfig.builder(name).path(path).capacity(CAPACITY).chunkSize(CHUNK)
                    .rootRegionSize(PoolBlockIndex.suggestedRegionSize(CAPACITY, CHUNK, PoolConfig.DEFAULT_PROCESS_SLOTS))
                    .sweepInterval(Duration.ZERO).conclude());
            index = PoolBlockIndex.open(tier, EngineChild.indexConfig(MODEL));
        }

        @Override
        public void close() throws IOException {
            index.close();
            tier.close();
            Files.deleteIfExists(path);
        }
    }

    /** One engine process driven through its stdin. */
    private static final class Engine implements AutoCloseable {
        final Process process;
        final BufferedReader out;
        final PrintWriter in;
        final List<String> seen = new ArrayList<>();

        Engine(SharedPool pool, String model, SharedPublishMode mode) throws IOException {
            process = EngineChild.start(pool.name, pool.path, model, mode);
            out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            in = new PrintWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8), true);
        }

        String await(String prefix) throws IOException {
            String line;
            while ((line = out.readLine()) != null) {
                seen.add(line);
                if (line.startsWith("WRONG")) {
                    throw new AssertionError("engine reported " + line + "; output " + seen);
                }
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
            throw new AssertionError("engine ended without a line starting with '" + prefix + "': " + seen);
        }

        String ask(String command, String answer) throws IOException {
            in.println(command);
            return await(answer);
        }

        /** The turn's counts: matched, device, host, shared, loaded, committed. */
        int[] turn(long seed, int blocks) throws IOException {
            String[] w = ask("turn " + seed + " " + blocks, "turn ").split(" ");
            int[] counts = new int[w.length - 1];
            for (int i = 1; i < w.length; i++) {
                counts[i - 1] = Integer.parseInt(w[i].substring(w[i].indexOf('=') + 1));
            }
            return counts;
        }

        void quit() throws Exception {
            ask("quit", "bye");
            in.close();
            assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(process.exitValue()).as("engine exit status, output " + seen).isZero();
        }

        @Override
        public void close() throws Exception {
            if (process.isAlive()) {
                process.destroyForcibly();
                process.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private static final int MATCHED = 0;
    private static final int DEVICE = 1;
    private static final int HOST = 2;
    private static final int SHARED = 3;
    private static final int LOADED = 4;
    private static final int COMMITTED = 5;

    @ParameterizedTest
    @EnumSource(SharedPublishMode.class)
    void blocksCommittedByOneEngineAreLoadedByAnotherAndBack(SharedPublishMode mode) throws Exception {
        try (SharedPool pool = new SharedPool(); Engine a = new Engine(pool, MODEL, mode)) {
            a.await("ready");
            assertThat(a.turn(1, 3)[COMMITTED]).isEqualTo(3);
            assertThat(a.turn(2, 4)[COMMITTED]).isEqualTo(4);
            if (mode == SharedPublishMode.ON_EVICTION) {
                assertThat(pool.index.stats().published()).as("nothing published before eviction").isZero();
                a.ask("flush", "flushed");
            }
            assertThat(pool.index.stats().published()).isEqualTo(7);
            try (Engine b = new Engine(pool, MODEL, mode)) {
                b.await("ready");
                int[] t = b.turn(1, 3);
                assertThat(t[MATCHED]).isEqualTo(3);
                assertThat(t[SHARED]).as("found in the shared pool, bytes checked by the engine").isEqualTo(3);
                assertThat(t[LOADED]).isEqualTo(3);
                assertThat(t[COMMITTED]).isZero();
                t = b.turn(1, 6); // extends A's conversation by three blocks of its own
                assertThat(t[MATCHED]).isEqualTo(3);
                assertThat(t[DEVICE]).isEqualTo(3);
                assertThat(t[COMMITTED]).isEqualTo(3);
                t = b.turn(2, 4);
                assertThat(t[SHARED]).isEqualTo(4);
                if (mode == SharedPublishMode.ON_EVICTION) {
                    b.ask("flush", "flushed");
                }
                assertThat(pool.index.stats().published()).isEqualTo(10);
                b.quit();
            }
            a.ask("flush", "flushed"); // A's own copies leave its DEVICE slots (to its HOST tier)
            int[] t = a.turn(1, 6);
            assertThat(t[MATCHED]).isEqualTo(6);
            assertThat(t[HOST]).as("A's own blocks, from its HOST tier").isEqualTo(3);
            assertThat(t[SHARED]).as("B's blocks, from the shared pool").isEqualTo(3);
            assertThat(t[LOADED]).isEqualTo(6);
            a.quit();
            assertPoolHoldsExactlyThePublishedBlocks(pool, List.of(new long[] {1, 6}, new long[] {2, 4}));
        }
    }

    @Test
    void anEngineKilledWhilePublishingLeavesEveryPublishedBlockReadableAndNoSpace() throws Exception {
        int conversations = 120;
        int blocks = 4;
        try (SharedPool pool = new SharedPool()) {
            try (Engine a = new Engine(pool, MODEL, SharedPublishMode.AT_COMMIT)) {
                a.await("ready");
                a.in.println("spam 1000 " + conversations + " " + blocks);
                a.await("progress 15");
                a.process.destroyForcibly(); // SIGKILL, mid-publish
                assertThat(a.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
            }
            pool.index.reap();
            List<long[]> all = new ArrayList<>();
            for (int i = 0; i < conversations; i++) {
                all.add(new long[] {1000 + i, blocks});
            }
            int published = assertPoolHoldsExactlyThePublishedBlocks(pool, all);
            assertThat(published).as("blocks A published before it died").isGreaterThanOrEqualTo(16 * blocks);
            // a fresh engine finds and loads every published block
            try (Engine b = new Engine(pool, MODEL, SharedPublishMode.AT_COMMIT)) {
                b.await("ready");
                int found = 0;
                for (int i = 0; i < conversations; i++) {
                    int[] t = b.turn(1000 + i, blocks);
                    assertThat(t[LOADED]).isEqualTo(t[MATCHED]);
                    found += t[SHARED];
                }
                assertThat(found).as("B loaded every block A published").isEqualTo(published);
                b.quit();
            }
            assertPoolHoldsExactlyThePublishedBlocks(pool, all);
            assertThat(pool.index.stats().published()).isEqualTo(conversations * blocks);
        }
    }

    @Test
    void anEngineOfAnotherModelIsRefused() throws Exception {
        try (SharedPool pool = new SharedPool(); Engine b = new Engine(pool, "another-model", SharedPublishMode.AT_COMMIT)) {
            String line = b.await("refused");
            assertThat(line).contains("model fingerprint " + EngineChild.fingerprint(MODEL))
                    .contains("this process uses model fingerprint " + EngineChild.fingerprint("another-model"))
                    .contains(pool.name).contains("refusing to attach");
            assertThat(b.process.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(b.process.exitValue()).isEqualTo(4);
            assertThat(pool.tier.attachedProcesses()).as("the refused engine is gone from the pool").isEqualTo(1);
        }
    }

    /**
     * After reaping: no reservation, pin or pin is left, every published block of the
     * conversations ({seed, blocks}) has its key's bytes, and the pool's used space is exactly
     * theirs; returns how many blocks are published.
     */
    private static int assertPoolHoldsExactlyThePublishedBlocks(SharedPool pool, List<long[]> conversations) {
        pool.index.reap();
        IndexStats stats = pool.index.stats();
        assertThat(stats.writing()).as("reservations left behind").isZero();
        assertThat(stats.livePins()).as("stray pins").isZero();
        assertThat(stats.pinned()).as("stray pins").isZero();
        PoolSharedBlockStore store = new PoolSharedBlockStore(pool.index);
        int blockBytes = (int) EngineChild.GEOMETRY.bytesPerBlock();
        int published = 0;
        for (long[] c : conversations) {
            int[] tokens = EngineChild.tokens(c[0], (int) c[1] * EngineChild.BT + 2);
            ObjectKey[] keys = EngineChild.hasher(MODEL).chain(tokens, tokens.length);
            for (int i = 0; i < c[1]; i++) {
                byte[] back = new byte[blockBytes];
                if (!store.read(keys[i], List.of(MemorySegment.ofArray(back)))) {
                    continue;
                }
                published++;
                for (int p = 0; p < back.length; p++) {
                    if (back[p] != EngineChild.patternByte(keys[i], p)) {
                        throw new AssertionError("byte " + p + " of published block " + i + " of conversation " + c[0]);
                    }
                }
            }
        }
        assertThat(stats.published()).as("published blocks").isEqualTo(published);
        assertThat(pool.tier.used()).as("pool space is exactly the published blocks")
                .isEqualTo(published * Sizes.alignUp(blockBytes, CHUNK));
        assertThat(pool.tier.usedByScan()).isEqualTo(pool.tier.used());
        return published;
    }
}
