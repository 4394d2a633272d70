package dev.strata.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The certificates of a local TLS Redis Cluster, made with the {@code openssl} command: a CA, one
 * certificate for every node (they all listen on {@link LocalRedisCluster#HOST}) and one for a
 * client, each signed by the CA.
 *
 * <h2>Design note</h2>
 * All files are PEM in one directory: {@code ca.crt}, {@code ca.key}, {@code node.crt},
 * {@code node.key}, {@code client.crt}, {@code client.key}. Keys are EC P-256 in PKCS#8 (what both
 * Redis and the JVM read), created with mode 0600 before {@code openssl} writes them. The node
 * certificate names {@code IP:127.0.0.1} and {@code DNS:localhost} (so that clients can verify
 * the host name) and serves as server and as client (the nodes reach each other over TLS on the
 * cluster bus and for replication with it). {@link #ensure} makes only what is missing: a CA
 * placed in the directory beforehand ({@code ca.crt} and {@code ca.key}) signs the others.
 * Certificates are valid for ten years.
 *
 * <p>Threads: one thread at a time per directory.
 *
 * @param caCert     the CA's certificate: what clients trust ({@code tiers.cluster.tls-ca-file})
 * @param caKey      the CA's private key (0600)
 * @param nodeCert   every node's certificate
 * @param nodeKey    every node's private key (0600)
 * @param clientCert a client certificate, for nodes that require one ({@code tiers.cluster.tls-cert-file})
 * @param clientKey  its private key (0600, {@code tiers.cluster.tls-key-file})
 */
public record LocalCertificates(Path caCert, Path caKey, Path nodeCert, Path nodeKey, Path clientCert, Path clientKey) {
    private static final String DAYS = "3650";

    /** The file names in {@code dir}, whether they exist or not. */
    public static LocalCertificates in(Path dir) {
        return new LocalCertificates(dir.resolve("ca.crt"), dir.resolve("ca.key"), dir.resolve("node.crt"), dir.resolve("node.key"),
                dir.resolve("client.crt"), dir.resolve("client.key"));
    }

    /**
     * The certificates in {@code dir} (created if needed), making with {@code openssl} each one that
     * is missing: the CA first, then the node's and the client's signed by it.
     *
     * @throws IllegalStateException naming {@code openssl} and how to install it when it is not on the
     *                               PATH, or the command that failed and what it printed
     */
    public static LocalCertificates ensure(Path dir) {
        Path openssl = LocalRedisCluster.binary("openssl", "a local Redis Cluster with TLS makes its certificates with it:"
                + " install it with 'apt-get install -y openssl' (Debian, Ubuntu) or your system's OpenSSL package");
        LocalCertificates c = in(dir);
        try {
            Files.createDirectories(dir);
            if (!Files.exists(c.caCert) || !Files.exists(c.caKey)) {
                newKey(openssl, c.caKey);
                run(dir, openssl.toString(), "req", "-x509", "-new", "-key", c.caKey.toString(), "-sha256", "-days", DAYS,
                        "-subj", "/CN=Strata local cluster CA", "-out", c.caCert.toString());
                Files.deleteIfExists(c.nodeCert); // signed by the CA just replaced
                Files.deleteIfExists(c.clientCert);
            }
            if (!Files.exists(c.nodeCert) || !Files.exists(c.nodeKey)) {
                sign(openssl, dir, c, c.nodeKey, c.nodeCert, "/CN=" + LocalRedisCluster.HOST,
                        "subjectAltName=IP:" + LocalRedisCluster.HOST + ",DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n");
            }
            if (!Files.exists(c.clientCert) || !Files.exists(c.clientKey)) {
                sign(openssl, dir, c, c.clientKey, c.clientCert, "/CN=strata client", "extendedKeyUsage=clientAuth\n");
            }
            return c;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make the TLS certificates in " + dir + ": " + e.getMessage(), e);
        }
    }

    /** A new EC P-256 key in {@code key}, never readable by others: the file is 0600 before openssl writes it. */
    private static void newKey(Path openssl, Path key) throws IOException {
        Files.deleteIfExists(key);
        Files.createFile(key, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        run(key.getParent(), openssl.toString(), "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key.toString());
    }

    private static void sign(Path openssl, Path dir, LocalCertificates c, Path key, Path cert, String subject, String extensions)
            throws IOException {
        newKey(openssl, key);
        Path csr = dir.resolve(cert.getFileName() + ".csr");
        Path ext = dir.resolve(cert.getFileName() + ".ext");
        Files.writeString(ext, "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n" + extensions, StandardCharsets.UTF_8);
        try {
            run(dir, openssl.toString(), "req", "-new", "-key", key.toString(), "-subj", subject, "-out", csr.toString());
            byte[] serial = new byte[8];
            new java.security.SecureRandom().nextBytes(serial);
            serial[0] &= 0x7f; // a positive serial number
            run(dir, openssl.toString(), "x509", "-req", "-in", csr.toString(), "-CA", c.caCert.toString(), "-CAkey", c.caKey.toString(),
                    "-set_serial", "0x" + java.util.HexFormat.of().formatHex(serial), "-days", DAYS, "-sha256", "-extfile", ext.toString(),
                    "-out", cert.toString());
        } finally {
            Files.deleteIfExists(csr);
            Files.deleteIfExists(ext);
        }
    }

    private static void run(Path dir, String... cmd) {
        List<String> command = new ArrayList<>(List.of(cmd));
        try {
            Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("openssl did not finish in 30 s: " + String.join(" ", command));
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("openssl failed (exit " + p.exitValue() + "): " + String.join(" ", command) + ": " + out.strip());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + String.join(" ", command) + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running openssl", e);
        }
    }
}
