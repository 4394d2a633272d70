package dev.strata.cluster;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.SeenTwiceAdmission;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.memory.log.Log;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.MaintNotificationsConfig;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.SslVerifyMode;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.resource.DefaultClientResources;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * KV blocks shared across machines through a Redis Cluster: the CLUSTER tier, seen by the KV
 * manager as its {@link SharedBlockStore}, so that a prefix computed on one inference machine is
 * reused on every other that serves the same model with the same KV geometry.
 *
 * <h2>Protocol</h2>
 * A block lives under the key {@code strata:kv:1:TENANT:MODEL:GEOMETRY:BLOCK} (the tenant of the
 * configuration, the model fingerprint, the geometry fingerprint and the chained prefix hash,
 * all hex), so that tenants, models and geometries never share a value, and keys spread over
 * every slot of the cluster. Its value is a {@link ClusterBlockFormat} header and the block's
 * bytes. A write is {@code SET NX PX ttl}: the first writer wins, a block is stored once however
 * many machines write it, is immutable once published, and expires after the TTL. Block reads and
 * writes travel on {@link BlockPipeline}, Strata's own connections to the primaries, routed by the
 * Lettuce client's slot map (with TLS, on the Lettuce client's connections). Writes go
 * through a {@link ClusterWriteQueue}: sent without waiting, pipelined, in a bounded window; when
 * ({@code tiers.cluster.write}) is at commit (write-through) or as the block leaves this machine's
 * HOST tier (write-behind, {@link #evicted}), optionally only for blocks used twice.
 * {@link #matchPrefix} sends the keys' {@code EXISTS} without waiting between them (pipelined, in
 * batches of 8, 32, then 128 keys, so that a short match costs one round trip and a long one a
 * few). {@link #readAsync} checks every header field of the value as it arrives, then copies the
 * payload into the destination in the pass that checks its checksum; a value failing any check is deleted
 * if it still holds the bytes that failed (a script compares their SHA-1, so a correct value
 * written in between is kept), counted by check, and answered absent, never loaded.
 *
 * <h2>Failure</h2>
 * The cluster is lossy by nature: a value may expire, be evicted by the cluster's memory policy,
 * or be lost with a node. No call waits on the cluster longer than the configured timeout; an
 * unreachable, slow or failing cluster is counted ({@link ClusterMetrics.ErrorKind}) and
 * answered as a miss or a dropped write, never thrown into the KV manager. After a timeout, calls
 * skip the cluster for a second (counted as skipped), so a slow cluster costs the scheduler at
 * most one timeout a second; a disconnected node's commands fail at once and skip nothing else. The client reconnects by itself (every
 * second at most) and follows failovers and slot moves (topology refreshes are counted); the
 * store works again once the cluster answers. Only {@link #open} fails loudly: a cluster that
 * cannot be reached or that refuses the credentials at start-up is an error naming the node and
 * the cause; one whose TLS handshake fails (another CA, no client certificate where one is
 * required, a plain client at a TLS port) names the {@code tiers.cluster.tls*} keys to check.
 *
 * <h2>TLS</h2>
 * With {@code tiers.cluster.tls}, every connection (the cluster client's, to seeds and to the
 * nodes it discovers, and the per-node diagnosis) uses one {@link SslOptions}: the CA file as its
 * trust (else the JVM's trust store), the client certificate and key when given, and the seed
 * URIs' verify mode, which the cluster client copies to discovered nodes.
 *
 * <p>Threads: any thread may call any method concurrently; the connection is shared and
 * thread-safe. {@link #close} once, after the last call.
 */
public final class ClusterBlockStore implements SharedBlockStore, AutoCloseable {
    private static final int[] MATCH_BATCHES = {8, 32, 128}; // EXISTS per round trip, growing while every key exists
    private static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final java.util.logging.Logger CLIENT_LOG = java.util.logging.Logger.getLogger("io.lettuce"); // held: levels live on held loggers
    private static final java.util.logging.Logger NETTY_LOG = java.util.logging.Logger.getLogger("io.netty"); // the client's event loops

    private final ClusterSettings settings;
    private final String prefix;     // "strata:kv:1:TENANT:MODEL:GEOMETRY:"
    private final long geometry;     // ClusterBlockFormat.geometryFingerprint of the served geometry
    private final long valueBytes;   // bytes of one block's value: the header and a block of the served geometry
    private final long timeoutNanos; // the longest any call waits
    private final ClusterMetrics metrics = new ClusterMetrics();
    private final ClientResources resources;
    private final RedisClusterClient client;
    private volatile Link link; // the connection; null until the cluster was first reached
    private volatile boolean closed;
    private Thread connector;   // connects in the background when the cluster was unreachable at start-up; null otherwise
    private final AtomicLong lastWarning = new AtomicLong(System.nanoTime() - WARN_INTERVAL_NANOS); // nanoTime of the last logged error
    private final SeenTwiceAdmission admission; // uses of blocks by this process; null: every block is written
    private volatile long unavailableUntil = System.nanoTime(); // nanoTime before which calls skip the cluster
    private final reactor.core.Disposable topologyEvents;       // counts the topology changes the client follows

    /** An open connection to the cluster and the write window over it. */
    private record Link(StatefulRedisClusterConnection<String, ClusterValue> connection, RedisAdvancedClusterAsyncCommands<String, ClusterValue> commands,
                        BlockPipeline blocks, ClusterWriteQueue writes) {
    }

    private ClusterBlockStore(ClusterSettings settings, String prefix, long geometry, long valueBytes, ClientResources resources,
                              RedisClusterClient client, StatefulRedisClusterConnection<String, ClusterValue> connection) {
        this.settings = settings;
        this.prefix = prefix;
        this.geometry = geometry;
        this.valueBytes = valueBytes;
        this.timeoutNanos = settings.timeout().toNanos();
        this.resources = resources;
        this.client = client;
        this.admission = settings.admission() == StrataConfig.ClusterAdmission.SEEN_TWICE ? new SeenTwiceAdmission(1 << 16) : null;
        if (connection != null) {
            attach(connection);
        }
        metrics.availability(this::available);
        metrics.capacityHint(settings.capacityHint());
        this.topologyEvents = resources.eventBus().get()
                .filter(e -> e instanceof io.lettuce.core.cluster.event.ClusterTopologyChangedEvent)
                .subscribe(e -> metrics.topologyRefreshed());
    }

    private void attach(StatefulRedisClusterConnection<String, ClusterValue> connection) {
        RedisAdvancedClusterAsyncCommands<String, ClusterValue> commands = connection.async();
        long ttlMillis = settings.ttl().toMillis();
        BlockPipeline blocks = null;
        ClusterWriteQueue.Sender sender;
        if (settings.tls()) { // the cluster client's connections carry TLS; blocks go through them
            SetArgs nxPx = SetArgs.Builder.nx().px(ttlMillis);
            sender = (k, v) -> commands.set(k, v, nxPx);
        } else {
            BlockPipeline b = new BlockPipeline(connection::getPartitions, () -> client.refreshPartitionsAsync(), settings.user(),
                    settings.password(), timeoutNanos, settings.connectionsPerPrimary());
            blocks = b;
            sender = (k, v) -> b.set(k, v, ttlMillis);
        }
        link = new Link(connection, commands, blocks,
                new ClusterWriteQueue(sender, metrics, valueBytes, settings.queueBytes(), admission, this::failed));
    }

    /** Why the cluster could not be opened. */
    public static final class OpenFailure extends IllegalStateException {
        private final boolean credentialsRefused;

        OpenFailure(String message, boolean credentialsRefused) {
            super(message);
            this.credentialsRefused = credentialsRefused;
        }

        /** True when a node answered and refused the credentials (a configuration error, not an outage). */
        public boolean credentialsRefused() {
            return credentialsRefused;
        }
    }

    /**
     * Connects to the cluster for blocks of the model {@code model} with geometry {@code kv}.
     *
     * @param connectWait the longest to wait for the first connection and the cluster's topology
     * @throws OpenFailure naming the node and the cause (never the password) when no node can be
     *                     reached or a node refuses the credentials
     */
    public static ClusterBlockStore open(ClusterSettings settings, ObjectKey model, KvGeometry kv, Duration connectWait) {
        return open(settings, model, kv, connectWait, null);
    }

    /**
     * As {@link #open}, but a cluster that cannot be reached now is not an error: the store starts
     * without it (every call answers absent and is counted as skipped, {@code strata_cluster_available}
     * is 0) and connects in the background every {@code retry} until the cluster answers. A node
     * that answers and refuses the credentials is still an error: waiting would not fix it.
     *
     * @throws OpenFailure when a node refuses the credentials
     */
    public static ClusterBlockStore openOrConnectLater(ClusterSettings settings, ObjectKey model, KvGeometry kv, Duration connectWait,
                                                       Duration retry) {
        return open(settings, model, kv, connectWait, Objects.requireNonNull(retry, "retry"));
    }

    /** Opens the store; when the cluster cannot be reached, fails ({@code retry} null) or connects later. */
    private static ClusterBlockStore open(ClusterSettings settings, ObjectKey model, KvGeometry kv, Duration connectWait, Duration retry) {
        ClusterBlockStore store = create(settings, model, kv, connectWait);
        try {
            store.attach(connect(store.client, settings));
            return store;
        } catch (RuntimeException e) {
            Diagnosis why = diagnose(settings, store.resources, connectWait, e);
            if (retry == null || why.credentialsRefused) {
                store.close();
                throw new OpenFailure(why.text, why.credentialsRefused);
            }
            Log.warn("cluster", why.text + "; serving without the cluster and connecting again every " + retry.toMillis() + " ms");
            store.connectLater(retry);
            return store;
        }
    }

    private static ClusterBlockStore create(ClusterSettings settings, ObjectKey model, KvGeometry kv, Duration connectWait) {
        Objects.requireNonNull(model, "model fingerprint");
        CLIENT_LOG.setLevel(java.util.logging.Level.SEVERE); // the store's own rate-limited warnings and counters report the cluster
        NETTY_LOG.setLevel(java.util.logging.Level.OFF);     // e.g. listener notifications refused while the client shuts down
        long geometry = ClusterBlockFormat.geometryFingerprint(kv);
        String prefix = "strata:kv:" + ClusterBlockFormat.VERSION + ":" + settings.tenant() + ":" + model + ":"
                + String.format("%016x", geometry) + ":";
        List<RedisURI> uris = new ArrayList<>();
        for (String n : settings.nodes()) {
            uris.add(uri(settings, n, connectWait));
        }
        ClientResources resources = DefaultClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2)
                .reconnectDelay(Delay.exponential(Duration.ofMillis(50), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS)).build();
        RedisClusterClient client = RedisClusterClient.create(resources, uris);
        ClusterClientOptions.Builder options = ClusterClientOptions.builder();
        // maintenance notifications (a managed-service feature) would need a logging library Strata does not ship
        options.maintNotificationsConfig(MaintNotificationsConfig.disabled());
        client.setOptions(options
                .sslOptions(sslOptions(settings, connectWait))
                .autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(SocketOptions.builder().connectTimeout(connectWait).build())
                .timeoutOptions(TimeoutOptions.enabled(settings.timeout()))
                // follow a failover quickly: refresh the topology after two failed reconnects or a redirect, at most once a second,
                // and every 10 s regardless
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder().enablePeriodicRefresh(Duration.ofSeconds(10))
                        .enableAllAdaptiveRefreshTriggers().refreshTriggersReconnectAttempts(2)
                        .adaptiveRefreshTriggersTimeout(Duration.ofSeconds(1)).build())
                .build());
        return new ClusterBlockStore(settings, prefix, geometry, ClusterBlockFormat.HEADER_BYTES + (long) kv.bytesPerBlock(), resources, client,
                null);
    }

    /** Opens the connection and one to every node (a node connection opened lazily rejects the commands sent while it connects). */
    private static StatefulRedisClusterConnection<String, ClusterValue> connect(RedisClusterClient client, ClusterSettings settings) {
        StatefulRedisClusterConnection<String, ClusterValue> c = client.connect(ClusterValueCodec.INSTANCE);
        try {
            c.setTimeout(settings.timeout());
            for (var node : c.getPartitions()) {
                c.getConnection(node.getUri().getHost(), node.getUri().getPort());
            }
            return c;
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /** Starts the thread that connects every {@code retry} until the cluster answers or the store closes. */
    private synchronized void connectLater(Duration retry) {
        connector = Thread.ofPlatform().daemon().name("strata-cluster-connect").start(() -> {
            while (!closed && link == null) {
                try {
                    Thread.sleep(retry);
                } catch (InterruptedException e) {
                    return;
                }
                try {
                    attach(connect(client, settings));
                    Log.info("cluster", "connected to " + settings.nodes() + "; KV blocks are shared through the cluster from now on");
                } catch (RuntimeException e) {
                    metrics.error(kindOf(e));
                }
            }
        });
    }

    /** True once the store has a connection to the cluster (it may still be unavailable now and then). */
    public boolean connected() {
        return link != null;
    }

    private static RedisURI uri(ClusterSettings s, String node, Duration timeout) {
        int colon = node.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("cluster node '" + node + "' is not host:port");
        }
        RedisURI.Builder b = RedisURI.Builder.redis(node.substring(0, colon), Integer.parseInt(node.substring(colon + 1)))
                .withSsl(s.tls()).withTimeout(timeout);
        if (s.tls()) {
            // the cluster client gives the nodes it discovers (topology refreshes) the seed's TLS and verification
            b.withVerifyPeer(switch (s.tlsFiles().verify()) {
                case FULL -> SslVerifyMode.FULL;
                case CA -> SslVerifyMode.CA;
                case NONE -> SslVerifyMode.NONE;
            });
        }
        if (s.password() != null) {
            if (s.user() != null) {
                b.withAuthentication(s.user(), s.password().toCharArray());
            } else {
                b.withPassword(s.password().toCharArray());
            }
        }
        return b.build();
    }

    /**
     * What every TLS connection trusts and presents: the CA file (else the JVM's trust store) and
     * the client certificate and key when given; a handshake waits at most {@code wait}.
     */
    private static SslOptions sslOptions(ClusterSettings s, Duration wait) {
        SslOptions.Builder b = SslOptions.builder().jdkSslProvider().handshakeTimeout(wait);
        ClusterSettings.TlsFiles f = s.tlsFiles();
        if (f.caFile() != null) {
            b.trustManager(f.caFile().toFile());
        }
        if (f.certFile() != null) {
            b.keyManager(f.certFile().toFile(), f.keyFile().toFile(), null);
        }
        return b.build();
    }

    /**
     * Why the cluster could not be opened: each seed node is tried on its own, so the message
     * names the node that refused (credentials, or not a cluster) or says that none answered.
     */
    private record Diagnosis(String text, boolean credentialsRefused) {
    }

    private static Diagnosis diagnose(ClusterSettings s, ClientResources resources, Duration wait, RuntimeException e) {
        StringBuilder why = new StringBuilder();
        String tlsHint = null;
        for (String node : s.nodes()) {
            RedisClient single = RedisClient.create(resources, uri(s, node, wait));
            single.setOptions(ClientOptions.builder().maintNotificationsConfig(MaintNotificationsConfig.disabled())
                    .sslOptions(sslOptions(s, wait)).build());
            try (StatefulRedisConnection<String, String> c = single.connect()) {
                String info = c.sync().clusterInfo();
                if (!info.contains("cluster_state:ok")) {
                    why.append("; node ").append(node).append(" answers but its cluster is not ok");
                }
            } catch (RuntimeException nodeError) {
                String m = rootMessage(nodeError);
                boolean auth = m.contains("WRONGPASS") || m.contains("NOAUTH") || m.contains("invalid password")
                        || m.contains("invalid username-password");
                why.append("; node ").append(node).append(auth ? " refused the credentials (" : " failed (").append(firstLine(m)).append(')');
                tlsHint = tlsHint != null ? tlsHint : tlsHint(s, nodeError);
            } finally {
                single.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            }
        }
        String text = "cannot open the cluster tier at " + s.nodes() + " (tiers.cluster.nodes): " + firstLine(rootMessage(e)) + why
                + (why.indexOf("credentials") >= 0 ? " — check tiers.cluster.user and the password in tiers.cluster.password-env"
                + " or tiers.cluster.password-file" : "") + (tlsHint != null && why.indexOf("credentials") < 0 ? " — " + tlsHint : "");
        return new Diagnosis(s.scrub(text), why.indexOf("credentials") >= 0);
    }

    /**
     * What to check when a node's failure looks like TLS: a failed handshake with TLS, or a
     * connection closed at once without (a node listening with TLS drops a plain client); null
     * otherwise.
     */
    private static String tlsHint(ClusterSettings s, Throwable error) {
        boolean handshake = false;
        boolean closed = false;
        for (Throwable c = error; c != null; c = c.getCause() == c ? null : c.getCause()) {
            handshake |= c instanceof javax.net.ssl.SSLException;
            String m = String.valueOf(c.getMessage());
            closed |= m.contains("Connection closed") || m.contains("Connection reset") || m.contains("closed prematurely")
                    || m.contains("Connection is closed");
        }
        if (!s.tls()) {
            return closed ? "the node closed the connection at once, as a node listening with TLS does to a plain client:"
                    + " if the cluster uses TLS, set tiers.cluster.tls: true and tiers.cluster.tls-ca-file" : null;
        }
        if (!handshake && !closed) {
            return null;
        }
        ClusterSettings.TlsFiles f = s.tlsFiles();
        return "the TLS handshake failed: check that tiers.cluster.tls-ca-file ("
                + (f.caFile() != null ? f.caFile() : "not set: the JVM's trust store") + ") holds the CA that signed the nodes' certificates"
                + (f.certFile() == null ? ", and give tiers.cluster.tls-cert-file and tls-key-file if the nodes require client"
                + " certificates (tls-auth-clients yes)" : ", and that the nodes trust the CA of tiers.cluster.tls-cert-file (" + f.certFile() + ")")
                + (f.verify() == StrataConfig.ClusterTlsVerify.FULL ? "; with tls-verify: full each certificate must also name the host"
                + " or IP address it is reached at" : "");
    }

    /** The first line of a client message (the cluster client appends a multi-line list of every seed's failure). */
    private static String firstLine(String m) {
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl).strip();
    }

    private static String rootMessage(Throwable t) {
        Throwable c = t;
        while (c.getCause() != null && c.getCause() != c) {
            c = c.getCause();
        }
        String m = c.getMessage() != null ? c.getMessage() : c.getClass().getSimpleName();
        return c == t ? m : Objects.requireNonNullElse(t.getMessage(), "") + ": " + m;
    }

    /** The cluster key of block {@code key}. */
    String keyOf(ObjectKey key) {
        return prefix + key;
    }

    /** The {@code strata_cluster_*} families. Any thread. */
    @Override
    public void writeMetrics(dev.strata.memory.metrics.PrometheusText out) {
        metrics.writeTo(out);
    }

    /** This store's counters. */
    public ClusterMetrics metrics() {
        return metrics;
    }

    /** The settings this store was opened with. */
    public ClusterSettings settings() {
        return settings;
    }

    /** True while calls go to the cluster; false for a short while after it timed out or was unreachable. */
    boolean available() {
        return link != null && System.nanoTime() - unavailableUntil >= 0;
    }

    /** Calls skip the cluster for {@link #BACKOFF_NANOS} after a timeout. */
    private static final long BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(1);

    @Override
    public int matchPrefix(ObjectKey[] keys, int from, int count) {
        Link l = link;
        if (l == null || !available()) {
            metrics.countSkipped();
            return 0;
        }
        RedisAdvancedClusterAsyncCommands<String, ClusterValue> commands = l.commands();
        long start = System.nanoTime();
        long deadline = start + timeoutNanos;
        int matched = 0;
        int round = 0;
        try {
            while (matched < count) {
                int batch = Math.min(MATCH_BATCHES[Math.min(round++, MATCH_BATCHES.length - 1)], count - matched);
                List<RedisFuture<Long>> sent = new ArrayList<>(batch);
                for (int i = 0; i < batch; i++) {
                    sent.add(commands.exists(keyOf(keys[from + matched + i])));
                }
                for (int i = 0; i < batch; i++) {
                    Long found = await(sent.get(i), deadline);
                    if (found == null || found == 0) {
                        metrics.matched(matched);
                        return matched;
                    }
                    matched++;
                }
            }
            metrics.matched(matched);
            return matched;
        } catch (Failure f) {
            failed(f.kind, f.getCause(), "matching a prefix");
            metrics.matched(matched);
            return matched;
        } finally {
            metrics.latency(ClusterMetrics.Op.MATCH, System.nanoTime() - start);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: false also when the cluster fails or does not answer within the timeout, and when
     * the value fails a check (it is then deleted and counted); never throws for the cluster.
     */
    @Override
    public boolean read(ObjectKey key, List<MemorySegment> destinations) {
        try {
            return readAsync(key, destinations).get(timeoutNanos + TimeUnit.SECONDS.toNanos(1), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (ExecutionException | TimeoutException e) {
            failed(ClusterMetrics.ErrorKind.OTHER, e, "reading block " + key);
            return false;
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: the value arrives in the client's receive buffer in this process (HOST memory, the
     * first stage); as the reply is decoded, on the client's thread, its header is checked and
     * its payload copied into {@code destinations} (the second stage) by the pass that checksums
     * it ({@link ClusterBlockRead}). The future completes false when the value is absent, fails a
     * check (it is then deleted and counted; after a failed checksum the destinations hold
     * unverified bytes, to be discarded as on any false), or the cluster fails or does not answer
     * within the timeout; a reply that comes after that never touches the destinations. It never
     * completes exceptionally for the cluster.
     */
    @Override
    public CompletableFuture<Boolean> readAsync(ObjectKey key, List<MemorySegment> destinations) {
        Link l = link;
        if (l == null || !available()) {
            metrics.countSkipped();
            return CompletableFuture.completedFuture(false);
        }
        long total = 0;
        for (MemorySegment d : destinations) {
            total += d.byteSize();
        }
        final long expected = total;
        long start = System.nanoTime();
        ClusterBlockRead read = new ClusterBlockRead(key, geometry, expected, destinations);
        java.util.concurrent.CompletionStage<ClusterBlockRead.Outcome> get;
        try {
            get = l.blocks() != null ? l.blocks().get(keyOf(key), read)
                    : l.commands().dispatch(CommandType.GET, read, new CommandArgs<>(ClusterValueCodec.INSTANCE).addKey(keyOf(key)));
        } catch (RuntimeException e) {
            read.abandon();
            failed(kindOf(e), e, "reading block " + key);
            return CompletableFuture.completedFuture(false);
        }
        CompletableFuture<Boolean> answer = new CompletableFuture<>();
        get.whenComplete((outcome, error) -> {
            if (error == null) {
                answer.complete(counted(key, outcome, start));
            } else if (read.abandon()) { // ended before a reply landed: the destinations are the caller's again
                metrics.latency(ClusterMetrics.Op.READ, System.nanoTime() - start);
                Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null ? error.getCause() : error;
                failed(kindOf(cause), cause, "reading block " + key);
                answer.complete(false);
            } else { // the reply is landing as the read ends: its outcome stands
                read.landed().whenComplete((o, landingError) -> answer.complete(landingError == null && counted(key, o, start)));
            }
        });
        return answer;
    }

    /** Counts what a read found (a failed check: also deletes the value if it still holds those bytes); true for a hit. */
    private boolean counted(ObjectKey key, ClusterBlockRead.Outcome o, long start) {
        metrics.latency(ClusterMetrics.Op.READ, System.nanoTime() - start);
        if (o.hit()) {
            metrics.hit(o.size() - ClusterBlockFormat.HEADER_BYTES);
            return true;
        }
        if (o.bad() == null) {
            metrics.miss();
            return false;
        }
        metrics.countCorrupt(o.bad());
        warn("the cluster's value of block " + key + " failed its " + o.bad().name().toLowerCase(java.util.Locale.ROOT)
                + " check (" + o.size() + " bytes); deleted, not loaded");
        deleteIfStill(key, o.sha1());
        return false;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here, with {@code write: commit}: the block's bytes are copied into a value and its write
     * is sent without waiting for the answer; PUBLISHED means sent (its outcome is counted when it
     * comes), FULL means not written: refused by the admission filter, dropped because the write
     * window is full, or the cluster is unavailable (counted by reason). With
     * {@code write: eviction}: DEFERRED, nothing is written now ({@link #evicted} writes it).
     */
    @Override
    public PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
        if (settings.write() == StrataConfig.ClusterWrite.EVICTION) {
            metrics.deferred();
            return PublishStatus.DEFERRED;
        }
        return write(key, sources);
    }

    /** With {@code write: eviction}: writes the block leaving this process's HOST tier, as {@link #publish} does at commit. */
    @Override
    public void evicted(ObjectKey key, MemorySegment bytes) {
        if (settings.write() == StrataConfig.ClusterWrite.EVICTION) {
            write(key, List.of(bytes));
        }
    }

    /** Counts a use of block {@code key} by this process, for the seen-twice admission filter. */
    @Override
    public void used(ObjectKey key) {
        if (admission != null) {
            admission.recordUse(key);
        }
    }

    private PublishStatus write(ObjectKey key, List<MemorySegment> sources) {
        Link l = link;
        if (l == null || !available()) {
            metrics.countSkipped();
            metrics.countDropped(ClusterMetrics.DropReason.UNAVAILABLE);
            return PublishStatus.FULL;
        }
        long payload = 0;
        for (MemorySegment m : sources) {
            payload += m.byteSize();
        }
        ClusterWriteQueue.Offer o = l.writes().offer(key, keyOf(key), payload + ClusterBlockFormat.HEADER_BYTES,
                value -> ClusterBlockFormat.encode(key, geometry, sources, value));
        return o == ClusterWriteQueue.Offer.SENT ? PublishStatus.PUBLISHED : PublishStatus.FULL;
    }

    /**
     * Waits until every write sent has been answered, at most {@code wait}: for a caller that must
     * know its blocks are in the cluster (a benchmark, a test, an orderly shutdown).
     *
     * @return true if no write is left in flight
     */
    public boolean awaitWrites(Duration wait) {
        try {
            Link l = link;
            return l == null || l.writes().awaitEmpty(wait.toNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Waits until the write window has room for another block, at most {@code wait}: for a
     * producer that would rather wait than have its writes dropped (a bulk load, a benchmark).
     * Serving never calls it: the KV manager's writes are dropped when the window is full.
     *
     * @return true if the window had room (another caller may take it first)
     */
    public boolean awaitWriteRoom(Duration wait) {
        try {
            Link l = link;
            return l != null && l.writes().awaitRoom(wait.toNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Deletes a value that failed a check only if it still holds those bytes; waits at most the timeout. */
    private static final String DELETE_IF_SAME = "local v = redis.call('GET', KEYS[1]) "
            + "if v and redis.sha1hex(v) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

    /** As {@link #deleteIfStill(ObjectKey, String)} for the value {@code value}. */
    java.util.concurrent.CompletionStage<Long> deleteIfStill(ObjectKey key, byte[] value) {
        return deleteIfStill(key, ClusterBlockRead.sha1Hex(java.nio.ByteBuffer.wrap(value)));
    }

    /**
     * Deletes block {@code key}'s value if it still has the SHA-1 {@code sha1Hex}.
     *
     * @return the number of values deleted (0 or 1), when the cluster answers; failures are counted
     */
    java.util.concurrent.CompletionStage<Long> deleteIfStill(ObjectKey key, String sha1Hex) {
        Link l = link;
        if (l == null) {
            return CompletableFuture.completedFuture(0L);
        }
        RedisAdvancedClusterAsyncCommands<String, ClusterValue> commands = l.commands();
        long start = System.nanoTime();
        try {
            RedisFuture<Long> f = commands.eval(DELETE_IF_SAME, ScriptOutputType.INTEGER, new String[] {keyOf(key)},
                    new ClusterValue.Bytes(sha1Hex.getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
            f.whenComplete((n, error) -> {
                metrics.latency(ClusterMetrics.Op.DELETE, System.nanoTime() - start);
                if (error != null) {
                    failed(kindOf(error), error, "deleting block " + key);
                }
            });
            return f;
        } catch (RuntimeException e) {
            failed(kindOf(e), e, "deleting block " + key);
            return CompletableFuture.failedFuture(e);
        }
    }

    /** A request the cluster failed or did not answer in time. */
    private static final class Failure extends Exception {
        final ClusterMetrics.ErrorKind kind;

        Failure(ClusterMetrics.ErrorKind kind, Throwable cause) {
            super(cause);
            this.kind = kind;
        }
    }

    private static <T> T await(RedisFuture<T> f, long deadline) throws Failure {
        try {
            return f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new Failure(ClusterMetrics.ErrorKind.TIMEOUT, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            f.cancel(true);
            throw new Failure(ClusterMetrics.ErrorKind.OTHER, e);
        } catch (ExecutionException e) {
            throw new Failure(kindOf(e.getCause()), e.getCause());
        } catch (RuntimeException e) {
            throw new Failure(kindOf(e), e);
        }
    }

    static ClusterMetrics.ErrorKind kindOf(Throwable t) {
        if (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof BlockPipeline.RequestFailure f) {
            return f.kind;
        }
        String m = String.valueOf(t != null ? t.getMessage() : null);
        if (t instanceof RedisCommandTimeoutException) {
            return ClusterMetrics.ErrorKind.TIMEOUT;
        }
        if (m.contains("NOAUTH") || m.contains("WRONGPASS")) {
            return ClusterMetrics.ErrorKind.AUTH;
        }
        if (t instanceof RedisConnectionException || m.contains("not connected") || m.contains("Connection closed")
                || m.contains("Connection refused") || m.contains("CLUSTERDOWN") || m.contains("Connection is closed")) {
            return ClusterMetrics.ErrorKind.UNAVAILABLE;
        }
        return ClusterMetrics.ErrorKind.OTHER;
    }

    /**
     * Counts a failed request and logs it (rate-limited); a timeout makes calls skip the cluster
     * for a second, so that a slow cluster costs at most one timeout per second on the threads
     * that call the store. A node that is not connected costs nothing (its commands are rejected
     * at once), so it marks nothing: the other nodes' slots go on serving, e.g. during a failover.
     */
    private void failed(ClusterMetrics.ErrorKind kind, Throwable c, String what) {
        metrics.error(kind);
        if (kind == ClusterMetrics.ErrorKind.TIMEOUT) {
            unavailableUntil = System.nanoTime() + BACKOFF_NANOS;
        }
        warn(what + " in the cluster failed (" + kind.name().toLowerCase(java.util.Locale.ROOT) + ": "
                + (c == null ? "?" : c.getClass().getSimpleName() + (c.getMessage() != null ? " " + c.getMessage() : ""))
                + "); answered as absent (more such errors are counted in strata_cluster_errors_total)");
    }

    /** Logs at most one warning every 10 s; the counters carry the rest. */
    private void warn(String message) {
        long now = System.nanoTime();
        long last = lastWarning.get();
        if (now - last >= WARN_INTERVAL_NANOS && lastWarning.compareAndSet(last, now)) {
            Log.warn("cluster", settings.scrub(message));
        }
    }

    @Override
    public void close() {
        awaitWrites(settings.timeout().plusSeconds(1)); // writes already sent are answered before the connection closes
        closed = true;
        Thread t;
        synchronized (this) {
            t = connector;
        }
        try {
            if (t != null) {
                t.interrupt();
                t.join(5_000);
            }
            topologyEvents.dispose();
            Link l = link;
            if (l != null) {
                if (l.blocks() != null) {
                    l.blocks().close();
                }
                l.connection().close();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            boolean stopped = false;
            try {
                stopped = resources.shutdown(0, 2, TimeUnit.SECONDS).await(3, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Link l = link;
            if (stopped && l != null) {
                l.writes().close(); // no event loop encodes from the write window any more; else it is left to the collector
            }
        }
    }

    @Override
    public String toString() {
        return "cluster block store over " + settings;
    }
}
