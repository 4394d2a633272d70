package dev.strata.node.daemon;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import dev.strata.cache.kv.SharedPoolHealth;
import dev.strata.node.client.NodeAccess;
import dev.strata.node.rpc.ChildJvm;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * The shared pool failing under a running process: its file truncated (a fault on the mapping)
 * or its node daemon killed. The store a server uses ({@link NodeAccess#blocks()}) answers
 * without the pool instead of throwing, reports the pool out of the chain in its health, takes it
 * back when the daemon returns on the same pool, and closes in bounded time.
 */
class PoolOutageTest {
    private static final long CAPACITY = 8L << 20;
    private static final int BLOCK = 30_001; // bytes per block

    private static ObjectKey[] keys(int base, int n) {
        ObjectKey[] keys = new ObjectKey[n];
        for (int i = 0; i < n; i++) {
            keys[i] = NodeTestSupport.key(base + i);
        }
        return keys;
    }

    private static boolean readsIntact(SharedBlockStore blocks, ObjectKey key) {
        MemorySegment got = MemorySegment.ofArray(new byte[BLOCK]);
        return blocks.read(key, List.of(got)) && got.mismatch(NodeTestSupport.content(key, BLOCK)) == -1;
    }

    @ParameterizedTest(name = "truncated to {0} bytes")
    @ValueSource(longs = {1L << 20, 0})
    void aTruncatedPoolLeavesTheChainForGoodWithoutFailingACallerAndClosesInBoundedTime(long truncatedTo) throws Exception {
        try (NodeTestSupport t = new NodeTestSupport("truncated")) {
            NodeAccess access = NodeAccess.open(t.access(NodeAccess.Mode.EMBEDDED, CAPACITY));
            SharedBlockStore blocks = access.blocks();
            ObjectKey[] keys = keys(0, 40);
            for (ObjectKey k : keys) {
                assertThat(blocks.publish(k, List.of(NodeTestSupport.content(k, BLOCK)))).isEqualTo(PublishStatus.PUBLISHED);
            }
            assertThat(blocks.health().ok()).isTrue();
            assertThat(readsIntact(blocks, keys[39])).isTrue();
            try (FileChannel ch = FileChannel.open(t.pool, StandardOpenOption.WRITE)) {
                ch.truncate(truncatedTo);
            }

            // the first access that meets the missing pages takes the pool out; no call throws
            boolean anyRead = false;
            for (ObjectKey k : keys) {
                anyRead |= blocks.read(k, List.of(MemorySegment.ofArray(new byte[BLOCK])));
            }
            ObjectKey fresh = NodeTestSupport.key(500);
            PublishStatus published = blocks.publish(fresh, List.of(NodeTestSupport.content(fresh, BLOCK)));
            SharedPoolHealth.Status health = blocks.health();
            assertThat(health.state()).as("%s", health).isEqualTo(SharedPoolHealth.State.FAILED);
            assertThat(health.reason()).contains("truncated");
            assertThat(health.failures()).isEqualTo(1);
            assertThat(anyRead && published == PublishStatus.PUBLISHED).as("not every block survived the truncation").isFalse();
            assertThat(access.pool().fault()).isNotNull();
            assertThat(blocks.tier()).as("the faulted mapping is not offered for metrics").isNull();
            assertThat(blocks.matchPrefix(keys, 0, keys.length)).isZero();
            assertThat(blocks.read(keys[0], List.of(MemorySegment.ofArray(new byte[BLOCK])))).isFalse();
            assertThat(blocks.publish(fresh, List.of(NodeTestSupport.content(fresh, BLOCK)))).isEqualTo(PublishStatus.UNAVAILABLE);
            assertTimeoutPreemptively(Duration.ofSeconds(20), access::close);
        }
    }

    @Test
    void aKilledDaemonTakesThePoolOutUntilItIsBackThenThePoolServesEveryBlockAgain() throws Exception {
        try (NodeTestSupport t = new NodeTestSupport("outage")) {
            String[] args = {t.pool.toString(), t.rpc.toString(), Long.toString(CAPACITY)};
            ObjectKey[] keys = keys(2000, 30);
            try (ChildJvm first = ChildJvm.start(NodeDaemonMain.class, args)) {
                first.expect("strata node ready", 30_000);
                try (NodeAccess client = NodeAccess.open(t.access(NodeAccess.Mode.DAEMON, CAPACITY))) {
                    SharedBlockStore blocks = client.blocks();
                    for (int i = 0; i < 20; i++) {
                        assertThat(blocks.publish(keys[i], List.of(NodeTestSupport.content(keys[i], BLOCK))))
                                .isEqualTo(PublishStatus.PUBLISHED);
                    }
                    first.kill(); // SIGKILL

                    // while it is away: answers without the pool, never an exception
                    assertThat(blocks.matchPrefix(keys, 0, keys.length)).isZero();
                    SharedPoolHealth.Status away = blocks.health();
                    assertThat(away.state()).isEqualTo(SharedPoolHealth.State.UNAVAILABLE);
                    assertThat(away.reason()).contains(t.rpc.toString());
                    assertThat(blocks.read(keys[0], List.of(MemorySegment.ofArray(new byte[BLOCK])))).isFalse();
                    assertThat(blocks.publish(keys[20], List.of(NodeTestSupport.content(keys[20], BLOCK))))
                            .isEqualTo(PublishStatus.UNAVAILABLE);
                    assertThat(blocks.tier()).as("the mapping is intact: its metrics stay").isNotNull();
                    Thread.sleep(NodeAccess.RETRY_INTERVAL.toMillis() + 200); // probes find nobody
                    assertThat(blocks.matchPrefix(keys, 0, keys.length)).isZero();
                    assertThat(blocks.health().state()).isEqualTo(SharedPoolHealth.State.UNAVAILABLE);
                    assertThat(blocks.health().failures()).as("one outage").isEqualTo(1);

                    try (ChildJvm second = ChildJvm.start(NodeDaemonMain.class, args)) {
                        second.expect("strata node ready", 30_000);
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                        int matched;
                        do {
                            matched = blocks.matchPrefix(keys, 0, keys.length);
                            Thread.sleep(matched == 20 ? 0 : 50);
                        } while (matched != 20 && System.nanoTime() < deadline);
                        assertThat(matched).as("re-attached by itself; every block published before is found").isEqualTo(20);
                        SharedPoolHealth.Status back = blocks.health();
                        assertThat(back.ok()).isTrue();
                        assertThat(back.reattached()).isEqualTo(1);
                        for (int i = 0; i < 20; i++) {
                            assertThat(readsIntact(blocks, keys[i])).as("block %d", i).isTrue();
                        }
                        PublishStatus again;
                        do { // the dead daemon's reservations are reaped by the new one
                            again = blocks.publish(keys[20], List.of(NodeTestSupport.content(keys[20], BLOCK)));
                        } while (again == PublishStatus.EXISTS && System.nanoTime() < deadline);
                        assertThat(again).isEqualTo(PublishStatus.PUBLISHED);
                        assertThat(readsIntact(blocks, keys[20])).isTrue();
                    }
                }
            }
        }
    }

    @Test
    void aDaemonBackOnAPoolFileCreatedAgainIsNotReadThroughTheOldMapping() throws Exception {
        try (NodeTestSupport t = new NodeTestSupport("replaced")) {
            String[] args = {t.pool.toString(), t.rpc.toString(), Long.toString(CAPACITY)};
            ObjectKey[] keys = keys(3000, 10);
            try (ChildJvm first = ChildJvm.start(NodeDaemonMain.class, args)) {
                first.expect("strata node ready", 30_000);
                try (NodeAccess client = NodeAccess.open(t.access(NodeAccess.Mode.DAEMON, CAPACITY))) {
                    SharedBlockStore blocks = client.blocks();
                    for (ObjectKey k : keys) {
                        assertThat(blocks.publish(k, List.of(NodeTestSupport.content(k, BLOCK)))).isEqualTo(PublishStatus.PUBLISHED);
                    }
                    first.kill();
                    assertThat(blocks.matchPrefix(keys, 0, keys.length)).isZero();
                    Files.delete(t.pool); // the next daemon creates a new pool at the same path
                    try (ChildJvm second = ChildJvm.start(NodeDaemonMain.class, args)) {
                        second.expect("strata node ready", 30_000);
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                        while (blocks.health().state() == SharedPoolHealth.State.UNAVAILABLE && System.nanoTime() < deadline) {
                            assertThat(blocks.matchPrefix(keys, 0, keys.length)).isZero();
                            Thread.sleep(50);
                        }
                        SharedPoolHealth.Status health = blocks.health();
                        assertThat(health.state()).isEqualTo(SharedPoolHealth.State.FAILED);
                        assertThat(health.reason()).contains("replaced").contains(t.pool.toString());
                        assertThat(blocks.read(keys[0], List.of(MemorySegment.ofArray(new byte[BLOCK])))).isFalse();
                    }
                }
            }
        }
    }
}
