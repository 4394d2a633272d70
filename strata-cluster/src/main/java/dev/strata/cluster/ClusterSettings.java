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
 * @param tlsFiles   what TLS trusts and presents when {@code tls}; {@link TlsFiles#DEFAULT}: the JVM's trust store, no client
 *                   certificate, full verification
 * @param connectionsPerPrimary connections the block data path opens to each primary, 1 to
 *                   {@link StrataConfig#MAX_CLUSTER_CONNECTIONS}
 */
public record ClusterSettings(List<String> nodes, String user, String password, boolean tls, Duration ttl, Duration timeout,
                              String tenant, StrataConfig.ClusterWrite write, StrataConfig.ClusterAdmission admission, long queueBytes,
                              long capacityHint, TlsFiles tlsFiles, int connectionsPerPrimary) {

    /**
     * What a TLS connection trusts and presents: the files of {@code tiers.cluster.tls-ca-file},
     * {@code tls-cert-file} and {@code tls-key-file}, and {@code tls-verify}. Checked by
     * {@link ClusterSettings#from}; immutable.
     *
     * @param caFile   PEM certificate(s) of the CA that signed the nodes' certificates; null: the JVM's default trust store
     * @param certFile PEM certificate (chain) presented to nodes that require client certificates; null: none
     * @param keyFile  its PEM private key, PKCS#8 and unencrypted; null exactly when {@code certFile} is
     * @param verify   how the nodes' certificates are checked
     */
    public record TlsFiles(java.nio.file.Path caFile, java.nio.file.Path certFile, java.nio.file.Path keyFile,
                           StrataConfig.ClusterTlsVerify verify) {
        /** The JVM's trust store, no client certificate, full verification. */
        public static final TlsFiles DEFAULT = new TlsFiles(null, null, null, StrataConfig.ClusterTlsVerify.FULL);

        public TlsFiles {
            Objects.requireNonNull(verify, "verify");
            if ((certFile == null) != (keyFile == null)) {
                throw new IllegalArgumentException("a client certificate needs its key and a key its certificate, got certificate "
                        + certFile + " and key " + keyFile);
            }
        }

        /** True when something other than {@link #DEFAULT} is asked for. */
        boolean given() {
            return !equals(DEFAULT);
        }
    }

    /** Settings without TLS files ({@link TlsFiles#DEFAULT}), with {@link StrataConfig#DEFAULT_CLUSTER_CONNECTIONS}. */
    public ClusterSettings(List<String> nodes, String user, String password, boolean tls, Duration ttl, Duration timeout,
                           String tenant, StrataConfig.ClusterWrite write, StrataConfig.ClusterAdmission admission, long queueBytes,
                           long capacityHint) {
        this(nodes, user, password, tls, ttl, timeout, tenant, write, admission, queueBytes, capacityHint, TlsFiles.DEFAULT);
    }

    /** Settings with {@link StrataConfig#DEFAULT_CLUSTER_CONNECTIONS} connections per primary. */
    public ClusterSettings(List<String> nodes, String user, String password, boolean tls, Duration ttl, Duration timeout,
                           String tenant, StrataConfig.ClusterWrite write, StrataConfig.ClusterAdmission admission, long queueBytes,
                           long capacityHint, TlsFiles tlsFiles) {
        this(nodes, user, password, tls, ttl, timeout, tenant, write, admission, queueBytes, capacityHint, tlsFiles,
                StrataConfig.DEFAULT_CLUSTER_CONNECTIONS);
    }

    public ClusterSettings {
        Objects.requireNonNull(tlsFiles, "tlsFiles");
        if (!tls && tlsFiles.given()) {
            throw new IllegalArgumentException("TLS files or verification " + tlsFiles + " are given without TLS");
        }
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
        if (connectionsPerPrimary < 1 || connectionsPerPrimary > StrataConfig.MAX_CLUSTER_CONNECTIONS) {
            throw new IllegalArgumentException("connections per primary must be in [1, " + StrataConfig.MAX_CLUSTER_CONNECTIONS + "], got "
                    + connectionsPerPrimary);
        }
    }

    /**
     * The settings of a local cluster, reached with its own password file and, with TLS, trusting
     * its CA (fully verified) and presenting its client certificate when it requires one.
     */
    public static ClusterSettings of(LocalRedisCluster cluster, Duration timeout) {
        try {
            String password = cluster.passwordFile() == null ? null : LocalRedisCluster.readPassword(cluster.passwordFile());
            LocalCertificates c = cluster.certificates();
            TlsFiles files = c == null ? TlsFiles.DEFAULT : cluster.tls() == LocalRedisCluster.Tls.MUTUAL
                    ? new TlsFiles(c.caCert(), c.clientCert(), c.clientKey(), StrataConfig.ClusterTlsVerify.FULL)
                    : new TlsFiles(c.caCert(), null, null, StrataConfig.ClusterTlsVerify.FULL);
            return new ClusterSettings(cluster.nodes(), null, password, c != null, Duration.ofHours(1), timeout, "default",
                    StrataConfig.ClusterWrite.COMMIT, StrataConfig.ClusterAdmission.ALL, StrataConfig.DEFAULT_CLUSTER_QUEUE_BYTES,
                    cluster.maxmemory() * cluster.primaryCount(), files);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the cluster's password file " + cluster.passwordFile() + ": " + e.getMessage(), e);
        }
    }

    /**
     * Resolves {@code tiers.cluster}: the password from {@code password-env} (looked up in
     * {@code env}) or {@code password-file} (its first line), and checks the TLS files.
     *
     * @throws IllegalArgumentException naming the key and the variable or file (never the
     *                                  password) if both are given, the variable is unset or the
     *                                  file unreadable; naming the key and the value if a
     *                                  {@code tls-*} key is given without {@code tls: true}, a
     *                                  certificate without its key (or a key without its
     *                                  certificate), or a TLS file is missing, unreadable or not PEM
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
                Duration.ofMillis(t.timeoutMillis()), t.tenant(), t.write(), t.admission(), t.queueBytes(), t.capacityHint(), tlsFiles(t),
                t.connectionsPerPrimary());
    }

    /** The checked {@code tls-*} keys of {@code t}. */
    private static TlsFiles tlsFiles(StrataConfig.ClusterTier t) {
        if (!t.tls()) {
            for (var k : new Object[][] {{"tls-ca-file", t.tlsCaFile()}, {"tls-cert-file", t.tlsCertFile()}, {"tls-key-file", t.tlsKeyFile()},
                    {"tls-verify", t.tlsVerify() == StrataConfig.ClusterTlsVerify.FULL ? null : t.tlsVerify().name().toLowerCase(java.util.Locale.ROOT)}}) {
                if (k[1] != null) {
                    throw new IllegalArgumentException("tiers.cluster." + k[0] + " (" + k[1] + ") is set but tiers.cluster.tls is false;"
                            + " set tiers.cluster.tls: true to connect with TLS, or remove tiers.cluster." + k[0]);
                }
            }
            return TlsFiles.DEFAULT;
        }
        if (t.tlsCertFile() != null && t.tlsKeyFile() == null) {
            throw new IllegalArgumentException("tiers.cluster.tls-cert-file (" + t.tlsCertFile() + ") is set without tiers.cluster.tls-key-file;"
                    + " a client certificate needs its private key");
        }
        if (t.tlsKeyFile() != null && t.tlsCertFile() == null) {
            throw new IllegalArgumentException("tiers.cluster.tls-key-file (" + t.tlsKeyFile() + ") is set without tiers.cluster.tls-cert-file;"
                    + " a private key needs its client certificate");
        }
        checkPem("tls-ca-file", t.tlsCaFile(), "CERTIFICATE");
        checkPem("tls-cert-file", t.tlsCertFile(), "CERTIFICATE");
        checkPem("tls-key-file", t.tlsKeyFile(), "PRIVATE KEY");
        return new TlsFiles(t.tlsCaFile(), t.tlsCertFile(), t.tlsKeyFile(), t.tlsVerify());
    }

    /**
     * Checks that {@code file} (null: not given) is a readable PEM file holding a {@code kind}
     * block; a key must be PKCS#8 and unencrypted, what the TLS client reads.
     */
    private static void checkPem(String key, java.nio.file.Path file, String kind) {
        if (file == null) {
            return;
        }
        String text;
        try {
            text = java.nio.file.Files.readString(file, java.nio.charset.StandardCharsets.US_ASCII);
        } catch (java.nio.charset.MalformedInputException e) {
            throw new IllegalArgumentException("tiers.cluster." + key + " " + file + " is not a PEM file (it is not text)", e);
        } catch (IOException e) {
            throw new IllegalArgumentException("tiers.cluster." + key + " " + file + " cannot be read (" + e.getClass().getSimpleName()
                    + (e.getMessage() != null && !e.getMessage().equals(file.toString()) ? ": " + e.getMessage() : "") + ")", e);
        }
        if (kind.equals("PRIVATE KEY")) {
            if (text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")) {
                throw new IllegalArgumentException("tiers.cluster." + key + " " + file + " is encrypted; give the key unencrypted (mode 0600),"
                        + " e.g. openssl pkcs8 -topk8 -nocrypt -in " + file + " -out KEY.pem");
            }
            if (text.matches("(?s).*-----BEGIN (RSA|EC|DSA) PRIVATE KEY-----.*")) {
                throw new IllegalArgumentException("tiers.cluster." + key + " " + file + " is a traditional (PKCS#1/SEC1) key; give it as PKCS#8:"
                        + " openssl pkcs8 -topk8 -nocrypt -in " + file + " -out KEY.pem");
            }
        }
        if (!text.contains("-----BEGIN " + kind + "-----")) {
            throw new IllegalArgumentException("tiers.cluster." + key + " " + file + " holds no PEM " + kind.toLowerCase(java.util.Locale.ROOT)
                    + " (-----BEGIN " + kind + "-----)");
        }
    }

    /** These settings with another timeout. */
    public ClusterSettings withTimeout(Duration t) {
        return new ClusterSettings(nodes, user, password, tls, ttl, t, tenant, write, admission, queueBytes, capacityHint, tlsFiles, connectionsPerPrimary);
    }

    /** These settings with another password (null: none). */
    public ClusterSettings withPassword(String p) {
        return new ClusterSettings(nodes, user, p, tls, ttl, timeout, tenant, write, admission, queueBytes, capacityHint, tlsFiles, connectionsPerPrimary);
    }

    /** These settings with another tenant. */
    public ClusterSettings withTenant(String t) {
        return new ClusterSettings(nodes, user, password, tls, ttl, timeout, t, write, admission, queueBytes, capacityHint, tlsFiles, connectionsPerPrimary);
    }

    /** These settings with another write policy and admission. */
    public ClusterSettings withWrites(StrataConfig.ClusterWrite w, StrataConfig.ClusterAdmission a) {
        return new ClusterSettings(nodes, user, password, tls, ttl, timeout, tenant, w, a, queueBytes, capacityHint, tlsFiles, connectionsPerPrimary);
    }

    /** These settings with another write queue bound. */
    public ClusterSettings withQueueBytes(long q) {
        return new ClusterSettings(nodes, user, password, tls, ttl, timeout, tenant, write, admission, q, capacityHint, tlsFiles, connectionsPerPrimary);
    }

    /** These settings connecting with TLS that trusts and presents {@code files}. */
    public ClusterSettings withTls(TlsFiles files) {
        return new ClusterSettings(nodes, user, password, true, ttl, timeout, tenant, write, admission, queueBytes, capacityHint, files, connectionsPerPrimary);
    }

    /** These settings connecting without TLS. */
    public ClusterSettings withoutTls() {
        return new ClusterSettings(nodes, user, password, false, ttl, timeout, tenant, write, admission, queueBytes, capacityHint,
                TlsFiles.DEFAULT, connectionsPerPrimary);
    }

    /** These settings with {@code n} connections per primary for blocks. */
    public ClusterSettings withConnectionsPerPrimary(int n) {
        return new ClusterSettings(nodes, user, password, tls, ttl, timeout, tenant, write, admission, queueBytes, capacityHint, tlsFiles, n);
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
                + (tls ? ", tls" + (tlsFiles.caFile() != null ? " trusting " + tlsFiles.caFile() : "")
                + (tlsFiles.certFile() != null ? " presenting " + tlsFiles.certFile() : "")
                + (tlsFiles.verify() != StrataConfig.ClusterTlsVerify.FULL ? " verify " + tlsFiles.verify().name().toLowerCase(java.util.Locale.ROOT) : "")
                : "")
                + (user != null ? ", user " + user : "") + (password != null ? ", with password" : ", no password") + ")";
    }
}
