package dev.strata.bench;

import dev.strata.memory.log.Log;
import dev.strata.node.rpc.Backoff;
import dev.strata.node.rpc.RpcClient;
import dev.strata.node.rpc.RpcResponse;
import dev.strata.node.rpc.RpcServer;
import dev.strata.node.rpc.RpcServerConfig;
import dev.strata.node.rpc.RpcStatus;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * RPC over shared memory measured between two JVMs, with its baselines in the same run: a child
 * JVM is the server of three things at once, and this JVM the client of each in turn.
 *
 * <ul>
 *   <li>Raw ping-pong: a counter bounced through a {@code /dev/shm} mapping, a release store
 *       answered by a release store, no framing: the floor for any shared-memory RPC.</li>
 *   <li>RPC round trip: one request (opcode and four longs) and its response through an
 *       {@link RpcServer} slot; goal ≤ 3× the raw ping-pong.</li>
 *   <li>Loopback TCP round trip of a 64-byte message (the size of the RPC request line), with
 *       {@code TCP_NODELAY}; goal: RPC ≥ 50× as many round trips per second.</li>
 *   <li>Batched throughput: one client keeps its ring of 64 slots full (posting while answers
 *       come back) against one server thread; goal ≥ 5 M requests/s, shown against the unbatched
 *       rate (one call at a time).</li>
 * </ul>
 *
 * <p>Each figure is the median of several rounds; the two sides of a figure run in alternation
 * ({@link Trials#alternate}). A latency is a round's mean (elapsed time over round trips). Beside
 * the figures, every round trip of a last run of each kind is timed on its own, for the latency
 * CDFs of the report (plot {@value #CDF_PLOT}).
 *
 * <p>Figure names are stable: {@code shm_ping_pong_round_trip}, {@code rpc_round_trip},
 * {@code rpc_vs_tcp_round_trip}, {@code rpc_batched_throughput}. Runs on the calling thread.
 */
public final class RpcMeasure {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long PING = 0;   // written by the client
    private static final long PONG = 128; // written by the server, two cache lines away
    private static final long STOP = -1;
    private static final int ECHO = 1;
    private static final int TCP_MESSAGE = 64;
    static final String CDF_PLOT = "round trip between two processes (CDF)";
    private static final String PING_PONG_GOAL = "<= 0.05"; // the shared-memory floor against loopback TCP
    private static final String RPC_GOAL = "<= 3"; // an RPC round trip against the raw ping-pong
    private static final String VS_TCP_GOAL = ">= 50"; // RPC round trips per second against TCP's
    private static final String BATCHED_GOAL = ">= 5e6 requests/s";

    private RpcMeasure() {
    }

    /** Sizes of one run; {@code maxRounds}: rounds of a figure still undecided after {@code rounds} ({@link Trials#pairedUntilDecided}). */
    private record Plan(int rounds, int maxRounds, int pingPongs, int rpcCalls, int tcpRoundTrips, int batchedRequests,
                        int timedCalls) {
        static Plan of(boolean quick) {
            return quick ? new Plan(3, 3, 5_000, 5_000, 300, 50_000, 2_000)
                    : new Plan(Trials.FULL_ROUNDS, Trials.SECOND_LOOK_ROUNDS, 100_000, 100_000, 10_000, 1_000_000, 50_000);
        }
    }

    /** A time per round trip, ns, as round trips per second. */
    private static double perSecond(double nanos) {
        return 1e9 / nanos;
    }

    /**
     * Starts the server JVM, measures, stops it.
     *
     * @param quick a reduced run (a few seconds) for smoke checks
     * @param plots receives the latency CDFs of RPC calls, raw ping-pongs and TCP round trips
     */
    public static List<Figure> figures(boolean quick, List<Series> plots) throws IOException, InterruptedException {
        Plan plan = Plan.of(quick);
        Path dir = Path.of("/dev/shm");
        String id = "strata-bench-rpc-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        Path flagFile = dir.resolve(id + ".flag");
        Path rpcFile = dir.resolve(id + ".rpc");
        Progress progress = new Progress(Log.stream("bench"), 6);
        progress.step("starting the server JVM (raw ping-pong, RPC server, TCP echo)");
        Process child = startServer(flagFile, rpcFile);
        try (Arena arena = Arena.ofShared()) {
            BufferedReader childOut = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String ready = awaitReady(childOut, child);
            int port = Integer.parseInt(ready.split(" ")[1]);
            MemorySegment flag = map(flagFile, arena);
            try (RpcClient client = RpcClient.attach(rpcFile);
                 Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
                socket.setTcpNoDelay(true);
                RpcResponse response = new RpcResponse(client.payloadCapacity());
                long[] pingSeq = {0};
                List<Figure> figures = new ArrayList<>();

                progress.step("raw /dev/shm ping-pong against loopback TCP and RPC round trips (" + plan.rounds()
                        + " paired rounds each" + (plan.maxRounds() > plan.rounds() ? ", " + plan.maxRounds()
                        + " for a figure they leave undecided)" : ")"));
                byte[] message = new byte[TCP_MESSAGE];
                new java.util.SplittableRandom(7).nextBytes(message);
                Paired tcpVsRaw = Trials.pairedUntilDecided(plan.rounds(), plan.maxRounds(), PING_PONG_GOAL,
                        () -> tcpRoundTripNanos(socket, message, plan.tcpRoundTrips()),
                        () -> pingPongNanos(flag, pingSeq, plan.pingPongs()));
                Paired rawVsRpc = Trials.pairedUntilDecided(plan.rounds(), plan.maxRounds(), RPC_GOAL,
                        () -> pingPongNanos(flag, pingSeq, plan.pingPongs()),
                        () -> rpcRoundTripNanos(client, response, plan.rpcCalls()));

                progress.step("loopback TCP 64-byte round trips against RPC round trips");
                Goal againstTcp = Goal.parse(VS_TCP_GOAL);
                Paired tcpVsRpc = Trials.pairedUntilDecided(plan.rounds(), plan.maxRounds(),
                        p -> p.map(RpcMeasure::perSecond).judge(againstTcp),
                        () -> tcpRoundTripNanos(socket, message, plan.tcpRoundTrips()),
                        () -> rpcRoundTripNanos(client, response, plan.rpcCalls()));

                progress.step("batched RPC throughput (ring of " + client.capacity() + ") against one call at a time");
                Paired batched = Trials.pairedUntilDecided(plan.rounds(), plan.maxRounds(), BATCHED_GOAL,
                        () -> 1e9 / rpcRoundTripNanos(client, response, plan.rpcCalls() / 4),
                        () -> batchedRate(client, response, plan.batchedRequests()));

                String machine = " (2 JVMs on this machine; each round a mean over its calls)";
                figures.add(Figure.paired("shm_ping_pong_round_trip", "ns", "loopback TCP 64-byte round trip", tcpVsRaw, PING_PONG_GOAL)
                        .withNote("raw flag bounced through a /dev/shm mapping with release stores, acquire loads; " + machine));
                figures.add(Figure.paired("rpc_round_trip", "ns", "raw /dev/shm flag ping-pong between two JVMs", rawVsRpc, RPC_GOAL)
                        .withNote("one request of opcode + 4 longs and its response through an RPC slot" + machine));
                Figure perSecond = Figure.paired("rpc_vs_tcp_round_trip", "round trips/s", "loopback TCP 64-byte round trip",
                        tcpVsRpc.map(RpcMeasure::perSecond), VS_TCP_GOAL);
                figures.add(perSecond.withNote("RPC " + round(1e9 / perSecond.value()) + " ns vs TCP "
                        + round(1e9 / perSecond.baselineValue()) + " ns per round trip (medians)" + machine));
                figures.add(Figure.paired("rpc_batched_throughput", "requests/s", "unbatched RPC (one call at a time)",
                        batched, BATCHED_GOAL)
                        .withNote("one client keeps " + client.capacity() + " requests in flight; one server thread" + machine));
                progress.step("latency distributions: " + plan.timedCalls() + " round trips of each kind, each timed");
                Histogram rpcTimes = new Histogram(3);
                Histogram rawTimes = new Histogram(3);
                Histogram tcpTimes = new Histogram(3);
                for (int i = 0; i < plan.timedCalls(); i++) { // interleaved: a moment of noise touches all three alike
                    rpcTimes.recordValue(Math.max(1, Math.round(rpcRoundTripNanos(client, response, 1))));
                    rawTimes.recordValue(Math.max(1, Math.round(pingPongNanos(flag, pingSeq, 1))));
                    if (i % 10 == 0) { // a TCP round trip costs ten or more of the others
                        tcpTimes.recordValue(Math.max(1, Math.round(tcpRoundTripNanos(socket, message, 1))));
                    }
                }
                plots.add(Series.latencyCdf(CDF_PLOT, "RPC call (opcode and 4 longs, answered)", rpcTimes));
                plots.add(Series.latencyCdf(CDF_PLOT, "raw /dev/shm flag ping-pong", rawTimes));
                plots.add(Series.latencyCdf(CDF_PLOT, "loopback TCP 64-byte round trip", tcpTimes));
                progress.step("stopping the server JVM");
                LONG.setRelease(flag, PING, STOP);
                return figures;
            }
        } finally {
            child.getOutputStream().close(); // the server stops when its stdin closes
            if (!child.waitFor(10, TimeUnit.SECONDS)) {
                child.destroyForcibly();
                child.waitFor(10, TimeUnit.SECONDS);
            }
            Files.deleteIfExists(flagFile);
            Files.deleteIfExists(rpcFile);
            Files.deleteIfExists(rpcFile.resolveSibling(rpcFile.getFileName() + ".lock"));
        }
    }

    private static double round(double x) {
        return Math.round(x * 10) / 10.0;
    }

    private static Process startServer(Path flagFile, Path rpcFile) throws IOException {
        String java = System.getProperty("strata.java");
        if (java == null || java.isBlank()) {
            java = ProcessHandle.current().info().command().orElse("java");
        }
        List<String> command = List.of(java, "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-Xmx256m", "-cp", System.getProperty("java.class.path"), RpcMeasure.class.getName(), "serve",
                flagFile.toString(), rpcFile.toString());
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static String awaitReady(BufferedReader out, Process child) throws IOException {
        String line;
        while ((line = out.readLine()) != null) {
            if (line.startsWith("ready ")) {
                return line;
            }
        }
        throw new IllegalStateException("the benchmark's server JVM (pid " + child.pid() + ") ended before it was ready");
    }

    private static MemorySegment map(Path file, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, 4096, arena);
        }
    }

    /** Mean ns per raw round trip: release-store the next number, spin until the server echoes it. */
    static double pingPongNanos(MemorySegment flag, long[] seq, int n) {
        long s = seq[0];
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            long v = ++s;
            LONG.setRelease(flag, PING, v);
            while ((long) LONG.getAcquire(flag, PONG) != v) {
                Thread.onSpinWait();
            }
        }
        long elapsed = System.nanoTime() - start;
        seq[0] = s;
        return (double) elapsed / n;
    }

    /** Mean ns per RPC round trip, one call at a time. */
    static double rpcRoundTripNanos(RpcClient client, RpcResponse response, int n) {
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            int status = client.call(ECHO, i, 2, 3, 4, response);
            if (status != RpcStatus.OK || response.value(0) != i + 1) {
                throw new IllegalStateException("rpc call " + i + " answered " + response);
            }
        }
        return (double) (System.nanoTime() - start) / n;
    }

    /** Requests per second with the ring kept full: post while there is room, else take the oldest answer. */
    static double batchedRate(RpcClient client, RpcResponse response, int n) {
        long posted = 0;
        long answered = 0;
        long start = System.nanoTime();
        while (answered < n) {
            if (posted < n && client.post(ECHO, posted, 2, 3, 4) >= 0) {
                posted++;
                continue;
            }
            int status = client.await(response);
            if (status != RpcStatus.OK || response.value(0) != answered + 1) {
                throw new IllegalStateException("batched rpc " + answered + " answered " + response);
            }
            answered++;
        }
        return n * 1e9 / (System.nanoTime() - start);
    }

    /** Mean ns per 64-byte loopback TCP round trip. */
    static double tcpRoundTripNanos(Socket socket, byte[] message, int n) {
        try {
            OutputStream out = socket.getOutputStream();
            DataInputStream in = new DataInputStream(socket.getInputStream());
            byte[] back = new byte[message.length];
            long start = System.nanoTime();
            for (int i = 0; i < n; i++) {
                out.write(message);
                in.readFully(back);
            }
            long elapsed = System.nanoTime() - start;
            if (!java.util.Arrays.equals(message, back)) {
                throw new IllegalStateException("the TCP echo returned other bytes");
            }
            return (double) elapsed / n;
        } catch (IOException e) {
            throw new UncheckedIOException("loopback TCP round trips", e);
        }
    }

    /**
     * The server JVM: {@code serve FLAG_FILE RPC_FILE}. Answers raw pings, serves an echo RPC and a
     * TCP echo, prints {@code ready <tcp port>}, and exits when its standard input closes.
     */
    public static void main(String[] args) throws Exception {
        Log.useForJavaLogging();
        if (args.length != 3 || !args[0].equals("serve")) {
            System.err.println("usage: RpcMeasure serve FLAG_FILE RPC_FILE (started by RpcMeasure.figures)");
            System.exit(2);
        }
        Path flagFile = Path.of(args[1]);
        Path rpcFile = Path.of(args[2]);
        try (FileChannel ch = FileChannel.open(flagFile, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE); Arena arena = Arena.ofShared()) {
            MemorySegment flag = ch.map(FileChannel.MapMode.READ_WRITE, 0, 4096, arena);
            Thread responder = Thread.ofPlatform().daemon().name("ping-pong").start(() -> respond(flag));
            RpcServerConfig config = RpcServerConfig.builder().path(rpcFile).channels(2).slotsPerChannel(64).payloadBytes(64)
                    .conclude();
            try (RpcServer server = RpcServer.create(config, call -> call.value(0, call.arg(0) + 1).value(1, call.arg(1)));
                 ServerSocket tcp = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                server.start();
                Thread.ofPlatform().daemon().name("tcp-echo").start(() -> echo(tcp));
                System.out.println("ready " + tcp.getLocalPort());
                System.out.flush();
                while (System.in.read() >= 0) {
                    // serve until the parent closes our stdin
                }
                LONG.setRelease(flag, PING, STOP);
                responder.join(TimeUnit.SECONDS.toMillis(5));
            }
        }
    }

    /** Echoes every new ping value into pong; spins while busy, backs off while idle; stops at STOP. */
    private static void respond(MemorySegment flag) {
        Backoff idle = new Backoff(20_000, 10, 1_000, 200_000);
        long last = 0;
        while (true) {
            long v = (long) LONG.getAcquire(flag, PING);
            if (v == STOP) {
                return;
            }
            if (v != last) {
                LONG.setRelease(flag, PONG, v);
                last = v;
                idle.reset();
            } else {
                idle.idle();
            }
        }
    }

    private static void echo(ServerSocket tcp) {
        try (Socket s = tcp.accept()) {
            s.setTcpNoDelay(true);
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            byte[] buffer = new byte[TCP_MESSAGE];
            while (true) {
                int got = 0;
                while (got < TCP_MESSAGE) {
                    int r = in.read(buffer, got, TCP_MESSAGE - got);
                    if (r < 0) {
                        return;
                    }
                    got += r;
                }
                out.write(buffer);
            }
        } catch (IOException e) {
            // the client went away: nothing more to echo
        }
    }
}
