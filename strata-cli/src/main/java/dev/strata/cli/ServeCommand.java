package dev.strata.cli;

import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.peer.PeerClient;
import dev.strata.engine.schedule.PreemptionMode;
import dev.strata.engine.serve.ContinuousBatchingGenerator;
import dev.strata.engine.serve.Generator;
import dev.strata.engine.serve.OpenAiServer;
import dev.strata.engine.serve.ServeEngine;
import dev.strata.engine.serve.ServeMetrics;
import dev.strata.engine.serve.ServerConfig;
import dev.strata.engine.synth.DemoModel;
import dev.strata.memory.Sizes;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.node.client.NodeAccess;
import dev.strata.node.daemon.NodeConfig;
import dev.strata.node.peer.ShmLenderOptions;
import dev.strata.node.peer.ShmPeerLender;
import dev.strata.node.rpc.RpcClientOptions;
import dev.strata.node.rpc.RpcServerConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata serve [--model DIR]}: serves one model over the OpenAI-compatible HTTP API
 * ({@link OpenAiServer}) until the process is stopped (Ctrl-C or SIGTERM closes it cleanly).
 * Without {@code --model} it serves the demo model ({@link DemoModel}), synthesised into the model
 * cache on first use. {@code --host-kv} (and {@code --disk-kv}) give the KV cache offload tiers;
 * {@code --pool} attaches to a pool shared through {@code strata node} (or embedded), so that
 * engine processes load the KV blocks each other published. {@code --peer} borrows memory lent by
 * {@code strata peer} agents: a PEER KV tier above {@code --host-kv} and expert copies placed by
 * an expert rebalancer. {@code --split-budget} puts the expert slots and the KV slots in one DEVICE
 * budget that the live MV-WSA split moves between them.
 *
 * <p>Threads: picocli's thread parses and starts; the server and generator run their own threads.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions, /v1/models, /health, /metrics).")
public final class ServeCommand implements Callable<Integer> {
    @Option(names = "--model", paramLabel = "DIR",
            description = "model directory (config.json, safetensors, tokenizer.json); default: the demo model, written on first use")
    Path model;
    @Option(names = "--models-dir", paramLabel = "DIR", description = "where the demo model is cached (default: $STRATA_MODELS, else ~/.cache/strata/models)")
    Path modelsDir;
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
    @Option(names = "--split-budget", paramLabel = "SIZE",
            description = "one DEVICE budget split live between expert slots and KV slots (MV-WSA), e.g. 2GiB; needs --expert-cap (the starting slots per layer), and --kv-blocks becomes the KV floor; 0: no split (default: ${DEFAULT-VALUE})")
    String splitBudget = "0";
    @Option(names = "--host-kv", paramLabel = "SIZE", description = "HOST tier that committed KV blocks are copied into and reloaded from after eviction, e.g. 256MiB; 0: none (default: ${DEFAULT-VALUE})")
    String hostKv = "0";
    @Option(names = "--disk-kv", paramLabel = "DIR", description = "a DISK tier for KV blocks below --host-kv, in this directory (default: none)")
    Path diskKv;
    @Option(names = "--disk-kv-size", paramLabel = "SIZE", description = "capacity of the --disk-kv tier (default: ${DEFAULT-VALUE})")
    String diskKvSize = "1GiB";
    @Option(names = "--pool", paramLabel = "PATH", description = "share KV blocks with other engine processes through this pool file (see strata node)")
    Path pool;
    @Option(names = "--pool-name", paramLabel = "NAME", description = "the pool's name (default: ${DEFAULT-VALUE})")
    String poolName = NodeConfig.DEFAULT_POOL_NAME;
    @Option(names = "--pool-capacity", paramLabel = "SIZE", description = "capacity of the pool when this process creates it (embedded) (default: ${DEFAULT-VALUE})")
    String poolCapacity = "1GiB";
    @Option(names = "--node-access", paramLabel = "MODE",
            description = "how --pool's block index is reached: DAEMON (strata node), EMBEDDED (in this process) or AUTO (default: ${DEFAULT-VALUE})")
    NodeAccess.Mode nodeAccess = NodeAccess.Mode.AUTO;
    @Option(names = "--rpc", paramLabel = "PATH", description = "the RPC region of strata node (default: ${DEFAULT-VALUE})")
    Path rpc = RpcServerConfig.DEFAULT_PATH;
    @Option(names = "--peer", paramLabel = "FILE", split = ",",
            description = "borrow memory lent by strata peer agents through these lending files (comma-separated): a PEER KV tier above --host-kv and copies of the most-routed experts")
    List<Path> peerFiles = new ArrayList<>();
    @Option(names = "--peer-kv", paramLabel = "SIZE", description = "most bytes of KV blocks kept on peers (needs --host-kv; 0: none) (default: ${DEFAULT-VALUE})")
    String peerKv = "64MiB";
    @Option(names = "--peer-durability", paramLabel = "MODE",
            description = "KV blocks offloaded to peers: lossy (only copy on the peer; a revoked block is recomputed) or backed (also written through to HOST) (default: ${DEFAULT-VALUE})")
    String peerDurability = "lossy";
    @Option(names = "--peer-experts", paramLabel = "SIZE", description = "most bytes of expert copies kept on peers (with --expert-cap; 0: none) (default: ${DEFAULT-VALUE})")
    String peerExperts = "64MiB";
    @Option(names = "--routing-trace", paramLabel = "FILE",
            description = "record every routing decision of a MoE model in the routing-trace format (for strata trace stats and plan-split)")
    Path routingTrace;
    @Option(names = "--rebalance-ms", paramLabel = "MS", description = "time between the expert rebalancer's passes (default: ${DEFAULT-VALUE})")
    long rebalanceMillis = 200;
    @Option(names = "--peer-policy", paramLabel = "NAME", description = "how a peer is picked: best-fit, locality, fairness or stability (default: ${DEFAULT-VALUE})")
    String peerPolicy = "best-fit";
    @Option(names = "--exit-with", paramLabel = "PID", hidden = true, description = "stop when the process PID ends (for child processes)")
    Long exitWith;
    @Option(names = "--max-body-bytes", description = "largest request body (default: ${DEFAULT-VALUE})")
    long maxBodyBytes = 1L << 20;
    @Option(names = "--max-prompt-tokens", description = "longest prompt (default: kv-blocks × block-tokens − 1)")
    Integer maxPromptTokens;
    @Option(names = "--max-tokens-limit", description = "largest max_tokens a request may ask for (default: kv-blocks × block-tokens − 1)")
    Integer maxTokensLimit;

    private long hostKvBytes; // --host-kv in bytes, set by start()
    private long peerKvBytes; // --peer-kv in bytes (0 without --peer or --host-kv), set by start()
    private long peerExpertBytes; // --peer-experts in bytes (0 without --peer or --expert-cap), set by start()

    private String peerSummary() {
        if (peerFiles.isEmpty()) {
            return "";
        }
        return ", " + peerFiles.size() + (peerFiles.size() == 1 ? " peer" : " peers") + " (PEER KV "
                + (peerKvBytes > 0 ? Sizes.format(peerKvBytes) + " " + peerDurability.toLowerCase(Locale.ROOT) : "none")
                + ", experts " + (peerExpertBytes > 0 ? Sizes.format(peerExpertBytes) : "none") + ")";
    }

    /** --peer-durability as a durability. */
    private Durability peerDurability() {
        return switch (peerDurability.toLowerCase(Locale.ROOT)) {
            case "lossy" -> Durability.LOSSY;
            case "backed" -> Durability.BACKED;
            default -> throw new IllegalArgumentException("--peer-durability must be lossy or backed, got '" + peerDurability + "'");
        };
    }

    /** A client over one shared-memory lender per --peer file (peer ids in order). */
    private PeerClient openPeers() {
        List<ShmPeerLender> lenders = new ArrayList<>();
        try {
            for (int i = 0; i < peerFiles.size(); i++) {
                Path file = peerFiles.get(i);
                if (!Files.exists(file)) {
                    throw new IllegalArgumentException("--peer " + file + ": no such lending file (is strata peer running with --file "
                            + file + "?)");
                }
                lenders.add(ShmPeerLender.open(file, i, ShmLenderOptions.defaults().withName(file.getFileName().toString())));
            }
            return PeerClient.of(lenders, peerPolicy);
        } catch (RuntimeException | Error e) {
            lenders.forEach(ShmPeerLender::close);
            throw e;
        }
    }

    @Override
    public Integer call() {
        Running running = start();
        Runtime.getRuntime().addShutdownHook(new Thread(running::close, "strata-serve-shutdown"));
        if (exitWith != null) {
            ProcessHandle.of(exitWith).ifPresentOrElse(p -> p.onExit().thenRun(() -> System.exit(0)), () -> System.exit(0));
        }
        System.out.printf(Locale.ROOT, "serving %s (%s) on http://%s:%d/v1 with %d KV blocks of %d tokens%s%s%s%s%n", running.config().modelId(),
                model, running.config().host(), running.port(), kvBlocks, blockTokens,
                expertCap > 0 ? ", " + expertCap + " expert slots per layer" + (running.engine().split() != null
                        ? " in a live expert/KV split of " + Sizes.format(running.engine().split().settings().budgetBytes()) : "") : "",
                hostKvBytes > 0 ? ", " + Sizes.format(hostKvBytes) + " HOST KV" + (diskKv != null ? " over DISK " + diskKv : "") : "",
                running.access != null ? ", pool " + pool + " (" + running.access.mode() + ")" + peerSummary() : peerSummary(),
                running.config().apiKey() != null ? ", API key required" : "");
        System.out.flush();
        running.await();
        return 0;
    }

    /** Opens the model and starts the server; the caller closes the result. */
    Running start() {
        if (model == null) {
            model = DemoModel.ensure(modelsDir != null ? modelsDir : DemoModel.defaultCacheRoot(), System.err);
        }
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
        hostKvBytes = size("--host-kv", hostKv);
        if (diskKv != null && hostKvBytes == 0) {
            throw new IllegalArgumentException("--disk-kv " + diskKv + " needs --host-kv above it");
        }
        long diskKvBytes = diskKv != null ? size("--disk-kv-size", diskKvSize) : 0;
        String id = modelId != null ? modelId : model.toAbsolutePath().normalize().getFileName().toString();
        ServerConfig config = new ServerConfig(host, port, apiKey, id, maxBodyBytes,
                maxPromptTokens != null ? maxPromptTokens : (int) capacity - 1, maxTokensLimit != null ? maxTokensLimit : (int) capacity - 1);
        Durability durability = peerDurability();
        if (rebalanceMillis <= 0) {
            throw new IllegalArgumentException("--rebalance-ms must be positive, got " + rebalanceMillis);
        }
        if (!peerFiles.isEmpty()) {
            long kvBytes = size("--peer-kv", peerKv);
            if (kvBytes > 0 && hostKvBytes == 0) {
                throw new IllegalArgumentException("--peer-kv " + peerKv + " needs --host-kv below it (the KV chain is PEER then HOST); "
                        + "give --host-kv SIZE, or --peer-kv 0 to place only experts on peers");
            }
            peerKvBytes = kvBytes;
            peerExpertBytes = expertCap > 0 ? size("--peer-experts", peerExperts) : 0;
        }
        PeerClient peers = peerFiles.isEmpty() ? null : openPeers();
        NodeAccess access;
        try {
            access = pool != null ? openPool() : null;
        } catch (RuntimeException | Error e) {
            if (peers != null) {
                peers.close();
            }
            throw e;
        }
        ServeEngine engine;
        try {
            ServeEngine.Options.Builder o = ServeEngine.Options.builder().threads(threads).blockTokens(blockTokens).kvBlocks(kvBlocks)
                    .expertCap(expertCap).split(size("--split-budget", splitBudget)).hostKv(hostKvBytes).peerKvDurability(durability)
                    .rebalancePeriod(Duration.ofMillis(rebalanceMillis));
            if (peers != null) {
                o.peers(peers, peerKvBytes, peerExpertBytes);
            }
            if (diskKv != null) {
                o.diskKv(diskKv, diskKvBytes);
            }
            if (access != null) {
                o.shared(access.blocks());
            }
            engine = new ServeEngine(model, o.conclude());
        } catch (RuntimeException | Error e) {
            if (access != null) {
                access.close();
            }
            if (peers != null) {
                peers.close();
            }
            throw e;
        }
        ServeMetrics metrics = new ServeMetrics();
        Generator generator;
        try {
            generator = new ContinuousBatchingGenerator(engine, metrics, PreemptionMode.SWAP, routingTrace);
        } catch (RuntimeException e) {
            engine.close();
            if (access != null) {
                access.close();
            }
            if (peers != null) {
                peers.close();
            }
            throw e;
        }
        try {
            return new Running(OpenAiServer.start(config, engine, generator, metrics), generator, engine, access, peers);
        } catch (IOException e) {
            generator.close();
            engine.close();
            if (access != null) {
                access.close();
            }
            if (peers != null) {
                peers.close();
            }
            throw new UncheckedIOException("cannot listen on " + host + ":" + port + ": " + e.getMessage(), e);
        }
    }

    /** Attaches to (or, embedded, opens) the pool of --pool with this model's block-key identity. */
    private NodeAccess openPool() {
        long poolBytes = size("--pool-capacity", poolCapacity);
        ObjectKey fingerprint = ServeEngine.fingerprint(model, blockTokens);
        PoolConfig poolConfig = PoolConfig.builder(poolName).path(pool).capacity(poolBytes)
                .rootRegionSize(NodeConfig.rootRegionSize(poolBytes, PoolConfig.DEFAULT_CHUNK_SIZE, PoolConfig.DEFAULT_PROCESS_SLOTS, 2048))
                .conclude();
        return NodeAccess.open(new NodeAccess.Options(nodeAccess, poolConfig, rpc, PrefixHasher.VERSION, fingerprint,
                RpcClientOptions.defaults(), Duration.ofSeconds(30)));
    }

    private static long size(String option, String text) {
        try {
            return Sizes.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": " + e.getMessage(), e);
        }
    }

    /** A started server and what it runs on; {@link #close} stops it (idempotent). */
    static final class Running implements AutoCloseable {
        private final OpenAiServer server;
        private final Generator generator;
        private final ServeEngine engine;
        private final NodeAccess access; // null without --pool
        private final PeerClient peers; // null without --peer
        private final CountDownLatch closed = new CountDownLatch(1);

        Running(OpenAiServer server, Generator generator, ServeEngine engine, NodeAccess access, PeerClient peers) {
            this.server = server;
            this.generator = generator;
            this.engine = engine;
            this.access = access;
            this.peers = peers;
        }

        ServeEngine engine() {
            return engine;
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
            if (access != null) {
                access.close();
            }
            if (peers != null) {
                peers.close();
            }
            closed.countDown();
        }
    }
}
