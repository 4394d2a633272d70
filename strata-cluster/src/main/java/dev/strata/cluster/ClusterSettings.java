package dev.strata.cluster;

import dev.strata.cache.config.StrataConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Everything a {@link ClusterBlockStore} needs to reach its cluster, with the password resolved
 * from the environment variable or the file that {@code tiers.cluster} names.
 *
 * <p>The password is held here and nowhere else in Strata's objects: {@link #toString} leaves it
 * out, and no error built from these settings contains it. Immutable; any thread.
 *
 * @param nodes    seed nodes, {@code host:port} each
 * @param user     ACL user; null: the default user
 * @param password the password; null: none
 * @param tls      connect with TLS
 * @param ttl      how long a published block lives in the cluster
 * @param timeout  the longest one KV call waits on the cluster
 * @param tenant   the namespace blocks are kept under
 * @param write      when blocks are written: at commit (write-through) or as they leave this machine (write-behind)
 * @param admission  which blocks offered are written
 * @param queueBytes the most value bytes written and not yet answered; a write past it is dropped and counted
 * @param capacityHint the cluster's memory for KV blocks as configured (a hint, exported as a metric); 0: not given
 */
public record ClusterSettings(List<String> nodes, String user, String password, boolean tls, Duration ttl, Duration timeout,
                              String tenant, StrataConfig.ClusterWrite write, StrataConfig.ClusterAdmission admission, long queueBytes,
                              long capacityHint) {

    public ClusterSettings {
        nodes = List.copyOf(nodes);
        Objects.requireNonNull(write, "write");
        Objects.requireNonNull(admission, "admission");
        if (queueBytes <= 0) {
            throw new IllegalArgumentException("the write queue must hold some bytes, got " + queueBytes);
        }
        Objects.requireNonNull(ttl, "ttl");
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(tenant, "tenant");
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("a cluster needs at least one seed node (host:port)");
        }
    }

    /** The settings of a local cluster, reached with its own password file. */
    public static ClusterSettings of(LocalRedisCluster cluster, Duration timeout) {
        try {
            String password = cluster.passwordFile() == null ? null : LocalRedisCluster.readPassword(cluster.passwordFile());
            return new ClusterSettings(cluster.nodes(), null, password, false, Duration.ofHours(1), timeout, "default",
                    StrataConfig.ClusterWrite.COMMIT, StrataConfig.ClusterAdmission.ALL, StrataConfig.DEFAULT_CLUSTER_QUEUE_BYTES,
                    cluster.maxmemory() * cluster.primaryCount());
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the cluster's password file " + cluster.passwordFile() + ": " + e.getMessage(), e);
        }
    }

    /**
     * Resolves {@code tiers.cluster}: the password from {@code password-env} (looked up in
     * {@code env}) or {@code password-file} (its first line).
     *
     * @throws IllegalArgumentException naming the key and the variable or file (never the
     *                                  password) if both are given, the variable is unset or the
     *                                  file unreadable
     */
    public static ClusterSettings from(StrataConfig.ClusterTier t, Map<String, String> env) {
        if (t.passwordEnv() != null && t.passwordFile() != null) {
            throw new IllegalArgumentException("tiers.cluster.password-env (" + t.passwordEnv() + ") and tiers.cluster.password-file ("
                    + t.passwordFile() + ") are both set; give one");
        }
        String password = null;
        if (t.passwordEnv() != null) {
            password = env.get(t.passwordEnv());
            if (password == null || password.isEmpty()) {
                throw new IllegalArgumentException("tiers.cluster.password-env names $" + t.passwordEnv() + ", which is not set");
            }
        } else if (t.passwordFile() != null) {
            Path f = t.passwordFile();
            try {
                password = LocalRedisCluster.readPassword(f);
            } catch (IOException e) {
                throw new IllegalArgumentException("tiers.cluster.password-file " + f + " cannot be read: " + e.getMessage(), e);
            }
            if (password.isEmpty()) {
                throw new IllegalArgumentException("tiers.cluster.password-file " + f + " is empty");
            }
        }
        return new ClusterSettings(t.nodes(), t.user(), password, t.tls(), Duration.ofMillis(t.ttlMillis()),
                Duration.ofMillis(t.timeoutMillis()), t.tenant(), t.write(), t.admission(), t.queueBytes(), t.capacityHint());
    }

    /** These settings with another timeout. */
    public ClusterSettings withTimeout(Duration t) {
        return new ClusterSettings(nodes, user, password, tls, ttl, t, tenant, write, admission, queueBytes, capacityHint);
    }

    /** These settings with another password (null: none). */
    public ClusterSettings withPassword(String p) {
        return new ClusterSettings(nodes, user, p, tls, ttl, timeout, tenant, write, admission, queueBytes, capacityHint);
    }

    /** These settings with another tenant. */
    public ClusterSettings withTenant(String t) {
        return new ClusterSettings(nodes, user, password, tls, ttl, timeout, t, write, admission, queueBytes, capacityHint);
    }

    /** These settings with another write policy and admission. */
    public ClusterSettings withWrites(StrataConfig.ClusterWrite w, StrataConfig.ClusterAdmission a) {
        return new ClusterSettings(nodes, user, password, tls, ttl, timeout, tenant, w, a, queueBytes, capacityHint);
    }

    /** These settings with another write queue bound. */
    public ClusterSettings withQueueBytes(long q) {
        return new ClusterSettings(nodes, user, password, tls, ttl, timeout, tenant, write, admission, q, capacityHint);
    }

    /** {@code text} with every occurrence of the password masked: for messages built from a client's errors. */
    String scrub(String text) {
        if (text == null || password == null || password.isEmpty()) {
            return text;
        }
        return text.replace(password, "****");
    }

    @Override
    public String toString() {
        return "cluster " + nodes + " (tenant " + tenant + ", ttl " + ttl + ", timeout " + timeout + ", write "
                + write.name().toLowerCase(java.util.Locale.ROOT) + (admission == StrataConfig.ClusterAdmission.SEEN_TWICE ? " seen-twice" : "")
                + (tls ? ", tls" : "")
                + (user != null ? ", user " + user : "") + (password != null ? ", with password" : ", no password") + ")";
    }
}
