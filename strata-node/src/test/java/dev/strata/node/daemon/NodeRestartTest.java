package dev.strata.node.daemon;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore.PublishStatus;
import dev.strata.node.client.NodeAccess;
import dev.strata.node.client.NodeUnavailableException;
import dev.strata.node.rpc.ChildJvm;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@code strata node} in its own JVM, killed with SIGKILL and started again on the same pool. */
class NodeRestartTest {
    private static final long CAPACITY = 8L << 20;

    @Test
    void aRestartedDaemonServesEveryBlockPublishedBefore() throws Exception {
        try (NodeTestSupport t = new NodeTestSupport("restart")) {
            String[] args = {t.pool.toString(), t.rpc.toString(), Long.toString(CAPACITY)};
            int n = 40;
            ObjectKey[] keys = new ObjectKey[n + 5];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = NodeTestSupport.key(1000 + i);
            }
            try (ChildJvm first = ChildJvm.start(NodeDaemonMain.class, args)) {
                assertThat(first.expect("strata node ready", 30_000)).contains("pid " + first.pid()).contains("0 published blocks");
                try (NodeAccess client = NodeAccess.open(t.access(NodeAccess.Mode.DAEMON, CAPACITY))) {
                    for (int i = 0; i < n; i++) {
                        assertThat(client.blocks().publish(keys[i], List.of(NodeTestSupport.content(keys[i], 3001 + i))))
                                .isEqualTo(PublishStatus.PUBLISHED);
                    }
                    // a reservation left open when the daemon dies
                    assertThat(client.index().reserve(keys[n].high(), keys[n].low(), 5000)).isNotNegative();
                    first.kill(); // SIGKILL
                    assertThat(first.process.exitValue()).isEqualTo(137);
                    assertThatThrownBy(() -> client.index().matchPrefix(new long[] {1, 2}, 0, 1))
                            .isInstanceOf(NodeUnavailableException.class).hasMessageContaining("died");
                    try (ChildJvm second = ChildJvm.start(NodeDaemonMain.class, args)) {
                        assertThat(second.expect("strata node ready", 30_000)).contains("attached")
                                .contains(n + " published blocks");
                        // the same client attaches again on its next call
                        assertThat(client.blocks().matchPrefix(keys, 0, keys.length)).isEqualTo(n);
                        for (int i = 0; i < n; i++) {
                            MemorySegment got = MemorySegment.ofArray(new byte[3001 + i]);
                            assertThat(client.blocks().read(keys[i], List.of(got))).as("block %d", i).isTrue();
                            assertThat(got.mismatch(NodeTestSupport.content(keys[i], 3001 + i))).isEqualTo(-1);
                        }
                        // the dead daemon's open reservation is reaped; the key can be written again
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                        PublishStatus again;
                        do {
                            again = client.blocks().publish(keys[n], List.of(NodeTestSupport.content(keys[n], 5000)));
                        } while (again == PublishStatus.EXISTS && System.nanoTime() < deadline);
                        assertThat(again).isEqualTo(PublishStatus.PUBLISHED);
                        // a fresh client sees everything too
                        try (NodeAccess fresh = NodeAccess.open(t.access(NodeAccess.Mode.DAEMON, CAPACITY))) {
                            assertThat(fresh.blocks().matchPrefix(keys, 0, keys.length)).isEqualTo(n + 1);
                        }
                        // SIGTERM: a clean stop, announced
                        second.process.toHandle().destroy(); // SIGTERM; Process.destroy() would also close our end of its output
                        second.expect("strata node stopped", 30_000);
                        assertThat(second.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
                        assertThatThrownBy(() -> client.index().stats()).isInstanceOf(NodeUnavailableException.class);
                    }
                }
            }
        }
    }
}
