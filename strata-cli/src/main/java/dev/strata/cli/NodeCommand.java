package dev.strata.cli;

import dev.strata.engine.serve.ServeEngine;
import dev.strata.cache.ObjectKey;
import dev.strata.memory.log.Log;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.node.daemon.NodeConfig;
import dev.strata.node.daemon.NodeDaemon;
import dev.strata.node.index.IndexIdentityException;
import dev.strata.node.rpc.RpcServerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import dev.strata.cache.config.ProcessConfig;
import dev.strata.cache.config.StrataConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code strata node}: runs the node daemon ({@link NodeDaemon}) until SIGTERM or SIGINT. Argument
 * handling only; the daemon is strata-node's.
 */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = {"Runs the node daemon: opens (or creates) a shared pool and the block index in it, and serves",
                "the index to engine processes over shared-memory RPC. Prints one 'strata node ready' line when it",
                "serves; stops cleanly on SIGTERM or SIGINT. A daemon started again on the same pool keeps every",
                "block published before."})
final class NodeCommand implements Callable<Integer> {
    /** What the node runs with before any file or flag: a pool of 1 GiB at the node's default path. */
    static final List<String> DEFAULTS = List.of("tiers={}", "tiers.pool.capacity=1GiB");

    @Mixin
    ConfigOptions config = new ConfigOptions();

    @Option(names = "--pool", paramLabel = "PATH",
            description = "pool file or device; repeat to stripe over several (default: /dev/shm/strata-<uid>-<pool-name>.pool) [tiers.pool.paths]")
    List<Path> pool = new ArrayList<>();

    @Option(names = "--pool-name", paramLabel = "NAME", description = "pool name (default: " + NodeConfig.DEFAULT_POOL_NAME + ") [node.pool-name]")
    String poolName;

    @Option(names = {"--pool-capacity", "--capacity"}, paramLabel = "SIZE", description = "pool data capacity when creating it, e.g. 1GiB (default: 1GiB) [tiers.pool.capacity]")
    String capacity;

    @Option(names = "--chunk", paramLabel = "SIZE", description = "pool allocation unit when creating it (default: 64KiB) [tiers.pool.chunk]")
    String chunk;

    @Option(names = "--process-slots", paramLabel = "N", description = "processes that may map the pool at once (default: 64) [node.process-slots]")
    Integer processSlots;

    @Option(names = "--rpc", paramLabel = "PATH", description = "the RPC region file (default: /dev/shm/strata-<uid>-node.rpc) [node.rpc]")
    Path rpc;

    @Option(names = "--channels", paramLabel = "N", description = "engine processes that may attach at once (default: 16) [node.channels]")
    Integer channels;

    @Option(names = "--slots", paramLabel = "N", description = "requests each client may have in flight, a power of two (default: 64) [node.slots]")
    Integer slots;

    @Option(names = "--payload", paramLabel = "BYTES", description = "payload bytes per request slot, a multiple of 64 (default: 512) [node.payload]")
    Integer payload;

    @Option(names = "--hash-version", paramLabel = "N", description = "block-hash version; 0 adopts the index's (default: 0) [node.hash-version]")
    Integer hashVersion;

    @Option(names = "--model-fingerprint", paramLabel = "HEX", description = "model fingerprint, 32 hex digits (strata model inspect DIR prints it); default: the index's, else the first server's to attach [node.model-fingerprint]")
    String modelFingerprint;

    @Option(names = "--model", paramLabel = "DIR",
            description = "the model the pool's servers serve: with tiers.cluster.write: eviction the node writes the blocks it evicts"
                    + " from the pool to the cluster, under this model's fingerprint and KV geometry (with kv.block-tokens) [model.path]")
    Path model;

    @Option(names = "--pins-per-process", paramLabel = "N",
            description = "pin records per process when the index is created (the daemon holds all its clients' pins) (default: 2048) [node.pins-per-process]")
    Integer pinsPerProcess;

    @Option(names = "--pin-seconds", paramLabel = "S", description = "how long a pin holds a block (default: 30) [node.pin-seconds]")
    Integer pinSeconds;

    @Option(names = "--exit-with", paramLabel = "PID", hidden = true, description = "stop when the process PID ends (for child processes)")
    Long exitWith;

    /** The flags given, as configuration settings. */
    Shorthands settings() {
        return new Shorthands().list("--pool", "tiers.pool.paths", pool).put("--pool-name", "node.pool-name", poolName).put("--pool-capacity", "tiers.pool.capacity", capacity)
                .put("--chunk", "tiers.pool.chunk", chunk).put("--process-slots", "node.process-slots", processSlots).put("--rpc", "node.rpc", rpc)
                .put("--channels", "node.channels", channels).put("--slots", "node.slots", slots).put("--payload", "node.payload", payload)
                .put("--hash-version", "node.hash-version", hashVersion).put("--model-fingerprint", "node.model-fingerprint", modelFingerprint)
                .put("--pins-per-process", "node.pins-per-process", pinsPerProcess).put("--pin-seconds", "node.pin-seconds", pinSeconds)
                .put("--model", "model.path", model);
    }

    /**
     * The daemon's configuration from {@code c}: its pool (tiers.pool) and node section.
     *
     * @param pathsGiven the pool paths were given explicitly (else the node's default path for the pool name)
     */
    static NodeConfig nodeConfig(StrataConfig c, boolean pathsGiven) {
        ProcessConfig.Node n = c.process().node();
        NodeConfig.Builder b = NodeConfig.builder().poolName(n.poolName() != null ? n.poolName() : NodeConfig.DEFAULT_POOL_NAME)
                .capacity(c.pool().capacity()).chunkSize(c.pool().chunk()).processSlots(n.processSlots()).hashVersion(n.hashVersion())
                .pinsPerProcess(n.pinsPerProcess());
        b.pinDuration(Duration.ofSeconds(n.pinSeconds()));
        if (pathsGiven || !c.pool().paths().equals(List.of(StrataConfig.DEFAULT_POOL_PATH))) {
            c.pool().paths().forEach(b::poolPath);
        }
        if (n.modelFingerprint() != null) {
            b.modelFingerprint(ObjectKey.parse(n.modelFingerprint().strip().toLowerCase(java.util.Locale.ROOT)));
        }
        b.rpc().path(n.rpc() != null ? n.rpc() : RpcServerConfig.DEFAULT_PATH).channels(n.channels()).slotsPerChannel(n.slots())
                .payloadBytes(n.payload());
        return b.conclude();
    }

    @Override
    public Integer call() throws InterruptedException {
        StrataConfig c = this.config.load(DEFAULTS, settings());
        NodeConfig config = nodeConfig(c, !pool.isEmpty());
        dev.strata.cluster.ClusterBlockStore cluster = null;
        NodeDaemon daemon;
        try {
            cluster = writeBehindCluster(c, config);
            if (cluster != null && config.modelFingerprint() == null) {
                config = config.withModelFingerprint(ServeEngine.fingerprint(c.process().model().path(), c.process().kv().blockTokens()));
            }
            daemon = NodeDaemon.start(config, System.out, ServeCluster.poolEvictions(c, cluster));
        } catch (IndexIdentityException | ShmFormatException | IllegalStateException | IllegalArgumentException e) {
            if (cluster != null) {
                cluster.close();
            }
            System.err.println(Log.failure(e.getMessage()));
            return 2;
        }
        if (exitWith != null) {
            ProcessHandle.of(exitWith).ifPresentOrElse(p -> p.onExit().thenRun(() -> System.exit(0)), () -> System.exit(0));
        }
        try {
            daemon.runUntilStopped();
        } finally {
            if (cluster != null) {
                cluster.close();
            }
        }
        return 0;
    }

    /**
     * The cluster the daemon writes the blocks it evicts to: with {@code tiers.cluster.write:
     * eviction}, opened for the model of {@code model.path}; null otherwise.
     *
     * @throws IllegalArgumentException when write-behind is configured without the model, or with
     *                                  a model whose fingerprint is not the node's
     */
    static dev.strata.cluster.ClusterBlockStore writeBehindCluster(StrataConfig c, NodeConfig config) {
        if (c.cluster() == null || c.cluster().write() != StrataConfig.ClusterWrite.EVICTION) {
            return null;
        }
        java.nio.file.Path modelDir = c.process().model().path();
        if (modelDir == null) {
            throw new IllegalArgumentException("tiers.cluster.write is eviction: the node writes the blocks it evicts from the pool to"
                    + " the cluster, under the served model's fingerprint and KV geometry; give the model with --model DIR (model.path)");
        }
        int blockTokens = c.process().kv().blockTokens();
        ObjectKey fingerprint = ServeEngine.fingerprint(modelDir, blockTokens);
        if (config.modelFingerprint() != null && !config.modelFingerprint().equals(fingerprint)) {
            throw new IllegalArgumentException("--model " + modelDir + " with kv.block-tokens " + blockTokens + " has fingerprint "
                    + fingerprint + ", but the node is configured for " + config.modelFingerprint() + " (node.model-fingerprint)");
        }
        return ServeCluster.open(c, modelDir, blockTokens);
    }
}
