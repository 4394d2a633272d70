package dev.strata.cluster;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.memory.log.Log;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.MaintNotificationsConfig;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.resource.DefaultClientResources;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
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
 * bytes. {@link #publish} is {@code SET NX PX ttl}: the first writer wins, a block is immutable
 * once published, and it expires after the TTL unless published again after that.
 * {@link #matchPrefix} sends the keys' {@code EXISTS} without waiting between them (pipelined, in
 * batches of 8, 32, then 128 keys, so that a short match costs one round trip and a long one a
 * few). {@link #read} checks every header field and the checksum; a value failing any check is
 * deleted, counted by check and answered absent, never loaded.
 *
 * <h2>Failure</h2>
 * The cluster is lossy by nature: a value may expire, be evicted by the cluster's memory policy,
 * or be lost with a node. No call waits on the cluster longer than the configured timeout; an
 * unreachable, slow or failing cluster is counted ({@link ClusterMetrics.ErrorKind}) and
 * answered as a miss or a dropped publish ({@link PublishStatus#FULL}), never thrown into the KV
 * manager. The client reconnects by itself (every second at most) and the store works again once
 * the cluster answers. Only {@link #open} fails loudly: a cluster that cannot be reached or that
 * refuses the credentials at start-up is an error naming the node and the cause.
 *
 * <p>A corrupt value is deleted with a plain {@code DEL}: a correct value published in the
 * instant between the read and the delete is deleted with it (a miss later, never a wrong load).
 *
 * <p>Threads: any thread may call any method concurrently; the connection is shared and
 * thread-safe. {@link #close} once, after the last call.
 */
public final class ClusterBlockStore implements SharedBlockStore, AutoCloseable {
    private static final int[] MATCH_BATCHES = {8, 32, 128}; // EXISTS per round trip, growing while every key exists
    private static final long WARN_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final ClusterSettings settings;
    private final String prefix;     // "strata:kv:1:TENANT:MODEL:GEOMETRY:"
    private final long geometry;     // ClusterBlockFormat.geometryFingerprint of the served geometry
    private final long timeoutNanos; // the longest any call waits
    private final ClusterMetrics metrics = new ClusterMetrics();
    private final ClientResources resources;
    private final RedisClusterClient client;
    private final StatefulRedisClusterConnection<String, byte[]> connection;
    private final RedisAdvancedClusterAsyncCommands<String, byte[]> commands;
    private final AtomicLong lastWarning = new AtomicLong(System.nanoTime() - WARN_INTERVAL_NANOS); // nanoTime of the last logged error

    private ClusterBlockStore(ClusterSettings settings, String prefix, long geometry, ClientResources resources, RedisClusterClient client,
                              StatefulRedisClusterConnection<String, byte[]> connection) {
        this.settings = settings;
        this.prefix = prefix;
        this.geometry = geometry;
        this.timeoutNanos = settings.timeout().toNanos();
        this.resources = resources;
        this.client = client;
        this.connection = connection;
        this.commands = connection.async();
    }

    /**
     * Connects to the cluster for blocks of the model {@code model} with geometry {@code kv}.
     *
     * @param connectWait the longest to wait for the first connection and the cluster's topology
     * @throws IllegalStateException naming the node and the cause (never the password) when no
     *                               node can be reached or a node refuses the credentials
     */
    public static ClusterBlockStore open(ClusterSettings settings, ObjectKey model, KvGeometry kv, Duration connectWait) {
        Objects.requireNonNull(model, "model fingerprint");
        long geometry = ClusterBlockFormat.geometryFingerprint(kv);
        String prefix = "strata:kv:" + ClusterBlockFormat.VERSION + ":" + settings.tenant() + ":" + model + ":"
                + String.format("%016x", geometry) + ":";
        ClientResources resources = DefaultClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2)
                .reconnectDelay(Delay.exponential(Duration.ofMillis(50), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS)).build();
        List<RedisURI> uris = new ArrayList<>();
        for (String n : settings.nodes()) {
            uris.add(uri(settings, n, connectWait));
        }
        RedisClusterClient client = RedisClusterClient.create(resources, uris);
        ClusterClientOptions.Builder options = ClusterClientOptions.builder();
        // maintenance notifications (a managed-service feature) would need a logging library Strata does not ship
        options.maintNotificationsConfig(MaintNotificationsConfig.disabled());
        client.setOptions(options
                .autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(SocketOptions.builder().connectTimeout(connectWait).build())
                .timeoutOptions(TimeoutOptions.enabled(settings.timeout()))
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder().enablePeriodicRefresh(Duration.ofSeconds(30))
                        .enableAllAdaptiveRefreshTriggers().build())
                .build());
        try {
            StatefulRedisClusterConnection<String, byte[]> c = client.connect(RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE));
            c.setTimeout(settings.timeout());
            // connect to every node now: a node connection opened lazily rejects the commands sent while it connects
            for (var node : c.getPartitions()) {
                c.getConnection(node.getUri().getHost(), node.getUri().getPort());
            }
            return new ClusterBlockStore(settings, prefix, geometry, resources, client, c);
        } catch (RuntimeException e) {
            String why = diagnose(settings, resources, connectWait, e);
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            resources.shutdown(0, 2, TimeUnit.SECONDS);
            throw new IllegalStateException(why);
        }
    }

    private static RedisURI uri(ClusterSettings s, String node, Duration timeout) {
        int colon = node.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("cluster node '" + node + "' is not host:port");
        }
        RedisURI.Builder b = RedisURI.Builder.redis(node.substring(0, colon), Integer.parseInt(node.substring(colon + 1)))
                .withSsl(s.tls()).withTimeout(timeout);
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
     * Why the cluster could not be opened: each seed node is tried on its own, so the message
     * names the node that refused (credentials, or not a cluster) or says that none answered.
     */
    private static String diagnose(ClusterSettings s, ClientResources resources, Duration wait, RuntimeException e) {
        StringBuilder why = new StringBuilder();
        for (String node : s.nodes()) {
            RedisClient single = RedisClient.create(resources, uri(s, node, wait));
            single.setOptions(ClientOptions.builder().maintNotificationsConfig(MaintNotificationsConfig.disabled()).build());
            try (StatefulRedisConnection<String, String> c = single.connect()) {
                String info = c.sync().clusterInfo();
                if (!info.contains("cluster_state:ok")) {
                    why.append("; node ").append(node).append(" answers but its cluster is not ok");
                }
            } catch (RuntimeException nodeError) {
                String m = rootMessage(nodeError);
                boolean auth = m.contains("WRONGPASS") || m.contains("NOAUTH") || m.contains("invalid password")
                        || m.contains("invalid username-password");
                why.append("; node ").append(node).append(auth ? " refused the credentials (" : " failed (").append(m).append(')');
            } finally {
                single.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            }
        }
        String text = "cannot open the cluster tier at " + s.nodes() + " (tiers.cluster.nodes): " + rootMessage(e) + why
                + (why.indexOf("credentials") >= 0 ? " — check tiers.cluster.user and the password in tiers.cluster.password-env"
                + " or tiers.cluster.password-file" : "");
        return s.scrub(text);
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

    @Override
    public int matchPrefix(ObjectKey[] keys, int from, int count) {
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
            failed(f, "matching a prefix");
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
        long total = 0;
        for (MemorySegment d : destinations) {
            total += d.byteSize();
        }
        long start = System.nanoTime();
        byte[] value;
        try {
            value = await(commands.get(keyOf(key)), start + timeoutNanos);
        } catch (Failure f) {
            failed(f, "reading block " + key);
            return false;
        } finally {
            metrics.latency(ClusterMetrics.Op.READ, System.nanoTime() - start);
        }
        if (value == null) {
            metrics.miss();
            return false;
        }
        ClusterMetrics.Corruption bad = ClusterBlockFormat.verify(value, key, geometry, total);
        if (bad != null) {
            metrics.countCorrupt(bad);
            warn("the cluster's value of block " + key + " failed its " + bad.name().toLowerCase(java.util.Locale.ROOT)
                    + " check (" + value.length + " bytes); deleted, not loaded");
            delete(key);
            return false;
        }
        ClusterBlockFormat.copyPayload(value, destinations);
        metrics.hit(total);
        return true;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: {@link PublishStatus#FULL} stands for "not published": the cluster failed or did
     * not answer within the timeout (counted as a dropped publish).
     */
    @Override
    public PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
        byte[] value = ClusterBlockFormat.encode(key, geometry, sources);
        long start = System.nanoTime();
        try {
            String ok = await(commands.set(keyOf(key), value, SetArgs.Builder.nx().px(settings.ttl().toMillis())), start + timeoutNanos);
            if ("OK".equals(ok)) {
                metrics.published(value.length - ClusterBlockFormat.HEADER_BYTES);
                return PublishStatus.PUBLISHED;
            }
            metrics.existed();
            return PublishStatus.EXISTS;
        } catch (Failure f) {
            failed(f, "publishing block " + key);
            metrics.countDropped();
            return PublishStatus.FULL;
        } finally {
            metrics.latency(ClusterMetrics.Op.PUBLISH, System.nanoTime() - start);
        }
    }

    /** Deletes block {@code key}'s value, waiting at most the timeout; failures are counted. */
    private void delete(ObjectKey key) {
        long start = System.nanoTime();
        try {
            await(commands.del(keyOf(key)), start + timeoutNanos);
        } catch (Failure f) {
            failed(f, "deleting block " + key);
        } finally {
            metrics.latency(ClusterMetrics.Op.DELETE, System.nanoTime() - start);
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

    private static ClusterMetrics.ErrorKind kindOf(Throwable t) {
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

    private void failed(Failure f, String what) {
        metrics.error(f.kind);
        Throwable c = f.getCause();
        warn(what + " in the cluster failed (" + f.kind.name().toLowerCase(java.util.Locale.ROOT) + ": "
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
        try {
            connection.close();
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            resources.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    @Override
    public String toString() {
        return "cluster block store over " + settings;
    }
}
