package dev.strata.node.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Server and clients in one JVM (threads): the protocol, batching, errors, reattach. */
@SuppressWarnings("try") // servers held open for the test's duration
class RpcServerClientTest {
    private final Path path = Path.of("/dev/shm", "strata-rpc-test-" + ProcessHandle.current().pid() + "-"
            + System.nanoTime() + ".rpc");

    @AfterEach
    void cleanUp() throws Exception {
        Files.deleteIfExists(path);
        Files.deleteIfExists(path.resolveSibling(path.getFileName() + ".lock"));
        Files.deleteIfExists(path.resolveSibling(path.getFileName() + ".stale"));
        Files.deleteIfExists(path.resolveSibling(path.getFileName() + ".stale.lock"));
    }

    private RpcServer start(int channels, int slots, int payload) {
        RpcServer server = RpcServer.create(RpcServerConfig.builder().path(path).channels(channels).slotsPerChannel(slots)
                .payloadBytes(payload).livenessInterval(Duration.ofMillis(50)).conclude(), new EchoHandler());
        server.start();
        return server;
    }

    @Test
    void callsReturnTheHandlersValuesAndPayload() {
        try (RpcServer server = start(2, 8, 192); RpcClient client = RpcClient.attach(path)) {
            RpcResponse r = new RpcResponse(client.payloadCapacity());
            SplittableRandom rnd = new SplittableRandom(42);
            for (int i = 0; i < 500; i++) {
                long a0 = rnd.nextLong();
                long a1 = rnd.nextLong();
                long a2 = rnd.nextLong();
                long a3 = rnd.nextLong();
                long a5 = rnd.nextLong();
                int len = rnd.nextInt(client.payloadCapacity() + 1); // odd sizes included
                byte[] bytes = new byte[len];
                rnd.nextBytes(bytes);
                MemorySegment.copy(MemorySegment.ofArray(bytes), 0, client.nextRequestPayload(), 0, len);
                int status = client.call(EchoHandler.ECHO, len, a0, a1, a2, a3, 0L, a5, r);
                assertThat(status).isEqualTo(RpcStatus.OK);
                assertThat(r.sequence()).isEqualTo(i);
                assertThat(r.value(0)).isEqualTo(a0 + 1);
                assertThat(r.value(1)).isEqualTo(a1 * 3);
                assertThat(r.value(2)).isEqualTo(a2 ^ a3);
                assertThat(r.value(3)).isEqualTo(client.channel());
                assertThat(r.value(5)).isEqualTo(a5);
                assertThat(r.payloadLength()).isEqualTo(len);
                for (int j = 0; j < len; j++) {
                    assertThat(r.payload().get(ValueLayout.JAVA_BYTE, j)).isEqualTo(bytes[len - 1 - j]);
                }
            }
            assertThat(client.outstanding()).isZero();
        }
    }

    @Test
    void aFullRingSaysSoAndBatchesAreAnsweredInOrder() {
        try (RpcServer server = start(1, 16, 64); RpcClient client = RpcClient.attach(path)) {
            RpcResponse r = new RpcResponse(client.payloadCapacity());
            long next = 0;
            for (int round = 0; round < 50; round++) {
                int batch = 1 + round % client.capacity();
                for (int i = 0; i < batch; i++) {
                    assertThat(client.post(EchoHandler.ECHO, next + i, 0, 0, 0)).isEqualTo(next + i);
                }
                if (batch == client.capacity()) {
                    assertThat(client.post(EchoHandler.ECHO, 0, 0, 0, 0)).isEqualTo(RpcStatus.RING_FULL);
                }
                assertThat(client.outstanding()).isEqualTo(batch);
                for (int i = 0; i < batch; i++) {
                    assertThat(client.await(r)).isEqualTo(RpcStatus.OK);
                    assertThat(r.sequence()).isEqualTo(next + i);
                    assertThat(r.value(0)).isEqualTo(next + i + 1);
                }
                next += batch;
                assertThat(client.await(r)).isEqualTo(RpcStatus.NOTHING_OUTSTANDING);
            }
        }
    }

    @Test
    void handlerStatusesFailuresAndUnknownOpcodesComeBackAsStatuses() {
        try (RpcServer server = start(1, 4, 64); RpcClient client = RpcClient.attach(path)) {
            RpcResponse r = new RpcResponse(client.payloadCapacity());
            assertThat(client.call(EchoHandler.FAIL, 0, 0, 0, 0, r)).isEqualTo(RpcStatus.HANDLER_FAILED);
            assertThat(client.call(99, 0, 0, 0, 0, r)).isEqualTo(RpcStatus.UNKNOWN_OPCODE);
            assertThat(client.call(EchoHandler.STATUS, 17, 0, 0, 0, r)).isEqualTo(17);
            assertThat(client.call(EchoHandler.ECHO, 5, 0, 0, 0, r)).isEqualTo(RpcStatus.OK); // the server went on
            assertThat(r.value(0)).isEqualTo(6);
            assertThatThrownBy(() -> client.post(EchoHandler.ECHO, 65, 0, 0, 0, 0, 0, 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("65 bytes");
        }
    }

    @Test
    void manyClientThreadsGetTheirOwnAnswers() throws Exception {
        int clients = 4;
        try (RpcServer server = start(clients, 8, 64)) {
            ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < clients; t++) {
                long seed = t;
                threads.add(Thread.ofPlatform().start(() -> {
                    try (RpcClient client = RpcClient.attach(path)) {
                        RpcResponse r = new RpcResponse(64);
                        SplittableRandom rnd = new SplittableRandom(seed);
                        long[] sent = new long[client.capacity()];
                        for (int i = 0; i < 400; i++) {
                            int batch = 1 + rnd.nextInt(client.capacity());
                            for (int b = 0; b < batch; b++) {
                                sent[b] = rnd.nextLong();
                                if (client.post(EchoHandler.ECHO, sent[b], seed, 0, 0) < 0) {
                                    throw new AssertionError("post failed");
                                }
                            }
                            for (int b = 0; b < batch; b++) {
                                if (client.await(r) != RpcStatus.OK || r.value(0) != sent[b] + 1 || r.value(1) != seed * 3
                                        || r.value(3) != client.channel()) {
                                    throw new AssertionError("wrong answer " + r + " for " + sent[b] + " from client " + seed);
                                }
                            }
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
            assertThat(failures).isEmpty();
            // the count is published at the polling thread's heartbeat, which may come after the last answer
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            while (server.requestsServed() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(server.requestsServed()).isGreaterThan(0);
        }
    }

    @Test
    void aDetachedChannelIsReusedAndOldAnswersAreNotTakenForNewOnes() throws Exception {
        try (RpcServer server = start(1, 4, 64)) {
            RpcResponse r = new RpcResponse(64);
            int firstChannel;
            try (RpcClient a = RpcClient.attach(path)) {
                firstChannel = a.channel();
                assertThat(a.call(EchoHandler.ECHO, 10, 0, 0, 0, r)).isZero();
                // leave requests answered but untaken, and one slow one in flight
                a.post(EchoHandler.ECHO, 20, 0, 0, 0);
                a.post(EchoHandler.SLEEP, 30, 0, 0, 0);
            }
            try (RpcClient b = RpcClient.attach(path, RpcClientOptions.defaults().withAttachTimeout(Duration.ofSeconds(5)))) {
                assertThat(b.channel()).isEqualTo(firstChannel); // the only channel: freed by the server
                for (int i = 0; i < 20; i++) {
                    assertThat(b.call(EchoHandler.ECHO, 1000 + i, 0, 0, 0, r)).isZero();
                    assertThat(r.sequence()).isEqualTo(i);
                    assertThat(r.value(0)).isEqualTo(1001 + i);
                }
            }
        }
    }

    @Test
    void aServerStuckInAHandlerIsReportedUnresponsiveAndTheRequestStaysOutstanding() {
        try (RpcServer server = start(1, 4, 64); RpcClient client = RpcClient.attach(path,
                RpcClientOptions.defaults().withServerHeartbeatTimeout(Duration.ofMillis(150)))) {
            RpcResponse r = new RpcResponse(64);
            client.post(EchoHandler.SLEEP, 900, 0, 0, 0);
            assertThat(client.await(r)).isEqualTo(RpcStatus.SERVER_UNRESPONSIVE);
            assertThat(client.outstanding()).isEqualTo(1);
            int status;
            do {
                status = client.await(r);
            } while (status == RpcStatus.SERVER_UNRESPONSIVE);
            assertThat(status).isEqualTo(RpcStatus.OK);
            assertThat(r.value(0)).isEqualTo(900);
            assertThat(r.sequence()).isZero();
        }
    }

    @Test
    void aStoppedServerIsReportedNotWaitedFor() throws Exception {
        RpcServer server = start(1, 4, 64);
        try (RpcClient client = RpcClient.attach(path)) {
            RpcResponse r = new RpcResponse(64);
            client.post(EchoHandler.SLEEP, 300, 0, 0, 0);
            client.post(EchoHandler.ECHO, 1, 0, 0, 0);
            Thread stopper = Thread.ofPlatform().start(server::close);
            int first = client.await(r);
            assertThat(first).isIn(RpcStatus.OK, RpcStatus.SERVER_STOPPED);
            int second = client.await(r);
            assertThat(second).isIn(RpcStatus.OK, RpcStatus.SERVER_STOPPED);
            stopper.join();
            assertThat(client.serverStatus()).isEqualTo(RpcStatus.SERVER_STOPPED);
            assertThat(client.post(EchoHandler.ECHO, 1, 0, 0, 0)).isEqualTo(RpcStatus.SERVER_STOPPED);
        }
        assertThat(Files.exists(path)).as("a stopped server removes its region").isFalse();
        assertThatThrownBy(() -> RpcClient.attach(path)).isInstanceOf(RpcUnavailableException.class)
                .hasMessageContaining("no region file");
    }

    @Test
    void aSecondServerOnALivePathIsRefusedAndAStaleOneReplaced() throws Exception {
        try (RpcServer server = start(1, 4, 64)) {
            assertThatThrownBy(() -> start(1, 4, 64)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("served by a live process (pid " + ProcessHandle.current().pid() + ")");
        }
        // two servers created at once, before either published its region: the lock refuses the second
        try (RpcServer first = RpcServer.create(RpcServerConfig.builder().path(path).channels(1).slotsPerChannel(4)
                .payloadBytes(64).conclude(), new EchoHandler())) {
            assertThat(Files.exists(path)).isFalse();
            assertThatThrownBy(() -> start(1, 4, 64)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("served by another live process").hasMessageContaining(".lock");
        }
        // a stale region: a server pid that does not exist
        try (RpcServer server = start(1, 4, 64)) {
            Path copy = path.resolveSibling(path.getFileName() + ".stale");
            Files.copy(path, copy);
            try (FileChannel ch = FileChannel.open(copy, StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, Integer.MAX_VALUE - 7),
                        ShmHeader.OWNER_PID_OFFSET);
            }
            assertThatThrownBy(() -> RpcClient.attach(copy)).isInstanceOf(RpcUnavailableException.class)
                    .hasMessageContaining("is dead");
            try (RpcServer replacement = RpcServer.create(RpcServerConfig.builder().path(copy).channels(1)
                    .slotsPerChannel(4).payloadBytes(64).conclude(), new EchoHandler())) {
                replacement.start();
                try (RpcClient c = RpcClient.attach(copy)) {
                    assertThat(c.call(EchoHandler.ECHO, 4, 0, 0, 0, new RpcResponse(64))).isZero();
                }
            }
            assertThat(Files.exists(copy)).isFalse();
        }
    }

    @Test
    void badFilesAreRefusedNamingTheProblem() throws Exception {
        Files.write(path, new byte[8192]); // all zero: a server that never finished
        assertThatThrownBy(() -> RpcClient.attach(path, RpcClientOptions.defaults().withAttachTimeout(Duration.ofMillis(50))))
                .isInstanceOf(ShmFormatException.class).hasMessageContaining(path.toString())
                .hasMessageContaining("field version = 0").hasMessageContaining("never published");
        ByteBuffer b = ByteBuffer.allocate(8192).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(0, 0x1234L);
        Files.write(path, b.array());
        assertThatThrownBy(() -> RpcClient.attach(path)).isInstanceOf(ShmFormatException.class)
                .hasMessageContaining("field magic = 0x0000000000001234").hasMessageContaining("not a Strata rpc region");
        b.putLong(0, RpcRegionLayout.MAGIC).putLong(8, 7L << 32);
        Files.write(path, b.array());
        assertThatThrownBy(() -> RpcClient.attach(path)).isInstanceOf(ShmFormatException.class)
                .hasMessageContaining("field version = 7.0").hasMessageContaining("major version 7 is not supported");
    }

    @Test
    void configurationErrorsNameEveryBadValue() {
        assertThatThrownBy(() -> RpcServerConfig.builder().channels(0).slotsPerChannel(12).payloadBytes(100).conclude())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("channel count 0").hasMessageContaining("slots per channel 12")
                .hasMessageContaining("payload bytes 100");
    }

    @Test
    void allChannelsTakenIsAClearError() {
        try (RpcServer server = start(1, 4, 64); RpcClient a = RpcClient.attach(path)) {
            assertThatThrownBy(() -> RpcClient.attach(path, RpcClientOptions.defaults().withAttachTimeout(Duration.ofMillis(30))))
                    .isInstanceOf(RpcUnavailableException.class).hasMessageContaining("all 1 channels are taken");
            assertThat(server.attachedClients()).isEqualTo(1);
        }
    }
}
