package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code strata cluster up|status|down} around two {@code strata serve} processes' worth of
 * servers configured with {@code tiers.cluster}: a prompt served on machine A is reused from the
 * cluster by machine B, with the same answer.
 */
class ClusterCommandTest {
    @TempDir
    Path dir;

    private static int freePortBase(int count) {
        for (int attempt = 0; attempt < 50; attempt++) {
            int base = 20_000 + ThreadLocalRandom.current().nextInt(0, 30_000);
            if (free(base, count) && free(base + 10_000, count)) {
                return base;
            }
        }
        throw new IllegalStateException("no free ports for a test cluster");
    }

    private static boolean free(int base, int count) {
        for (int p = base; p < base + count; p++) {
            try (ServerSocket s = new ServerSocket(p, 1, InetAddress.getByName("127.0.0.1"))) {
                s.setReuseAddress(true);
            } catch (IOException e) {
                return false;
            }
        }
        return true;
    }

    private static String complete(ServeCommand.Running r, String prompt) throws Exception {
        HttpResponse<String> ok = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + r.port()
                        + "/v1/completions")).timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"" + prompt + "\",\"max_tokens\":4}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        return new ObjectMapper().readTree(ok.body()).get("choices").get(0).get("text").asText();
    }

    private static ServeCommand.Running serve(Path model, String nodes, Path passwordFile) {
        ServeCommand cmd = new ServeCommand();
        new CommandLine(cmd).parseArgs("--model", model.toString(), "--port", "0", "--threads", "1", "--kv-blocks", "16",
                "--block-tokens", "4", "--set", "tiers.cluster.nodes=[" + nodes + "]",
                "--set", "tiers.cluster.password-file=" + passwordFile, "--set", "tiers.cluster.timeout=2s");
        return cmd.start();
    }

    @Test
    void aPrefixServedOnOneMachineIsReusedFromTheClusterOnAnother() throws Exception {
        Path clusterDir = dir.resolve("cluster");
        int base = freePortBase(3);
        Path model = dir.resolve("tiny-llama");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.LLAMA, 3), model, (d, t, b, tb) -> { });
        String nodes = "127.0.0.1:" + base + ",127.0.0.1:" + (base + 1);
        // the cluster is described (its password written) but not started: a server configured for it starts anyway
        dev.strata.cluster.LocalRedisCluster.create(clusterDir, 3, 0, base, true);
        CliRun up = null;
        try {
            try (ServeCommand.Running early = serve(model, nodes, clusterDir.resolve("password"))) {
                String alone = complete(early, "served while the cluster is down");
                assertThat(ExamplesTest.sample(ExamplesTest.get("http://127.0.0.1:" + early.port() + "/metrics"), "strata_cluster_available",
                        "")).isZero();
                up = CliRun.of("cluster", "up", "--dir", clusterDir.toString());
                assertThat(up.status()).as(up.err() + up.log()).isZero();
                long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (ExamplesTest.sample(ExamplesTest.get("http://127.0.0.1:" + early.port() + "/metrics"), "strata_cluster_available",
                        "") == 0 && System.nanoTime() < deadline) {
                    Thread.sleep(100);
                }
                assertThat(ExamplesTest.sample(ExamplesTest.get("http://127.0.0.1:" + early.port() + "/metrics"), "strata_cluster_available",
                        "")).as("the server connected to the cluster by itself").isEqualTo(1);
                assertThat(complete(early, "served while the cluster is down")).isEqualTo(alone);
            }
            assertThat(up.out()).contains("127.0.0.1:" + base).contains("tiers.cluster.password-file=" + clusterDir.resolve("password"));
            CliRun status = CliRun.of("cluster", "status", "--dir", clusterDir.toString());
            assertThat(status.status()).as(status.out()).isZero();
            assertThat(status.out().lines().skip(1)).hasSize(3).allMatch(l -> l.contains("master") && l.endsWith("ok"));

            String prompt = "the cluster tier shares a long prompt prefix between the machines of one fleet";
            String onA;
            try (ServeCommand.Running a = serve(model, nodes, clusterDir.resolve("password"))) {
                onA = complete(a, prompt);
                String metricsA = ExamplesTest.get("http://127.0.0.1:" + a.port() + "/metrics");
                long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                while (!(ExamplesTest.sample(metricsA, "strata_kv_link_blocks_total", "link=\"shared_publish\"") > 0
                        && ExamplesTest.sample(metricsA, "strata_cluster_written_bytes_total", "") > 0) && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                    metricsA = ExamplesTest.get("http://127.0.0.1:" + a.port() + "/metrics");
                }
                assertThat(ExamplesTest.sample(metricsA, "strata_kv_link_blocks_total", "link=\"shared_publish\""))
                        .as("blocks published by A").isPositive();
                assertThat(ExamplesTest.sample(metricsA, "strata_cluster_written_bytes_total", "")).as("bytes A wrote to the cluster")
                        .isPositive();
            }
            try (ServeCommand.Running b = serve(model, nodes, clusterDir.resolve("password"))) {
                assertThat(complete(b, prompt)).isEqualTo(onA);
                String metricsB = ExamplesTest.get("http://127.0.0.1:" + b.port() + "/metrics");
                assertThat(ExamplesTest.sample(metricsB, "strata_kv_hits_total", "location=\"shared\"")).as("blocks B loaded from the cluster")
                        .isPositive();
                assertThat(ExamplesTest.sample(metricsB, "strata_cluster_read_bytes_total", "")).as("bytes B read from the cluster")
                        .isPositive();
            }
        } finally {
            CliRun down = CliRun.of("cluster", "down", "--dir", clusterDir.toString());
            assertThat(down.status()).as(down.err()).isZero();
            assertThat(down.out()).contains("stopped 3 of 3 nodes");
        }
        CliRun after = CliRun.of("cluster", "status", "--dir", clusterDir.toString());
        assertThat(after.status()).isEqualTo(1);
        assertThat(after.out()).contains("down");
    }
}
