package dev.strata.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.config.ConfigException;
import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.config.StrataConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code tiers.cluster.tls-*} keys: read from the configuration, resolved by
 * {@link ClusterSettings#from} into the files TLS trusts and presents, and refused with an error
 * naming the key and the value when they cannot work.
 */
class ClusterTlsSettingsTest {
    @TempDir
    static Path dir;
    static LocalCertificates certs;

    @BeforeAll
    static void makeCertificates() {
        certs = LocalCertificates.ensure(dir.resolve("tls"));
    }

    private static ClusterSettings resolve(String... settings) {
        List<String> all = new ArrayList<>(List.of("tiers.cluster.nodes=[127.0.0.1:7000]"));
        all.addAll(List.of(settings));
        return ClusterSettings.from(ConfigLoader.load(null, all, null).cluster(), Map.of());
    }

    @Test
    void theCaFileTheClientCertificateAndTheVerificationAreRead() {
        ClusterSettings s = resolve("tiers.cluster.tls=true", "tiers.cluster.tls-ca-file=" + certs.caCert(),
                "tiers.cluster.tls-cert-file=" + certs.clientCert(), "tiers.cluster.tls-key-file=" + certs.clientKey(),
                "tiers.cluster.tls-verify=ca");
        assertThat(s.tls()).isTrue();
        assertThat(s.tlsFiles()).isEqualTo(new ClusterSettings.TlsFiles(certs.caCert(), certs.clientCert(), certs.clientKey(),
                StrataConfig.ClusterTlsVerify.CA));
        assertThat(s.toString()).contains("tls trusting " + certs.caCert(), "presenting " + certs.clientCert(), "verify ca");
    }

    @Test
    void tlsAloneTrustsTheJvmTrustStoreAndVerifiesFully() {
        ClusterSettings s = resolve("tiers.cluster.tls=true");
        assertThat(s.tlsFiles()).isEqualTo(ClusterSettings.TlsFiles.DEFAULT);
        assertThat(s.tlsFiles().verify()).isEqualTo(StrataConfig.ClusterTlsVerify.FULL);
        assertThat(resolve().tls()).isFalse();
    }

    @Test
    void tlsKeysWithoutTlsAreRefusedNamingTheKey() {
        assertThatThrownBy(() -> resolve("tiers.cluster.tls-ca-file=" + certs.caCert()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tiers.cluster.tls-ca-file (" + certs.caCert() + ")").hasMessageContaining("tiers.cluster.tls is false");
        assertThatThrownBy(() -> resolve("tiers.cluster.tls-verify=none"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tiers.cluster.tls-verify (none)");
    }

    @Test
    void aCertificateWithoutItsKeyOrAKeyWithoutItsCertificateIsRefused() {
        assertThatThrownBy(() -> resolve("tiers.cluster.tls=true", "tiers.cluster.tls-cert-file=" + certs.clientCert()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tiers.cluster.tls-cert-file (" + certs.clientCert() + ")").hasMessageContaining("tls-key-file");
        assertThatThrownBy(() -> resolve("tiers.cluster.tls=true", "tiers.cluster.tls-key-file=" + certs.clientKey()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tiers.cluster.tls-key-file (" + certs.clientKey() + ")").hasMessageContaining("tls-cert-file");
    }

    @Test
    void aMissingFileOrOneThatIsNotPemIsRefusedNamingTheKeyAndTheFile() throws Exception {
        Path missing = dir.resolve("no-such-ca.crt");
        assertThatThrownBy(() -> resolve("tiers.cluster.tls=true", "tiers.cluster.tls-ca-file=" + missing))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tiers.cluster.tls-ca-file " + missing).hasMessageContaining("cannot be read");
        // a key given where the CA belongs
        assertThatThrownBy(() -> resolve("tiers.cluster.tls=true", "tiers.cluster.tls-ca-file=" + certs.caKey()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tiers.cluster.tls-ca-file " + certs.caKey()).hasMessageContaining("no PEM certificate");
        Path traditional = dir.resolve("rsa.key");
        Files.writeString(traditional, "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
        assertThatThrownBy(() -> resolve("tiers.cluster.tls=true", "tiers.cluster.tls-cert-file=" + certs.clientCert(),
                "tiers.cluster.tls-key-file=" + traditional))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tiers.cluster.tls-key-file " + traditional).hasMessageContaining("PKCS#8");
    }

    @Test
    void anUnknownVerificationIsRefusedWhenTheConfigurationIsRead() {
        assertThatThrownBy(() -> resolve("tiers.cluster.tls=true", "tiers.cluster.tls-verify=maybe"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.cluster.tls-verify").hasMessageContaining("maybe");
    }
}
