package dev.strata.node.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A server JVM and client JVMs; SIGKILL on either side. */
class RpcMultiProcessTest {
    private final Path path = Path.of("/dev/shm", "strata-rpc-mp-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + ".rpc");

    @AfterEach
    void cleanUp() throws Exception {
        Files.deleteIfExists(path);
        Files.deleteIfExists(path.resolveSibling(path.getFileName() + ".lock"));
    }

    @Test
    void aClientKilledMidRequestLosesItsChannelAndTheServerGoesOn() throws Exception {
        try (ChildJvm server = ChildJvm.start(RpcServerMain.class, path.toString(), "2")) {
            server.expect("ready", 30_000);
            ChildJvm steady = ChildJvm.start(RpcClientMain.class, "steady", path.toString(), "0");
            steady.expect("attached", 30_000);
            steady.expect("ok", 30_000);
            ChildJvm victim = ChildJvm.start(RpcClientMain.class, "slow", path.toString(), "400");
            String channel = victim.expect("attached", 30_000);
            victim.expect("posted", 30_000);
            victim.kill(); // SIGKILL while the server handles its request
            assertThat(victim.process.exitValue()).isEqualTo(137);
            // both channels were taken; the dead client's channel comes free again
            try (RpcClient again = RpcClient.attach(path, RpcClientOptions.defaults().withAttachTimeout(Duration.ofSeconds(10)))) {
                assertThat("attached " + again.channel()).isEqualTo(channel);
                RpcResponse r = new RpcResponse(again.payloadCapacity());
                for (int i = 0; i < 100; i++) {
                    assertThat(again.call(EchoHandler.ECHO, i, 2, 0, 0, r)).isEqualTo(RpcStatus.OK);
                    assertThat(r.value(0)).isEqualTo(i + 1);
                    assertThat(r.sequence()).as("a new attach starts its own sequence").isEqualTo(i);
                }
            }
            // the steady client never saw a wrong answer and still progresses
            steady.expect("ok", 30_000);
            assertThat(steady.process.isAlive()).isTrue();
            server.process.getOutputStream().close();
            assertThat(server.expect("reclaimed", 30_000)).isEqualTo("reclaimed 1");
            server.expect("stopped", 30_000);
            steady.expect("status SERVER_STOPPED", 30_000);
            steady.close();
        }
    }

    @Test
    void clientsOfAKilledServerGetAClearStatusNotAHang() throws Exception {
        try (ChildJvm server = ChildJvm.start(RpcServerMain.class, path.toString(), "4")) {
            server.expect("ready", 30_000);
            ChildJvm steady = ChildJvm.start(RpcClientMain.class, "steady", path.toString(), "0");
            steady.expect("ok", 30_000);
            try (RpcClient local = RpcClient.attach(path)) {
                RpcResponse r = new RpcResponse(local.payloadCapacity());
                local.post(EchoHandler.ECHO, 1, 0, 0, 0);
                assertThat(local.await(r)).isEqualTo(RpcStatus.OK);
                ChildJvm slow = ChildJvm.start(RpcClientMain.class, "slow", path.toString(), "60000");
                slow.expect("posted", 30_000);
                // in flight when the server dies whatever the polling thread takes first: a sleep of a minute
                // (behind the slow client's, or ahead of it; an echo could be answered before the kill)
                local.post(EchoHandler.SLEEP, 60_000, 0, 0, 0);
                server.kill();
                long start = System.nanoTime();
                int status = local.await(r);
                long waitedMillis = (System.nanoTime() - start) / 1_000_000;
                assertThat(status).isEqualTo(RpcStatus.SERVER_DEAD);
                assertThat(waitedMillis).as("reported promptly, not after a long timeout").isLessThan(10_000);
                assertThat(local.post(EchoHandler.ECHO, 3, 0, 0, 0)).isEqualTo(RpcStatus.SERVER_DEAD);
                slow.expect("status SERVER_DEAD", 15_000);
                assertThat(slow.process.waitFor(15, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                slow.close();
            }
            steady.expect("status SERVER_DEAD", 15_000);
            assertThat(steady.process.waitFor(15, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            steady.close();
        }
        // the dead server's region stays behind; a new server replaces it
        try (RpcServer again = RpcServer.create(RpcServerConfig.builder().path(path).channels(1).slotsPerChannel(4)
                .payloadBytes(64).conclude(), new EchoHandler())) {
            again.start();
            try (RpcClient c = RpcClient.attach(path)) {
                assertThat(c.call(EchoHandler.ECHO, 41, 0, 0, 0, new RpcResponse(64))).isEqualTo(RpcStatus.OK);
            }
        }
    }
}
