package dev.strata.node.daemon;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import dev.strata.node.client.NodeAccess;
import dev.strata.node.client.RemoteBlockIndex;
import dev.strata.node.index.BlockIndex;
import dev.strata.node.index.IndexIdentityException;
import dev.strata.node.index.IndexStats;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.index.PoolIndexInspector;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The daemon in this JVM, clients through the RPC: the same index behaviour as embedded. */
@SuppressWarnings("try") // resources held open for the test's duration
class NodeDaemonTest {
    private static final long CAPACITY = 8L << 20;

    @Test
    void blocksPublishedThroughTheDaemonAreFoundAndReadBack() throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        try (NodeTestSupport t = new NodeTestSupport("basic");
             NodeDaemon daemon = NodeDaemon.start(t.daemonConfig(CAPACITY).conclude(), new PrintStream(log, true));
             NodeAccess a = NodeAccess.open(t.access(NodeAccess.Mode.DAEMON, CAPACITY));
             NodeAccess b = NodeAccess.open(t.access(NodeAccess.Mode.AUTO, CAPACITY))) {
            assertThat(log.toString(StandardCharsets.UTF_8)).startsWith("strata node ready: pid " + ProcessHandle.current().pid());
            assertThat(a.mode()).isEqualTo(NodeAccess.Mode.DAEMON);
            assertThat(b.mode()).as("AUTO attaches to the live daemon").isEqualTo(NodeAccess.Mode.DAEMON);
            int n = 37;
            ObjectKey[] keys = new ObjectKey[50];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = NodeTestSupport.key(i);
            }
            for (int i = 0; i < n; i++) {
                int len = 1000 + 77 * i; // odd sizes, several chunks for some
                assertThat(a.blocks().publish(keys[i], List.of(NodeTestSupport.content(keys[i], len)))).isEqualTo(PublishStatus.PUBLISHED);
            }
            assertThat(b.blocks().publish(keys[3], List.of(NodeTestSupport.content(keys[3], 10)))).isEqualTo(PublishStatus.EXISTS);
            // 50 keys take 7 requests of 8 keys at 128 payload bytes per slot; the first 37 are published
            assertThat(b.blocks().matchPrefix(keys, 0, 50)).isEqualTo(n);
            assertThat(b.blocks().matchPrefix(keys, 5, 10)).isEqualTo(10);
            assertThat(b.blocks().matchPrefix(keys, 36, 3)).isEqualTo(1);
            for (int i = 0; i < n; i++) {
                int len = 1000 + 77 * i;
                MemorySegment got = MemorySegment.ofArray(new byte[len]);
                assertThat(b.blocks().read(keys[i], List.of(got))).isTrue();
                assertThat(got.mismatch(NodeTestSupport.content(keys[i], len))).as("block %d", i).isEqualTo(-1);
            }
            assertThat(b.blocks().read(keys[40], List.of(MemorySegment.ofArray(new byte[10])))).isFalse();
            IndexStats s = b.index().stats();
            assertThat(s.published()).isEqualTo(n);
            assertThat(s.modelFingerprint()).isEqualTo(NodeTestSupport.MODEL);
            assertThat(s.livePins()).as("reads released their pins").isZero();
            assertThat(daemon.index().stats().published()).isEqualTo(n);
        }
    }

    @Test
    void errorsAndOwnershipFollowTheEmbeddedIndex() throws Exception {
        try (NodeTestSupport t = new NodeTestSupport("errors");
             NodeDaemon daemon = NodeDaemon.start(t.daemonConfig(CAPACITY).conclude(), new PrintStream(new ByteArrayOutputStream()));
             NodeAccess a = NodeAccess.open(t.access(NodeAccess.Mode.DAEMON, CAPACITY));
             NodeAccess b = NodeAccess.open(t.access(NodeAccess.Mode.DAEMON, CAPACITY))) {
            BlockIndex ia = a.index();
            BlockIndex ib = b.index();
            ObjectKey k = NodeTestSupport.key(1);
            assertThatThrownBy(() -> ia.reserve(k.high(), k.low(), 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("0");
            long handle = ia.reserve(k.high(), k.low(), 5000);
            assertThat(handle).isNotNegative();
            assertThat(ib.reserve(k.high(), k.low(), 5000)).isEqualTo(BlockIndex.EXISTS);
            assertThat(ib.publish(k.high(), k.low(), 5000, 1)).as("b does not hold a's reservation").isEqualTo(BlockIndex.NOT_RESERVED);
            assertThat(ib.abort(k.high(), k.low())).isEqualTo(BlockIndex.NOT_RESERVED);
            assertThat(ia.abort(k.high(), k.low())).isEqualTo(BlockIndex.OK);
            assertThat(a.blocks().publish(k, List.of(NodeTestSupport.content(k, 5000)))).isEqualTo(PublishStatus.PUBLISHED);
            long[] loc = new long[BlockIndex.LOCATION_LONGS];
            long pin = ia.acquire(k.high(), k.low(), loc);
            assertThat(pin).isPositive();
            assertThat(loc[BlockIndex.LENGTH]).isEqualTo(5000);
            assertThatThrownBy(() -> ib.release(pin)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("pin " + pin + " is not a pin of this process");
            assertThat(ia.release(pin)).isEqualTo(BlockIndex.OK);
            assertThatThrownBy(() -> ia.release(pin)).isInstanceOf(IllegalArgumentException.class);
            ObjectKey missing = NodeTestSupport.key(2);
            assertThat(ia.acquire(missing.high(), missing.low(), loc)).isEqualTo(BlockIndex.NOT_FOUND);
            // a client that closes with a reservation and a pin open leaves neither behind
            ObjectKey pending = NodeTestSupport.key(3);
            assertThat(ib.reserve(pending.high(), pending.low(), 3000)).isNotNegative();
            assertThat(ib.acquire(k.high(), k.low(), loc)).isPositive();
            b.close();
            long deadline = System.nanoTime() + 5_000_000_000L;
            long got;
            do {
                got = ia.reserve(pending.high(), pending.low(), 3000);
            } while (got == BlockIndex.EXISTS && System.nanoTime() < deadline);
            assertThat(got).as("the closed client's reservation was aborted by the daemon").isNotNegative();
            assertThat(ia.abort(pending.high(), pending.low())).isEqualTo(BlockIndex.OK);
            assertThat(ia.stats().livePins()).as("the closed client's pin was released by the daemon").isZero();
        }
    }

    @Test
    void aClientOfAnotherModelIsRefused() throws Exception {
        try (NodeTestSupport t = new NodeTestSupport("identity");
             NodeDaemon daemon = NodeDaemon.start(t.daemonConfig(CAPACITY).conclude(), new PrintStream(new ByteArrayOutputStream()))) {
            assertThatThrownBy(() -> RemoteBlockIndex.attach(t.rpc, NodeTestSupport.HASH_VERSION, new ObjectKey(1, 2)))
                    .isInstanceOf(IndexIdentityException.class).hasMessageContaining("00000000000000010000000000000002")
                    .hasMessageContaining("refusing to attach");
            assertThatThrownBy(() -> RemoteBlockIndex.attach(t.rpc, 9, NodeTestSupport.MODEL))
                    .isInstanceOf(IndexIdentityException.class).hasMessageContaining("block-hash version 9");
        }
    }

    @Test
    void aDaemonGivenNoModelLearnsTheFirstClientsAndKeepsIt() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (NodeTestSupport t = new NodeTestSupport("learn");
             NodeDaemon daemon = NodeDaemon.start(t.daemonConfig(CAPACITY).hashVersion(0).modelFingerprint(null).conclude(),
                     new PrintStream(out, true, StandardCharsets.UTF_8))) {
            assertThat(daemon.index().modelFingerprint()).isEqualTo(PoolBlockIndex.NO_FINGERPRINT);
            assertThat(out.toString(StandardCharsets.UTF_8)).contains("model learned from the first server to attach, with its hash version");
            try (RemoteBlockIndex first = RemoteBlockIndex.attach(t.rpc, NodeTestSupport.HASH_VERSION, NodeTestSupport.MODEL)) {
                assertThat(daemon.index().modelFingerprint()).isEqualTo(NodeTestSupport.MODEL);
                assertThat(daemon.index().hashVersion()).isEqualTo(NodeTestSupport.HASH_VERSION);
                IndexStats stored = PoolIndexInspector.inspect(List.of(t.pool)).orElseThrow();
                assertThat(stored.modelFingerprint()).as("kept in the index header").isEqualTo(NodeTestSupport.MODEL);
                assertThat(stored.hashVersion()).isEqualTo(NodeTestSupport.HASH_VERSION);
            }
            assertThatThrownBy(() -> RemoteBlockIndex.attach(t.rpc, NodeTestSupport.HASH_VERSION, new ObjectKey(1, 2)))
                    .as("learned for good: another model is refused after the first client detached")
                    .isInstanceOf(IndexIdentityException.class).hasMessageContaining(NodeTestSupport.MODEL.toString())
                    .hasMessageContaining("00000000000000010000000000000002").hasMessageContaining("node.model-fingerprint");
            try (RemoteBlockIndex again = RemoteBlockIndex.attach(t.rpc, NodeTestSupport.HASH_VERSION, NodeTestSupport.MODEL)) {
                assertThat(again.modelFingerprint()).isEqualTo(NodeTestSupport.MODEL);
            }
        }
    }

    @Test
    void aDaemonGivenAVersionButNoModelLearnsOnlyFromAClientOfThatVersion() throws Exception {
        try (NodeTestSupport t = new NodeTestSupport("learn-version");
             NodeDaemon daemon = NodeDaemon.start(t.daemonConfig(CAPACITY).modelFingerprint(null).conclude(),
                     new PrintStream(new ByteArrayOutputStream()))) {
            assertThatThrownBy(() -> RemoteBlockIndex.attach(t.rpc, 9, new ObjectKey(1, 2)))
                    .isInstanceOf(IndexIdentityException.class).hasMessageContaining("block-hash version 9");
            assertThat(daemon.index().modelFingerprint()).as("nothing learned from a client of another version")
                    .isEqualTo(PoolBlockIndex.NO_FINGERPRINT);
            try (RemoteBlockIndex first = RemoteBlockIndex.attach(t.rpc, NodeTestSupport.HASH_VERSION, NodeTestSupport.MODEL)) {
                assertThat(daemon.index().modelFingerprint()).isEqualTo(NodeTestSupport.MODEL);
            }
        }
    }

    @Test
    void withoutADaemonAutoRunsEmbeddedOnTheSamePool() throws Exception {
        try (NodeTestSupport t = new NodeTestSupport("embedded")) {
            ObjectKey k = NodeTestSupport.key(5);
            try (NodeAccess e = NodeAccess.open(t.access(NodeAccess.Mode.AUTO, CAPACITY))) {
                assertThat(e.mode()).isEqualTo(NodeAccess.Mode.EMBEDDED);
                assertThat(e.blocks().publish(k, List.of(NodeTestSupport.content(k, 777)))).isEqualTo(PublishStatus.PUBLISHED);
            }
            // a daemon started later on the same pool serves what the embedded process published
            try (NodeDaemon daemon = NodeDaemon.start(t.daemonConfig(CAPACITY).conclude(), new PrintStream(new ByteArrayOutputStream()));
                 NodeAccess d = NodeAccess.open(t.access(NodeAccess.Mode.DAEMON, CAPACITY))) {
                MemorySegment got = MemorySegment.ofArray(new byte[777]);
                assertThat(d.blocks().read(k, List.of(got))).isTrue();
                assertThat(got.mismatch(NodeTestSupport.content(k, 777))).isEqualTo(-1);
            }
        }
    }

    @Test
    void badConfigurationNamesEveryValue() {
        NodeConfig.Builder b = NodeConfig.builder().capacity(-5).pinsPerProcess(0);
        b.rpc().channels(0).payloadBytes(64);
        assertThatThrownBy(b::conclude).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-5").hasMessageContaining("channel count 0")
                .hasMessageContaining("pins per process 0");
    }
}
