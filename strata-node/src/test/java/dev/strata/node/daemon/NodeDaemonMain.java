package dev.strata.node.daemon;

import java.nio.file.Path;
import java.time.Duration;

/** Child JVM: {@code strata node} on pool {@code args[0]} (capacity {@code args[2]} bytes) serving rpc {@code args[1]}. */
public final class NodeDaemonMain {
    private NodeDaemonMain() {
    }

    public static void main(String[] args) throws Exception {
        NodeConfig.Builder config = NodeConfig.builder().poolName("nodetest").poolPath(Path.of(args[0]))
                .capacity(Long.parseLong(args[2])).chunkSize(4096).reapInterval(Duration.ofMillis(200))
                .hashVersion(NodeTestSupport.HASH_VERSION).modelFingerprint(NodeTestSupport.MODEL);
        config.rpc().path(Path.of(args[1])).channels(4).slotsPerChannel(16).payloadBytes(256)
                .livenessInterval(Duration.ofMillis(50));
        NodeDaemon daemon = NodeDaemon.start(config.conclude(), System.out);
        daemon.runUntilStopped();
    }
}
