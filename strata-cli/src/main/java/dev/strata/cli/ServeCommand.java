package dev.strata.cli;

import dev.strata.engine.serve.ContinuousBatchingGenerator;
import dev.strata.engine.serve.Generator;
import dev.strata.engine.serve.OpenAiServer;
import dev.strata.engine.serve.ServeEngine;
import dev.strata.engine.serve.ServeMetrics;
import dev.strata.engine.serve.ServerConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata serve --model DIR}: serves one model over the OpenAI-compatible HTTP API
 * ({@link OpenAiServer}) until the process is stopped (Ctrl-C or SIGTERM closes it cleanly).
 *
 * <p>Threads: picocli's thread parses and starts; the server and generator run their own threads.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions, /v1/models, /health, /metrics).")
public final class ServeCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, paramLabel = "DIR", description = "model directory (config.json, safetensors, tokenizer.json)")
    Path model;
    @Option(names = "--model-id", description = "the id clients name in 'model' (default: the directory's name)")
    String modelId;
    @Option(names = "--host", description = "address to bind (default: ${DEFAULT-VALUE}; bind a public address only behind --api-key)")
    String host = "127.0.0.1";
    @Option(names = "--port", description = "TCP port; 0 picks a free one (default: ${DEFAULT-VALUE})")
    int port = 8000;
    @Option(names = "--api-key", description = "require 'Authorization: Bearer KEY' on /v1/* and /metrics (default: none, or $STRATA_API_KEY)")
    String apiKey = System.getenv("STRATA_API_KEY");
    @Option(names = "--threads", description = "kernel threads (default: the available processors)")
    int threads = Runtime.getRuntime().availableProcessors();
    @Option(names = "--kv-blocks", description = "KV blocks in memory; a sequence holds at most kv-blocks × block-tokens tokens (default: ${DEFAULT-VALUE})")
    int kvBlocks = 256;
    @Option(names = "--block-tokens", description = "tokens per KV block (default: ${DEFAULT-VALUE})")
    int blockTokens = 16;
    @Option(names = "--expert-cap", description = "expert slots per MoE layer in the DEVICE tier; 0 reads experts from the mapped weights (default: ${DEFAULT-VALUE})")
    int expertCap = 0;
    @Option(names = "--max-body-bytes", description = "largest request body (default: ${DEFAULT-VALUE})")
    long maxBodyBytes = 1L << 20;
    @Option(names = "--max-prompt-tokens", description = "longest prompt (default: kv-blocks × block-tokens − 1)")
    Integer maxPromptTokens;
    @Option(names = "--max-tokens-limit", description = "largest max_tokens a request may ask for (default: kv-blocks × block-tokens − 1)")
    Integer maxTokensLimit;

    @Override
    public Integer call() {
        Running running = start();
        Runtime.getRuntime().addShutdownHook(new Thread(running::close, "strata-serve-shutdown"));
        System.out.printf(Locale.ROOT, "serving %s (%s) on http://%s:%d/v1 with %d KV blocks of %d tokens%s%s%n", running.config().modelId(),
                model, running.config().host(), running.port(), kvBlocks, blockTokens,
                expertCap > 0 ? ", " + expertCap + " expert slots per layer" : "", running.config().apiKey() != null ? ", API key required" : "");
        System.out.flush();
        running.await();
        return 0;
    }

    /** Opens the model and starts the server; the caller closes the result. */
    Running start() {
        if (!Files.isDirectory(model)) {
            throw new IllegalArgumentException("--model " + model + " is not a directory");
        }
        for (String[] v : new String[][] {{"--threads", "" + threads}, {"--kv-blocks", "" + kvBlocks}, {"--block-tokens", "" + blockTokens}}) {
            if (Integer.parseInt(v[1]) < 1) {
                throw new IllegalArgumentException(v[0] + " must be at least 1, got " + v[1]);
            }
        }
        if (expertCap < 0) {
            throw new IllegalArgumentException("--expert-cap must be at least 0, got " + expertCap);
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("--port must be in [0, 65535], got " + port);
        }
        long capacity = (long) kvBlocks * blockTokens;
        if (capacity > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--kv-blocks " + kvBlocks + " × --block-tokens " + blockTokens + " tokens is too many");
        }
        String id = modelId != null ? modelId : model.toAbsolutePath().normalize().getFileName().toString();
        ServerConfig config = new ServerConfig(host, port, apiKey, id, maxBodyBytes,
                maxPromptTokens != null ? maxPromptTokens : (int) capacity - 1, maxTokensLimit != null ? maxTokensLimit : (int) capacity - 1);
        ServeEngine engine = new ServeEngine(model, threads, blockTokens, kvBlocks, expertCap);
        ServeMetrics metrics = new ServeMetrics();
        Generator generator = new ContinuousBatchingGenerator(engine, metrics);
        try {
            return new Running(OpenAiServer.start(config, engine, generator, metrics), generator, engine);
        } catch (IOException e) {
            generator.close();
            engine.close();
            throw new UncheckedIOException("cannot listen on " + host + ":" + port + ": " + e.getMessage(), e);
        }
    }

    /** A started server and what it runs on; {@link #close} stops it (idempotent). */
    static final class Running implements AutoCloseable {
        private final OpenAiServer server;
        private final Generator generator;
        private final ServeEngine engine;
        private final CountDownLatch closed = new CountDownLatch(1);

        Running(OpenAiServer server, Generator generator, ServeEngine engine) {
            this.server = server;
            this.generator = generator;
            this.engine = engine;
        }

        int port() {
            return server.port();
        }

        ServerConfig config() {
            return server.config();
        }

        void await() {
            try {
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public synchronized void close() {
            if (closed.getCount() == 0) {
                return;
            }
            server.close();
            generator.close();
            engine.close();
            closed.countDown();
        }
    }
}
