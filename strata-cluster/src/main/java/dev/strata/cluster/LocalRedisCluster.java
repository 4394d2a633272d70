package dev.strata.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * A real Redis Cluster on this machine, started from the {@code redis-server} binary on the
 * {@code PATH}: {@code primaries} primaries and {@code replicas} replicas per primary on
 * 127.0.0.1, on consecutive ports from a base, protected by a password ({@code requirepass} and
 * {@code masterauth}), optionally over TLS ({@link Tls}). Tests and {@code strata cluster up|down|status}
 * use it.
 *
 * <h2>Design note</h2>
 * Everything lives in one directory: {@code cluster.properties} (the layout: ports, primaries,
 * replicas), {@code password} (0600), and per node {@code node-PORT/} with its {@code redis.conf}
 * (0600, it holds the password), {@code nodes.conf} (the cluster's own state), {@code redis.pid}
 * and {@code redis.log}. With TLS, {@code tls/} holds the {@link LocalCertificates} (made with
 * {@code openssl} when the cluster is described, or signed by a CA placed there beforehand) and every
 * node listens only with TLS ({@code port 0}, {@code tls-port}), speaks TLS to the other nodes on the
 * cluster bus and for replication ({@code tls-cluster}, {@code tls-replication}), so it announces
 * its TLS port; {@code redis-cli} reaches the nodes with the CA and the client certificate.
 * {@link #start} launches every node; when the nodes have no cluster state
 * yet it joins them with {@code redis-cli --cluster create}, otherwise they rejoin from their
 * {@code nodes.conf} (a restart keeps the cluster's shape, not its data: nothing is persisted).
 * It returns once every node reports {@code cluster_state:ok}. The password reaches
 * {@code redis-cli} through {@code REDISCLI_AUTH}, never its command line. {@link #stop} sends
 * SIGTERM to each node whose pid file names a live {@code redis-server}, then SIGKILL to any still
 * running after a grace period; it removes no file.
 *
 * <p>Threads: one thread at a time per directory.
 */
public final class LocalRedisCluster {
    private static final int BUS_PORT_OFFSET = 10_000; // a node's cluster bus port is its port + this (Redis's default)
    private static final int LOWEST_PORT_BASE = 10_000; // freePortBase picks no lower

    /** The one host every node binds to. */
    public static final String HOST = "127.0.0.1";
    private static final String LAYOUT = "cluster.properties";
    private static final String PASSWORD = "password";
    private static final String TLS_DIR = "tls";
    private static final Duration STOP_GRACE = Duration.ofSeconds(5);

    private final Path dir;        // the cluster's directory
    private final int primaries;   // primaries, each owning an equal share of the 16384 slots
    private final int replicas;    // replicas per primary
    private final int portBase;    // first node's port; node i listens on portBase + i
    private final String password; // requirepass/masterauth of every node; null: none
    private final long maxmemory;  // bytes of data each node keeps before it evicts by maxmemoryPolicy; 0: no limit
    private final String maxmemoryPolicy; // allkeys-lru or allkeys-lfu: the cluster is a cache
    private final Tls tls;                // how clients reach the nodes

    /** How clients reach the nodes. */
    public enum Tls {
        /** Plain TCP. */
        OFF,
        /** TLS; a client proves nothing about itself ({@code tls-auth-clients optional}: a certificate, if sent, must be valid). */
        ON,
        /** Mutual TLS: a client must present a certificate signed by the cluster's CA ({@code tls-auth-clients yes}). */
        MUTUAL
    }

    /** Bytes each node holds by default before it evicts: 256 MiB. */
    public static final long DEFAULT_MAXMEMORY = 256L << 20;
    /** The eviction policies a cache of KV blocks may use. */
    public static final List<String> POLICIES = List.of("allkeys-lru", "allkeys-lfu");

    private LocalRedisCluster(Path dir, int primaries, int replicas, int portBase, String password, long maxmemory,
                              String maxmemoryPolicy, Tls tls) {
        this.tls = tls;
        this.dir = dir;
        this.primaries = primaries;
        this.replicas = replicas;
        this.portBase = portBase;
        this.password = password;
        this.maxmemory = maxmemory;
        this.maxmemoryPolicy = maxmemoryPolicy;
    }

    /**
     * As {@link #create(Path, int, int, int, boolean, long, String)} with
     * {@link #DEFAULT_MAXMEMORY} per node and {@code allkeys-lru}.
     */
    public static LocalRedisCluster create(Path dir, int primaries, int replicas, int portBase, boolean withPassword) {
        return create(dir, primaries, replicas, portBase, withPassword, DEFAULT_MAXMEMORY, "allkeys-lru");
    }

    /**
     * Describes a new cluster in {@code dir} (created if needed): writes its layout and a random
     * password (when {@code withPassword}) with mode 0600. Nothing is started.
     *
     * <p>Every node is a cache: it keeps at most {@code maxmemory} bytes of data and then evicts
     * keys by {@code policy} (an evicted block is a miss for Strata, never an error).
     *
     * @param maxmemory bytes of data per node, at least 1 MiB; 0: no limit (writes fail when the machine runs out)
     * @param policy    {@code allkeys-lru} or {@code allkeys-lfu}
     * @throws IllegalArgumentException naming the value if a count, the port range, the memory or
     *                                  the policy is impossible, or if {@code dir} already describes a cluster
     */
    public static LocalRedisCluster create(Path dir, int primaries, int replicas, int portBase, boolean withPassword, long maxmemory,
                                           String policy) {
        return create(dir, primaries, replicas, portBase, withPassword, maxmemory, policy, Tls.OFF);
    }

    /**
     * As {@link #create(Path, int, int, int, boolean, long, String)}, reached with {@code tls}:
     * other than {@link Tls#OFF}, the {@link LocalCertificates} are made in {@code dir/tls} now.
     *
     * @throws IllegalStateException naming {@code openssl} when TLS is asked for and it is missing
     */
    public static LocalRedisCluster create(Path dir, int primaries, int replicas, int portBase, boolean withPassword, long maxmemory,
                                           String policy, Tls tls) {
        java.util.Objects.requireNonNull(tls, "tls");
        if (maxmemory != 0 && maxmemory < (1L << 20)) {
            throw new IllegalArgumentException("maxmemory per node must be 0 (no limit) or at least 1 MiB, got " + maxmemory + " bytes");
        }
        if (!POLICIES.contains(policy)) {
            throw new IllegalArgumentException("maxmemory-policy '" + policy + "' is not one of " + POLICIES
                    + ": the cluster is a cache and must evict any key");
        }
        if (primaries < 3) {
            throw new IllegalArgumentException("a Redis Cluster needs at least 3 primaries, got " + primaries);
        }
        if (replicas < 0 || replicas > 4) {
            throw new IllegalArgumentException("replicas per primary must be in [0, 4], got " + replicas);
        }
        int nodes = primaries * (1 + replicas);
        // the cluster bus listens on port + 10000
        if (portBase < 1024 || portBase + nodes - 1 + 10000 > 65535) {
            throw new IllegalArgumentException("port base " + portBase + " leaves no room for " + nodes
                    + " nodes and their cluster bus ports (+10000) in [1024, 65535]");
        }
        try {
            Files.createDirectories(dir);
            if (Files.exists(dir.resolve(LAYOUT))) {
                throw new IllegalArgumentException(dir + " already holds a cluster (" + LAYOUT + "); use it, or choose another directory");
            }
            String password = null;
            if (withPassword) {
                byte[] random = new byte[24];
                new SecureRandom().nextBytes(random);
                password = HexFormat.of().formatHex(random);
                writePrivate(dir.resolve(PASSWORD), password + "\n");
            }
            Properties p = new Properties();
            p.setProperty("primaries", Integer.toString(primaries));
            p.setProperty("replicas", Integer.toString(replicas));
            p.setProperty("port-base", Integer.toString(portBase));
            p.setProperty("password", Boolean.toString(withPassword));
            p.setProperty("maxmemory", Long.toString(maxmemory));
            p.setProperty("maxmemory-policy", policy);
            p.setProperty("tls", tls.name().toLowerCase(Locale.ROOT));
            if (tls != Tls.OFF) {
                LocalCertificates.ensure(dir.resolve(TLS_DIR));
            }
            StringBuilder text = new StringBuilder("# a local Redis Cluster started by strata\n");
            for (String k : List.of("primaries", "replicas", "port-base", "password", "maxmemory", "maxmemory-policy", "tls")) {
                text.append(k).append('=').append(p.getProperty(k)).append('\n');
            }
            writePrivate(dir.resolve(LAYOUT), text.toString());
            return new LocalRedisCluster(dir, primaries, replicas, portBase, password, maxmemory, policy, tls);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare the cluster directory " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * The cluster described in {@code dir} by {@link #create}.
     *
     * @throws IllegalArgumentException naming the directory if it describes no cluster
     */
    public static LocalRedisCluster open(Path dir) {
        Path layout = dir.resolve(LAYOUT);
        if (!Files.isRegularFile(layout)) {
            throw new IllegalArgumentException(dir + " holds no local cluster (no " + LAYOUT + "); start one with strata cluster up --dir " + dir);
        }
        Properties p = new Properties();
        try (var in = Files.newBufferedReader(layout)) {
            p.load(in);
            String password = Boolean.parseBoolean(p.getProperty("password")) ? readPassword(dir.resolve(PASSWORD)) : null;
            return new LocalRedisCluster(dir, Integer.parseInt(p.getProperty("primaries")), Integer.parseInt(p.getProperty("replicas")),
                    Integer.parseInt(p.getProperty("port-base")), password, Long.parseLong(p.getProperty("maxmemory", "0")),
                    p.getProperty("maxmemory-policy", "allkeys-lru"), Tls.valueOf(p.getProperty("tls", "off").toUpperCase(Locale.ROOT)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + layout + ": " + e.getMessage(), e);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalArgumentException(layout + " is not a cluster layout (primaries, replicas, port-base, tls off|on|mutual): "
                    + e.getMessage(), e);
        }
    }

    /**
     * A port base at which {@code nodes} consecutive ports and their cluster bus ports (+10000) are
     * free on {@link #HOST} now, picked at random below the kernel's ephemeral port range
     * ({@code net.ipv4.ip_local_port_range}, from 10000 to where both sets of ports end under it).
     * Outgoing connections (redis-cli's, the clients') take their local ports from that range, so a
     * port found free inside it could be taken by one before the node binds it. Free now is still no
     * promise for later: a caller that loses a race with another process fails at start, naming the
     * node, and may try again.
     *
     * @throws IllegalStateException if none is found in 50 tries
     */
    public static int freePortBase(int nodes) {
        int highest = ephemeralPortsStart() - BUS_PORT_OFFSET - nodes; // the highest base whose bus ports stay below the range
        boolean below = highest > LOWEST_PORT_BASE + 1_000;
        for (int attempt = 0; attempt < 50; attempt++) {
            int base = below ? LOWEST_PORT_BASE + java.util.concurrent.ThreadLocalRandom.current().nextInt(0, highest - LOWEST_PORT_BASE)
                    : 20_000 + java.util.concurrent.ThreadLocalRandom.current().nextInt(0, 30_000);
            if (portsFree(base, nodes) && portsFree(base + BUS_PORT_OFFSET, nodes)) {
                return base;
            }
        }
        throw new IllegalStateException("found no " + nodes + " free consecutive ports (and their cluster bus ports) for a local Redis Cluster");
    }

    /** The first port of the kernel's ephemeral range ({@code /proc/sys/net/ipv4/ip_local_port_range}); 32768 where unreadable. */
    static int ephemeralPortsStart() {
        try {
            // read as lines: Files.readString returned only the first byte of this procfs file (JDK 25)
            String range = Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).getFirst().trim();
            return Integer.parseInt(range.split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return 32_768;
        }
    }

    private static boolean portsFree(int base, int count) {
        if (base + count > 65_535) {
            return false;
        }
        for (int p = base; p < base + count; p++) {
            try (java.net.ServerSocket s = new java.net.ServerSocket(p, 1, java.net.InetAddress.getByName(HOST))) {
                s.setReuseAddress(true);
            } catch (IOException e) {
                return false;
            }
        }
        return true;
    }

    /** The first line of {@code file}, trimmed: how a password file is read. */
    static String readPassword(Path file) throws IOException {
        String text = Files.readString(file, StandardCharsets.UTF_8);
        int nl = text.indexOf('\n');
        return (nl < 0 ? text : text.substring(0, nl)).trim();
    }

    /** The directory the cluster lives in. */
    public Path dir() {
        return dir;
    }

    /** The file holding the password (mode 0600), or null without one. */
    public Path passwordFile() {
        return password == null ? null : dir.resolve(PASSWORD);
    }

    /** How clients reach the nodes. */
    public Tls tls() {
        return tls;
    }

    /** The cluster's certificates (in {@code dir/tls}), or null without TLS. */
    public LocalCertificates certificates() {
        return tls == Tls.OFF ? null : LocalCertificates.in(dir.resolve(TLS_DIR));
    }

    /** Every node's {@code host:port}, primaries' ports first. */
    public List<String> nodes() {
        List<String> out = new ArrayList<>();
        for (int port : ports()) {
            out.add(HOST + ":" + port);
        }
        return out;
    }

    /** Every node's port. */
    public List<Integer> ports() {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < primaries * (1 + replicas); i++) {
            out.add(portBase + i);
        }
        return out;
    }

    /**
     * Starts every node that is not running and waits until the cluster reports
     * {@code cluster_state:ok} on every node. A start that fails stops the nodes it started and
     * waits until they have exited.
     *
     * @param wait the longest to wait for the nodes and the cluster
     * @throws IllegalStateException naming the binary and the install command when
     *                               {@code redis-server} is missing, or the node that did not come up
     *                               (with the end of its log)
     */
    public LocalRedisCluster start(Duration wait) {
        Path server = binary("redis-server");
        Path cli = binary("redis-cli");
        long deadline = System.nanoTime() + wait.toNanos();
        java.util.Map<Integer, Process> launched = new java.util.LinkedHashMap<>(); // port -> the node this call started
        boolean fresh = true;
        if (tls != Tls.OFF) {
            LocalCertificates.ensure(dir.resolve(TLS_DIR));
        }
        try {
            for (int port : ports()) {
                Path nodeDir = dir.resolve("node-" + port);
                Files.createDirectories(nodeDir);
                if (Files.exists(nodeDir.resolve("nodes.conf")) && Files.size(nodeDir.resolve("nodes.conf")) > 0) {
                    fresh = false;
                }
                if (running(port).isPresent()) {
                    continue;
                }
                Path conf = nodeDir.resolve("redis.conf");
                writePrivate(conf, config(port, nodeDir));
                Files.deleteIfExists(nodeDir.resolve("redis.pid")); // written again once this node has bound its port
                launched.put(port, new ProcessBuilder(server.toString(), conf.toString()).directory(nodeDir.toFile())
                        .redirectErrorStream(true).redirectOutput(nodeDir.resolve("redis.out").toFile()).start());
            }
            for (int port : ports()) {
                awaitListening(port, launched.get(port), deadline);
            }
            if (fresh) {
                List<String> cmd = cli(cli, "--cluster", "create");
                cmd.addAll(nodes());
                cmd.addAll(List.of("--cluster-replicas", Integer.toString(replicas), "--cluster-yes"));
                Result r = run(cmd, deadline);
                if (r.code != 0) {
                    throw new IllegalStateException("redis-cli --cluster create failed (exit " + r.code + "): " + tail(r.output));
                }
            }
            awaitClusterOk(deadline);
            return this;
        } catch (IOException e) {
            terminate(launched.values().stream().map(Process::toHandle).toList()); // a failed start leaves no node of its own running
            throw new UncheckedIOException("cannot start the cluster in " + dir + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            terminate(launched.values().stream().map(Process::toHandle).toList());
            throw e;
        }
    }

    /**
     * A guard that stops this cluster ({@link #stop}) when it is closed, or when the JVM exits while
     * it is open: on SIGTERM or SIGINT (Ctrl-C) as on {@link System#exit}. The nodes are separate
     * processes that outlive the JVM otherwise, so an owner that runs a cluster for the length of a
     * task (a benchmark) opens the guard before {@link #start} and closes it when done (in a {@code finally}).
     * {@code strata cluster up}, whose cluster outlives the command on purpose, opens none.
     */
    public StopOnExit stopOnExit() {
        return new StopOnExit(this);
    }

    /**
     * An open {@link #stopOnExit} guard: a shutdown hook that stops the cluster until {@link #close}
     * stops it and removes the hook. Threads: opened and closed by the owner's thread; the hook runs
     * on the JVM's shutdown thread.
     */
    public static final class StopOnExit implements AutoCloseable {
        private final LocalRedisCluster cluster;
        private final Thread hook;

        private StopOnExit(LocalRedisCluster cluster) {
            this.cluster = cluster;
            hook = new Thread(cluster::stop, "strata-redis-cluster-stop");
            Runtime.getRuntime().addShutdownHook(hook);
        }

        /** Stops the cluster, then removes the shutdown hook (during shutdown the hook stops it too). */
        @Override
        public void close() {
            cluster.stop();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the JVM is exiting: the hook runs (or ran) and stops the cluster
            }
        }
    }

    /**
     * Stops every node: SIGTERM, then SIGKILL to any still running after a grace period. Removes
     * nothing from the directory.
     *
     * @return the nodes that were running
     */
    public int stop() {
        List<ProcessHandle> live = new ArrayList<>();
        for (int port : ports()) {
            running(port).ifPresent(live::add);
        }
        terminate(live);
        return live.size();
    }

    /**
     * Stops {@code nodes} and returns once every one has exited: SIGTERM, then SIGKILL to any still
     * running after {@link #STOP_GRACE} (a node shutting down still writes in its directory).
     */
    private static void terminate(List<ProcessHandle> nodes) {
        for (ProcessHandle h : nodes) {
            h.destroy();
        }
        long deadline = System.nanoTime() + STOP_GRACE.toNanos();
        for (ProcessHandle h : nodes) {
            try {
                long left = deadline - System.nanoTime();
                h.onExit().get(Math.max(1, left), TimeUnit.NANOSECONDS);
            } catch (Exception e) {
                h.destroyForcibly();
                h.onExit().join();
            }
        }
    }

    /**
     * Kills the node on {@code port} with SIGKILL (a crash: no shutdown, no save) and waits until
     * it is gone; {@link #start} brings it back.
     *
     * @return false if no node of this cluster was running on {@code port}
     */
    public boolean kill(int port) {
        Optional<ProcessHandle> h = running(port);
        if (h.isEmpty()) {
            return false;
        }
        h.get().destroyForcibly();
        h.get().onExit().join();
        return true;
    }

    /** The ports of the running nodes whose role is now {@code master}. */
    public List<Integer> primaryPorts() {
        List<Integer> out = new ArrayList<>();
        for (NodeStatus s : status()) {
            if ("master".equals(s.role())) {
                out.add(s.port());
            }
        }
        return out;
    }

    /** The number of primaries the cluster was created with. */
    public int primaryCount() {
        return primaries;
    }

    /** Bytes of data each node keeps before it evicts (0: no limit). */
    public long maxmemory() {
        return maxmemory;
    }

    /** One node's state as {@link #status} reports it. */
    public record NodeStatus(int port, long pid, String role, String clusterState) {
    }

    /** Each node's pid (0: not running), role ({@code master}/{@code slave}) and cluster state. */
    public List<NodeStatus> status() {
        List<NodeStatus> out = new ArrayList<>();
        Path cli = binary("redis-cli");
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        for (int port : ports()) {
            Optional<ProcessHandle> h = running(port);
            if (h.isEmpty()) {
                out.add(new NodeStatus(port, 0, "-", "down"));
                continue;
            }
            String info = run(cli(cli, "-h", HOST, "-p", Integer.toString(port), "info", "replication"), deadline).output;
            String cluster = run(cli(cli, "-h", HOST, "-p", Integer.toString(port), "cluster", "info"), deadline).output;
            out.add(new NodeStatus(port, h.get().pid(), field(info, "role"), field(cluster, "cluster_state")));
        }
        return out;
    }

    /** The live {@code redis-server} whose pid file is in the node's directory, if any. */
    private Optional<ProcessHandle> running(int port) {
        Path pidFile = dir.resolve("node-" + port).resolve("redis.pid");
        try {
            if (!Files.isRegularFile(pidFile)) {
                return Optional.empty();
            }
            long pid = Long.parseLong(Files.readString(pidFile).trim());
            // the executable may be a link (Debian: redis-server -> redis-check-rdb), and the server rewrites its title
            return ProcessHandle.of(pid).filter(ProcessHandle::isAlive)
                    .filter(h -> h.info().command().map(c -> c.contains("redis") || c.contains("valkey")).orElse(false));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** A {@code redis-cli} command line with {@code args}, reaching the nodes with TLS when they use it. */
    private List<String> cli(Path cli, String... args) {
        List<String> cmd = new ArrayList<>(List.of(cli.toString()));
        LocalCertificates c = certificates();
        if (c != null) {
            cmd.addAll(List.of("--tls", "--cacert", c.caCert().toString(), "--cert", c.clientCert().toString(),
                    "--key", c.clientKey().toString()));
        }
        cmd.addAll(List.of(args));
        return cmd;
    }

    private String config(int port, Path nodeDir) {
        StringBuilder c = new StringBuilder();
        LocalCertificates certs = certificates();
        if (certs == null) {
            c.append("port ").append(port).append('\n');
        } else {
            c.append("port 0\n");
            c.append("tls-port ").append(port).append('\n');
            c.append("tls-cluster yes\n");
            c.append("tls-replication yes\n");
            c.append("tls-cert-file ").append(certs.nodeCert().toAbsolutePath()).append('\n');
            c.append("tls-key-file ").append(certs.nodeKey().toAbsolutePath()).append('\n');
            c.append("tls-ca-cert-file ").append(certs.caCert().toAbsolutePath()).append('\n');
            c.append("tls-auth-clients ").append(tls == Tls.MUTUAL ? "yes" : "optional").append('\n');
        }
        c.append("bind ").append(HOST).append('\n');
        c.append("dir ").append(nodeDir.toAbsolutePath()).append('\n');
        c.append("pidfile ").append(nodeDir.toAbsolutePath().resolve("redis.pid")).append('\n');
        c.append("logfile ").append(nodeDir.toAbsolutePath().resolve("redis.log")).append('\n');
        c.append("daemonize no\n");
        c.append("cluster-enabled yes\n");
        c.append("cluster-config-file nodes.conf\n");
        c.append("cluster-node-timeout 2000\n");
        c.append("cluster-require-full-coverage no\n");
        c.append("save \"\"\n");
        c.append("appendonly no\n");
        c.append("protected-mode yes\n");
        c.append("maxmemory ").append(maxmemory).append('\n');
        c.append("maxmemory-policy ").append(maxmemoryPolicy).append('\n');
        if (password != null) {
            c.append("requirepass ").append(password).append('\n');
            c.append("masterauth ").append(password).append('\n');
        }
        return c.toString();
    }

    /**
     * Waits until {@code port} accepts connections and, for a node this call started ({@code node},
     * else null), until that node has written its pid file, which Redis does once it has bound its
     * port: another process listening on the port does not pass for the node. A node that exits
     * first (its port was taken) fails the start, naming the port, with the end of its log.
     */
    private void awaitListening(int port, Process node, long deadline) {
        Path pidFile = dir.resolve("node-" + port).resolve("redis.pid");
        while (true) {
            if (node != null && !node.isAlive()) {
                throw new IllegalStateException("redis-server for " + HOST + ":" + port + " exited (exit " + node.exitValue()
                        + ") before the cluster formed; its log " + dir.resolve("node-" + port).resolve("redis.log") + " ends: "
                        + logTail(port));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(HOST, port), 200);
                if (node == null || Files.isRegularFile(pidFile)) {
                    return;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("a process listens on " + HOST + ":" + port + " but redis-server there wrote no pid"
                            + " file " + pidFile + "; its log ends: " + logTail(port));
                }
                sleep(20);
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("redis-server on " + HOST + ":" + port + " did not start listening; its log "
                            + dir.resolve("node-" + port).resolve("redis.log") + " ends: " + logTail(port));
                }
                sleep(50);
            }
        }
    }

    private void awaitClusterOk(long deadline) {
        Path cli = binary("redis-cli");
        for (int port : ports()) {
            while (true) {
                Result r = run(cli(cli, "-h", HOST, "-p", Integer.toString(port), "cluster", "info"), deadline);
                if ("ok".equals(field(r.output, "cluster_state"))) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the cluster in " + dir + " is not ok on " + HOST + ":" + port
                            + " (cluster_state:" + field(r.output, "cluster_state") + ")");
                }
                sleep(100);
            }
        }
    }

    /** The value of {@code name:value} in an INFO-style text, or "?" when absent. */
    private static String field(String info, String name) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith(name + ":")) {
                return line.substring(name.length() + 1).trim();
            }
        }
        return "?";
    }

    private record Result(int code, String output) {
    }

    /** Runs a redis tool with the password in its environment, not its arguments. */
    private Result run(List<String> cmd, long deadline) {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        env.remove("REDISCLI_AUTH");
        if (password != null) {
            env.put("REDISCLI_AUTH", password);
        }
        try {
            Process p = pb.start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            long left = Math.max(1, deadline - System.nanoTime());
            if (!p.waitFor(left, TimeUnit.NANOSECONDS)) {
                p.destroyForcibly();
                return new Result(-1, out);
            }
            return new Result(p.exitValue(), out);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + cmd.getFirst() + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + cmd.getFirst(), e);
        }
    }

    private String logTail(int port) {
        try {
            return tail(Files.readString(dir.resolve("node-" + port).resolve("redis.log")));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private static String tail(String text) {
        String t = text.strip();
        return t.length() > 600 ? "..." + t.substring(t.length() - 600) : t;
    }

    /**
     * The executable {@code name} on the PATH.
     *
     * @throws IllegalStateException naming the binary and how to install it
     */
    static Path binary(String name) {
        return binary(name, "a local Redis Cluster needs Redis 7 or Valkey:"
                + " install it with 'apt-get install -y redis-server' (Debian, Ubuntu) or your system's package of Redis 7");
    }

    /**
     * The executable {@code name} on the PATH.
     *
     * @param why what needs it and how to install it, for the error
     * @throws IllegalStateException naming the binary and {@code why}
     */
    static Path binary(String name, String why) {
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(java.io.File.pathSeparator)) {
                if (d.isEmpty()) {
                    continue;
                }
                Path p = Path.of(d, name);
                if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                    return p;
                }
            }
        }
        throw new IllegalStateException(name + " is not on the PATH; " + why);
    }

    /** True when {@code redis-server} and {@code redis-cli} are on the PATH. */
    public static boolean available() {
        try {
            binary("redis-server");
            binary("redis-cli");
            return true;
        } catch (IllegalStateException e) {
            return false;
        }
    }

    private static void writePrivate(Path file, String text) throws IOException {
        Files.deleteIfExists(file.resolveSibling(file.getFileName() + ".tmp"));
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(tmp, text, StandardCharsets.UTF_8, StandardOpenOption.TRUNCATE_EXISTING);
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the cluster", e);
        }
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "local Redis Cluster in %s: %d primaries × %d replicas on %s:%d-%d, %s per node (%s)%s", dir,
                primaries, replicas, HOST, portBase, portBase + ports().size() - 1,
                maxmemory == 0 ? "no memory limit" : (maxmemory >> 20) + " MiB", maxmemoryPolicy,
                switch (tls) {
                    case OFF -> "";
                    case ON -> ", TLS";
                    case MUTUAL -> ", mutual TLS";
                });
    }
}
