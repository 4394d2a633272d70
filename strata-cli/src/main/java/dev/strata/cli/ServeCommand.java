package dev.strata.cli;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cluster.ClusterBlockStore;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PlacementPolicy;
import dev.strata.engine.model.WeightLoad;
import dev.strata.engine.schedule.PreemptionMode;
import dev.strata.engine.serve.ContinuousBatchingGenerator;
import dev.strata.engine.serve.Generator;
import dev.strata.engine.serve.OpenAiServer;
import dev.strata.engine.serve.ServeEngine;
import dev.strata.engine.serve.ServeMetrics;
import dev.strata.engine.serve.ServerConfig;
import dev.strata.engine.synth.DemoModel;
import dev.strata.memory.Sizes;
import dev.strata.memory.log.Log;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.node.client.NodeAccess;
import dev.strata.node.daemon.NodeConfig;
import dev.strata.node.peer.ShmLenderOptions;
import dev.strata.node.peer.ShmPeerLender;
import dev.strata.node.rpc.RpcClientOptions;
import dev.strata.node.rpc.RpcServerConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import dev.strata.cache.config.ProcessConfig;
import dev.strata.cache.config.StrataConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
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
    @Mixin
    ConfigOptions config = new ConfigOptions();
    @Mixin
    ServeFlags flags = new ServeFlags();
    @Option(names = "--exit-with", paramLabel = "PID", hidden = true, description = "stop when the process PID ends (for child processes)")
    Long exitWith;

    /** The configuration serve runs: its defaults, the file, STRATA_SET, --set and the shorthand flags, checked. */
    StrataConfig configuration() {
        return config.load(ServeFlags.DEFAULTS, flags.settings());
    }

    /**
     * A client over one shared-memory lender per lending file of the {@code peers} settings (peer
     * ids in order): each lender looks at its path every {@code reattach-ms} for an agent
     * restarted there, a revocation's event thread waits up to {@code drain-wait-us} for the copies
     * under way, and {@code policy} places leases (STABILITY forgetting revocations with
     * {@code revocation-half-life-s}).
     */
    private static PeerClient openPeers(ProcessConfig.Peers settings, String policy) {
        List<Path> files = settings.files();
        List<ShmPeerLender> lenders = new ArrayList<>();
        try {
            for (int i = 0; i < files.size(); i++) {
                Path file = files.get(i);
                if (!Files.exists(file)) {
                    throw new IllegalArgumentException("--peer " + file + ": no such lending file (is strata peer running with --file "
                            + file + "?)");
                }
                lenders.add(ShmPeerLender.open(file, i, ShmLenderOptions.defaults().withName(file.getFileName().toString())
                        .withReattachInterval(Duration.ofMillis(settings.reattachMillis()))));
            }
            return PeerClient.builder().lenders(lenders).policy(policy).drainWaitNanos(settings.drainWaitMicros() * 1000)
                    .revocationHalfLifeNanos(settings.revocationHalfLifeSeconds() * 1_000_000_000L).build();
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
        System.out.printf(Locale.ROOT, "serving %s (%s) on http://%s:%d/v1 with %s%s%n", running.config().modelId(),
                running.model, running.config().host(), running.port(), running.summary,
                running.config().apiKey() != null ? ", API key required" : "");
        System.out.flush();
        running.await();
        return 0;
    }

    /** Builds the configuration, opens the model and starts the server; the caller closes the result. */
    Running start() {
        return start(configuration());
    }

    /** Opens everything {@code c} describes and starts the server; the caller closes the result. */
    static Running start(StrataConfig c) {
        ProcessConfig p = c.process();
        Path model = p.model().path();
        if (model == null) {
            model = DemoModel.ensure(p.model().cacheDir() != null ? p.model().cacheDir() : DemoModel.defaultCacheRoot(), Log.stream("serve"));
        }
        if (!Files.isDirectory(model)) {
            throw new IllegalArgumentException("--model " + model + " is not a directory (model.path)");
        }
        int threads = p.server().threads() > 0 ? p.server().threads() : Runtime.getRuntime().availableProcessors();
        int blockTokens = p.kv().blockTokens();
        int kvBlocks = p.kv().deviceBlocks();
        int capacity = kvBlocks * blockTokens;
        String apiKey = p.server().apiKey() != null ? p.server().apiKey() : System.getenv("STRATA_API_KEY");
        guardPublicHost(p.server(), apiKey);
        String id = p.model().id() != null ? p.model().id() : model.toAbsolutePath().normalize().getFileName().toString();
        ServerConfig server = new ServerConfig(p.server().host(), p.server().port(), apiKey, id, p.server().maxBodyBytes(),
                p.server().maxPromptTokens() > 0 ? p.server().maxPromptTokens() : capacity - 1,
                p.server().maxTokensLimit() > 0 ? p.server().maxTokensLimit() : capacity - 1, p.server().headerTimeoutMillis(),
                p.server().maxIdleConnections());
        List<Path> peerFiles = p.peers().files();
        if (c.peer() != null && peerFiles.isEmpty()) {
            throw new IllegalArgumentException("tiers.peer (" + Sizes.format(c.peer().capacity()) + ") borrows from peers, but peers.files"
                    + " names no lending file (give --peer FILE, or remove tiers.peer)");
        }
        if (c.peer() != null && c.host() == null) {
            throw new IllegalArgumentException("--peer-kv " + Sizes.format(c.peer().capacity()).replace(" ", "") + " needs --host-kv below it"
                    + " (tiers.peer needs tiers.host: the KV chain is PEER then HOST); give --host-kv SIZE, or --peer-kv 0 to place"
                    + " only experts on peers");
        }
        int expertCap = p.experts().deviceSlots();
        long peerExpertBytes = !peerFiles.isEmpty() && expertCap > 0 ? p.experts().peerBytes() : 0;
        long splitBudget = splitBudget(c);
        PeerClient peers = peerFiles.isEmpty() ? null : openPeers(p.peers(), c.peer() != null ? c.peer().policy() : PlacementPolicy.DEFAULT_NAME);
        List<AutoCloseable> opened = new ArrayList<>(); // closed in reverse on failure
        if (peers != null) {
            opened.add(peers);
        }
        try {
            ClusterBlockStore cluster = ServeCluster.open(c, model, blockTokens);
            if (cluster != null) {
                opened.add(cluster);
            }
            // with an embedded index this process evicts from the pool itself, and writes those blocks behind to the cluster
            NodeAccess access = c.pool() != null ? openPool(c, model, blockTokens, ServeCluster.poolEvictions(c, cluster)) : null;
            if (access != null) {
                opened.add(access);
            }
            ServeEngine.Options.Builder o = ServeEngine.Options.builder().threads(threads).blockTokens(blockTokens).kvBlocks(kvBlocks)
                    .kvPolicy(p.kv().policy()).kvRecomputeWhenFaster(p.kv().recomputeWhenFaster()).expertCap(expertCap).split(splitBudget).offload(c).rebalancePeriod(Duration.ofMillis(p.experts().rebalanceMillis()))
                    .weightLoad(WeightLoad.valueOf(p.model().load().name())).expertMasters(p.experts().mastersDir());
            if (peers != null) {
                o.peers(peers, 0, peerExpertBytes);
            }
            SharedBlockStore shared = ServeCluster.shared(access != null ? access.blocks() : null, cluster);
            if (shared != null) {
                o.shared(shared);
            }
            ServeEngine engine = new ServeEngine(model, o.conclude());
            opened.add(engine);
            ServeMetrics metrics = new ServeMetrics();
            Generator generator = new ContinuousBatchingGenerator(engine, metrics, PreemptionMode.SWAP, p.server().routingTrace());
            opened.add(generator);
            OpenAiServer http;
            try {
                http = OpenAiServer.start(server, engine, generator, metrics);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot listen on " + server.host() + ":" + server.port() + ": " + e.getMessage(), e);
            }
            String summary = kvBlocks + " KV blocks of " + blockTokens + " tokens (policy " + engine.kv().policyName() + ")"
                    + (engine.model().files().load() == WeightLoad.MAP ? ", weights memory-mapped (model.load: map)" : "")
                    + (expertCap > 0 ? ", " + expertCap + " expert slots per layer" : "")
                    + (p.experts().mastersDir() != null ? ", expert masters on DISK in " + p.experts().mastersDir() : "")
                    + (engine.split() != null ? " in a live expert/KV split of " + Sizes.format(engine.split().settings().budgetBytes()) : "")
                    + (c.host() != null ? ", " + Sizes.format(c.host().capacity()) + " HOST KV" + (c.disk() != null ? " over DISK "
                    + c.disk().directory() : "") : "")
                    + (access != null ? ", pool " + c.pool().paths().getFirst() + " (" + access.mode() + ")" : "")
                    + (cluster != null ? ", cluster " + c.cluster().nodes() + " (tenant " + c.cluster().tenant() + ")" : "")
                    + (peers != null ? ", " + peerFiles.size() + (peerFiles.size() == 1 ? " peer" : " peers") + " (PEER KV "
                    + (c.peer() != null ? Sizes.format(c.peer().capacity()) + " " + c.peer().durability().name().toLowerCase(Locale.ROOT) : "none")
                    + ", experts " + (peerExpertBytes > 0 ? Sizes.format(peerExpertBytes) : "none") + ")" : "");
            return new Running(http, generator, engine, access, peers, model, summary).with(cluster);
        } catch (RuntimeException | Error e) {
            for (int i = opened.size() - 1; i >= 0; i--) {
                try {
                    opened.get(i).close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /**
     * Refuses to serve a non-loopback address without an API key unless {@code server.insecure}
     * says the operator means it; then warns on standard error. A host that does not resolve is
     * left to the bind, which names it.
     *
     * @throws IllegalArgumentException naming server.host, the address and the two ways on
     */
    private static void guardPublicHost(ProcessConfig.Server s, String apiKey) {
        if (apiKey != null && !apiKey.isEmpty()) {
            return;
        }
        InetAddress address;
        try {
            address = InetAddress.getByName(s.host());
        } catch (UnknownHostException e) {
            return;
        }
        if (address.isLoopbackAddress()) {
            return;
        }
        if (!s.insecure()) {
            throw new IllegalArgumentException("server.host " + s.host() + " is not a loopback address and no API key is set:"
                    + " anyone who reaches it could generate; give --api-key KEY (server.api-key, or $STRATA_API_KEY), or --insecure"
                    + " (server.insecure: true) to serve it without a key knowingly");
        }
        Log.warn("serve", "serving " + s.host() + " without an API key (server.insecure): anyone who reaches it may generate"
                + " and read /metrics");
    }

    /**
     * The DEVICE budget of the live expert/KV split: 0 when {@code split.enabled} is false, else
     * {@code split.budget}, or the DEVICE tier's capacity when that is 0.
     *
     * @throws IllegalArgumentException if the split is enabled with neither a budget nor a DEVICE tier
     */
    private static long splitBudget(StrataConfig c) {
        ProcessConfig.Split split = c.process().split();
        if (!split.enabled()) {
            return 0;
        }
        if (split.budget() > 0) {
            return split.budget();
        }
        if (c.device() != null) {
            return c.device().capacity();
        }
        throw new IllegalArgumentException("split.enabled is true but the split has no budget: split.budget is 0 and there is no"
                + " tiers.device.capacity to take it from (give --split-budget SIZE, or set split.budget or tiers.device.capacity)");
    }

    /** Attaches to (or, embedded, opens) the pool of tiers.pool with this model's block-key identity. */
    private static NodeAccess openPool(StrataConfig c, Path model, int blockTokens, dev.strata.cache.EvictionSink evictions) {
        long poolBytes = c.pool().capacity();
        ProcessConfig.Node n = c.process().node();
        ObjectKey fingerprint = ServeEngine.fingerprint(model, blockTokens);
        PoolConfig poolConfig = PoolConfig.builder(n.poolName() != null ? n.poolName() : NodeConfig.DEFAULT_POOL_NAME)
                .path(c.pool().paths().getFirst()).capacity(poolBytes)
                .rootRegionSize(NodeConfig.rootRegionSize(poolBytes, PoolConfig.DEFAULT_CHUNK_SIZE, PoolConfig.DEFAULT_PROCESS_SLOTS, 2048))
                .conclude();
        NodeAccess.Mode mode = NodeAccess.Mode.valueOf(n.access().name());
        return NodeAccess.open(new NodeAccess.Options(mode, poolConfig, n.rpc() != null ? n.rpc() : RpcServerConfig.DEFAULT_PATH,
                PrefixHasher.VERSION, fingerprint, RpcClientOptions.defaults(), Duration.ofSeconds(30), evictions));
    }

    /** A started server and what it runs on; {@link #close} stops it (idempotent). */
    static final class Running implements AutoCloseable {
        private final OpenAiServer server;
        private final Generator generator;
        private final ServeEngine engine;
        private final NodeAccess access; // null without --pool
        private final PeerClient peers; // null without --peer
        private final Path model; // the model directory served
        private final String summary; // what runs, for the start-up line
        private final CountDownLatch closed = new CountDownLatch(1);
        private ClusterBlockStore cluster; // null without tiers.cluster; closed after the engine

        Running(OpenAiServer server, Generator generator, ServeEngine engine, NodeAccess access, PeerClient peers, Path model,
                String summary) {
            this.server = server;
            this.generator = generator;
            this.engine = engine;
            this.access = access;
            this.peers = peers;
            this.model = model;
            this.summary = summary;
        }

        /** This server with the cluster store it closes last (null: none). */
        Running with(ClusterBlockStore clusterStore) {
            this.cluster = clusterStore;
            return this;
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
            if (cluster != null) {
                cluster.close();
            }
            closed.countDown();
        }
    }
}
