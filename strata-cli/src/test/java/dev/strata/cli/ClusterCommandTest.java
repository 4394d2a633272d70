package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
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

    static String complete(ServeCommand.Running r, String prompt) throws Exception {
        HttpResponse<String> ok = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + r.port()
                        + "/v1/completions")).timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"" + prompt + "\",\"max_tokens\":4}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        return new ObjectMapper().readTree(ok.body()).get("choices").get(0).get("text").asText();
    }

    private static ServeCommand.Running serve(Path model, String nodes, Path passwordFile, String... more) {
        ServeCommand cmd = new ServeCommand();
        java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of("--model", model.toString(), "--port", "0", "--threads",
                "1", "--kv-blocks", "16", "--block-tokens", "4", "--set", "tiers.cluster.nodes=[" + nodes + "]",
                "--set", "tiers.cluster.password-file=" + passwordFile, "--set", "tiers.cluster.timeout=2s"));
        args.addAll(java.util.List.of(more));
        new CommandLine(cmd).parseArgs(args.toArray(String[]::new));
        return cmd.start();
    }

    private static double metric(ServeCommand.Running r, String family, String label) throws Exception {
        return ExamplesTest.sample(ExamplesTest.get("http://127.0.0.1:" + r.port() + "/metrics"), family, label);
    }

    /**
     * Write-behind: a server writes its blocks to the cluster only as they leave its HOST tier,
     * and another server then reuses them.
     */
    private static void writeBehindReachesAnotherMachine(Path model, String nodes, Path password) throws Exception {
        String first = "a block written behind travels only when this machine's host tier lets it go";
        String answer;
        try (ServeCommand.Running w = serve(model, nodes, password, "--host-kv", "16KiB", "--set", "tiers.cluster.write=eviction",
                "--set", "tiers.cluster.tenant=behind")) {
            answer = complete(w, first);
            assertThat(metric(w, "strata_cluster_publishes_total", "outcome=\"deferred\"")).as("commits left to write-behind").isPositive();
            for (int i = 0; i < 12; i++) { // other prompts push the first prompt's blocks out of HOST
                complete(w, "another prompt number " + i + " with words enough to fill several blocks of the cache");
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (metric(w, "strata_cluster_publishes_total", "outcome=\"published\"") == 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(metric(w, "strata_cluster_publishes_total", "outcome=\"published\"")).as("blocks written as they left HOST")
                    .isPositive();
        }
        try (ServeCommand.Running r = serve(model, nodes, password, "--set", "tiers.cluster.tenant=behind")) {
            assertThat(complete(r, first)).isEqualTo(answer);
            assertThat(metric(r, "strata_cluster_hits_total", "")).as("blocks another machine wrote behind").isPositive();
        }
    }

    /**
     * One payload byte of every value in the cluster flipped behind Strata's back: the header still
     * passes, the checksum (checked by the copy into the KV slot) fails, and a server that reads
     * them discards what landed, recomputes, and answers as the machine that computed the blocks.
     */
    private static void corruptedPayloadsAreRecomputed(Path model, String nodes, Path password, int base, String prompt, String expected)
            throws Exception {
        io.lettuce.core.cluster.RedisClusterClient raw = io.lettuce.core.cluster.RedisClusterClient.create(io.lettuce.core.RedisURI.builder()
                .withHost("127.0.0.1").withPort(base).withPassword(java.nio.file.Files.readString(password).strip().toCharArray()).build());
        int flipped = 0;
        try (var c = raw.connect(io.lettuce.core.codec.ByteArrayCodec.INSTANCE)) {
            var sync = c.sync();
            for (byte[] key : sync.keys("strata:kv:*")) {
                long at = dev.strata.cluster.ClusterBlockFormat.HEADER_BYTES + 5;
                byte[] b = sync.getrange(key, at, at);
                sync.setrange(key, at, new byte[] {(byte) (b[0] ^ 0x5A)});
                flipped++;
            }
        } finally {
            raw.shutdown();
        }
        assertThat(flipped).as("values A published").isPositive();
        try (ServeCommand.Running c = serve(model, nodes, password)) {
            assertThat(complete(c, prompt)).as("the answer after discarding corrupt blocks").isEqualTo(expected);
            assertThat(metric(c, "strata_cluster_corrupt_values_total", "check=\"checksum\"")).as("values whose checksum failed")
                    .isPositive();
        }
    }

    @Test
    void aPrefixServedOnOneMachineIsReusedFromTheClusterOnAnother() throws Exception {
        Path clusterDir = dir.resolve("cluster");
        int base = dev.strata.cluster.LocalRedisCluster.freePortBase(3);
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
            corruptedPayloadsAreRecomputed(model, nodes, clusterDir.resolve("password"), base, prompt, onA);
            writeBehindReachesAnotherMachine(model, nodes, clusterDir.resolve("password"));
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
