package dev.strata.node.rpc;

import java.nio.file.Path;
import java.time.Duration;

/** Child JVM: serves {@link EchoHandler} on {@code args[0]} with {@code args[1]} channels until stdin closes. */
public final class RpcServerMain {
    private RpcServerMain() {
    }

    public static void main(String[] args) throws Exception {
        RpcServerConfig config = RpcServerConfig.builder().path(Path.of(args[0])).channels(Integer.parseInt(args[1]))
                .slotsPerChannel(8).payloadBytes(64).livenessInterval(Duration.ofMillis(50)).conclude();
        try (RpcServer server = RpcServer.create(config, new EchoHandler())) {
            server.start();
            System.out.println("ready " + ProcessHandle.current().pid());
            System.out.flush();
            while (System.in.read() >= 0) {
                // serve until the parent closes our stdin
            }
            System.out.println("reclaimed " + server.reclaimedChannels());
        }
        System.out.println("stopped");
    }
}
