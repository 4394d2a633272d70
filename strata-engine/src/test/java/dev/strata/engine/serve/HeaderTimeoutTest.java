package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Clients that connect and never finish their headers are closed by the server after
 * {@link ServerConfig#headerTimeoutMillis()} while complete requests are still answered. The
 * server runs in a child JVM: the JDK's HTTP server reads its timeouts once per process, so the
 * small timeout this test needs must be the first one that process sees.
 */
class HeaderTimeoutTest {
    private static final int HALF_SENT = 200; // connections that never finish their headers
    private static final long TIMEOUT_MS = 1000; // the server's header timeout in the child
    private static final long BOUND_MS = 20_000; // all of them closed well within this, or the test fails

    @TempDir
    Path dir;

    /** A child JVM: {@code HeaderTimeoutTest$Child <model dir> <header timeout ms>} serves on 127.0.0.1 until stdin ends. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            Path model = Path.of(args[0]);
            ModelSynthesizer.write(SynthSpec.small(ModelFamily.LLAMA, 3), model, (d, t, b, tb) -> { });
            ServeMetrics metrics = new ServeMetrics();
            try (ServeEngine engine = new ServeEngine(model, 1, 16, 8, 0);
                 ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, metrics);
                 OpenAiServer server = OpenAiServer.start(ServerConfig.local(0, "m", 64, 64)
                         .withHeaderTimeoutMillis(Long.parseLong(args[1])), engine, generator, metrics)) {
                System.out.println("port " + server.port());
                System.out.flush();
                System.in.readAllBytes(); // until the test closes our stdin
            }
        }
    }

    @Test
    void halfSentHeadersAreClosedByTheServerWhileCompleteRequestsAreAnswered() throws Exception {
        String java = System.getProperty("strata.java", Path.of(System.getProperty("java.home"), "bin", "java").toString());
        Process child = new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), Child.class.getName(), dir.resolve("model").toString(),
                Long.toString(TIMEOUT_MS)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        List<Socket> sockets = new ArrayList<>();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            assertThat(line).as("the child's first line").isNotNull().startsWith("port ");
            int port = Integer.parseInt(line.substring("port ".length()).strip());

            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BOUND_MS);
            for (int i = 0; i < HALF_SENT; i++) {
                Socket s = new Socket("127.0.0.1", port);
                sockets.add(s);
                s.getOutputStream().write("GET /health HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().flush();
            }

            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            HttpResponse<String> health = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health"))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).as("a complete request beside the half-sent ones").isEqualTo(200);

            int closed = 0;
            for (Socket s : sockets) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                s.setSoTimeout((int) Math.max(1, left));
                try {
                    assertThat(s.getInputStream().read()).as("the server closes a connection whose headers never end").isEqualTo(-1);
                    closed++;
                } catch (SocketTimeoutException e) {
                    break;
                }
            }
            assertThat(closed).as("half-sent connections closed by the server within " + BOUND_MS + " ms").isEqualTo(HALF_SENT);
        } finally {
            for (Socket s : sockets) {
                s.close();
            }
            child.getOutputStream().close();
            if (!child.waitFor(30, TimeUnit.SECONDS)) {
                child.destroyForcibly();
            }
        }
    }
}
