package dev.strata.node.daemon;

import dev.strata.cache.ObjectKey;
import dev.strata.memory.Sizes;
import dev.strata.memory.pool.PoolTier;
import dev.strata.node.index.BlockIndexConfig;
import dev.strata.node.index.IndexStats;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.index.PoolIndexInspector;
import dev.strata.node.rpc.RpcServer;
import java.io.PrintStream;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code strata node}: the process that opens (or creates) a pool and the global block index that
 * lives in it, and serves the index to engine processes over shared-memory RPC.
 *
 * <p>Design note: the index's state is entirely in the pool (published blocks, reservations,
 * pins), so the daemon holds nothing that a restart loses: killed and started again on the same
 * pool, it serves every block published before. Its own reservations and pins (taken for
 * clients) die with it and are cleared by the index's reaping, which a maintenance thread runs
 * every {@code reapInterval}. A daemon given no model fingerprint learns it (and the hash version,
 * if not given either) from the first engine process that attaches and keeps it in the index, so
 * that a process of another model is refused. Engine processes that attach to the daemon map the pool themselves
 * for the block bytes; only index operations cross the RPC.
 *
 * <p>Lifecycle: {@link #start} opens everything, starts serving and prints one line starting with
 * {@code strata node ready}; {@link #close} (also on SIGTERM, from a shutdown hook installed by
 * {@link #runUntilStopped}) stops the RPC server first (waiting clients see the daemon stopped),
 * then closes the index and the pool, and prints {@code strata node stopped}.
 *
 * <p>Threads: {@link #start}, {@link #close} from any thread; the index is served on the RPC
 * polling thread and reaped on the maintenance thread.
 */
public final class NodeDaemon implements AutoCloseable {
    private final NodeConfig config;
    private final PoolTier pool;
    private final PoolBlockIndex index;
    private final RpcServer server;
    private final Thread maintenance;
    private final PrintStream out;
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile boolean running = true;

    private NodeDaemon(NodeConfig config, PoolTier pool, PoolBlockIndex index, RpcServer server, PrintStream out) {
        this.config = config;
        this.pool = pool;
        this.index = index;
        this.server = server;
        this.out = out;
        this.maintenance = Thread.ofPlatform().daemon().name("strata-node-reaper").unstarted(this::maintain);
    }

    /**
     * Opens the pool and its index, starts serving, and prints the ready line to {@code out}.
     *
     * @throws IllegalStateException if another live daemon serves the rpc path
     * @throws dev.strata.node.index.IndexIdentityException if the index holds another model or hash version
     */
    public static NodeDaemon start(NodeConfig config, PrintStream out) {
        return start(config, out, dev.strata.cache.EvictionSink.NONE);
    }

    /**
     * As {@link #start(NodeConfig, PrintStream)}, telling {@code evictionSink} of each block the
     * daemon evicts from the pool, with its verified bytes (a write-behind tier below the pool).
     */
    public static NodeDaemon start(NodeConfig config, PrintStream out, dev.strata.cache.EvictionSink evictionSink) {
        PoolTier pool = PoolTier.open(config.pool());
        PoolBlockIndex index = null;
        RpcServer server = null;
        try {
            BlockIndexConfig indexConfig = identity(config, pool, evictionSink);
            index = PoolBlockIndex.open(pool, indexConfig);
            IndexService service = new IndexService(index, config.rpc().channels(), config.hashVersion() == 0);
            server = RpcServer.create(config.rpc(), service);
            NodeDaemon daemon = new NodeDaemon(config, pool, index, server, out);
            server.start();
            daemon.maintenance.start();
            IndexStats s = index.stats();
            out.println("strata node ready: pid " + ProcessHandle.current().pid() + ", pool '" + pool.name() + "' at "
                    + pool.paths() + " (" + Sizes.format(pool.capacity()) + ", " + (pool.isCreator() ? "created" : "attached")
                    + "), index of " + s.capacity() + " entries with " + s.published() + " published blocks ("
                    + (index.modelFingerprint().equals(PoolBlockIndex.NO_FINGERPRINT)
                    ? "model learned from the first server to attach" + (config.hashVersion() == 0 ? ", with its hash version" : ", hash version " + index.hashVersion())
                    : "model " + index.modelFingerprint() + ", hash version " + index.hashVersion()) + "), rpc " + config.rpc().path()
                    + " (" + config.rpc().channels() + " channels of " + config.rpc().slotsPerChannel() + " slots)");
            out.flush();
            return daemon;
        } catch (RuntimeException | Error e) {
            if (server != null) {
                server.close();
            }
            if (index != null) {
                index.close();
            }
            pool.close();
            throw e;
        }
    }

    /**
     * The index identity: the flags', else the existing index's, else version 1 and
     * {@link PoolBlockIndex#NO_FINGERPRINT}, which the first engine process to attach replaces
     * with its own (see {@link IndexService}).
     */
    private static BlockIndexConfig identity(NodeConfig config, PoolTier pool, dev.strata.cache.EvictionSink evictionSink) {
        int version = config.hashVersion();
        ObjectKey model = config.modelFingerprint();
        if (version == 0 || model == null) {
            Optional<IndexStats> existing = pool.isCreator() ? Optional.empty() : PoolIndexInspector.inspect(pool.paths());
            if (version == 0) {
                version = existing.map(IndexStats::hashVersion).orElse(1);
            }
            if (model == null) {
                model = existing.map(IndexStats::modelFingerprint).orElse(PoolBlockIndex.NO_FINGERPRINT);
            }
        }
        return BlockIndexConfig.builder(version, model).pinsPerProcess(config.pinsPerProcess())
                .pinDuration(config.pinDuration()).evictionSink(evictionSink).conclude();
    }

    private void maintain() {
        long interval = config.reapInterval().toNanos();
        while (running) {
            LockSupport.parkNanos(interval);
            if (!running) {
                return;
            }
            try {
                index.reap();
            } catch (IllegalStateException closed) {
                if (running) {
                    throw closed;
                }
            }
        }
    }

    /**
     * Installs a shutdown hook (SIGTERM, SIGINT) that closes the daemon, and blocks until it is
     * closed.
     */
    public void runUntilStopped() throws InterruptedException {
        Thread hook = Thread.ofPlatform().unstarted(this::close);
        Runtime.getRuntime().addShutdownHook(hook);
        stopped.await();
    }

    /** Waits up to {@code millis} for the daemon to be closed; true if it was. */
    public boolean awaitStopped(long millis) throws InterruptedException {
        return stopped.await(millis, TimeUnit.MILLISECONDS);
    }

    public PoolBlockIndex index() {
        return index;
    }

    public PoolTier pool() {
        return pool;
    }

    public RpcServer server() {
        return server;
    }

    /** Stops serving (clients see the daemon stopped), then closes the index and the pool. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (!running) {
                return;
            }
            running = false;
        }
        try {
            server.close();
            LockSupport.unpark(maintenance);
            try {
                maintenance.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            index.close();
            pool.close();
            out.println("strata node stopped: rpc " + config.rpc().path() + " closed, pool '" + pool.name() + "' kept at "
                    + pool.paths());
            out.flush();
        } finally {
            stopped.countDown();
        }
    }
}
