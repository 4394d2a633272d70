package dev.strata.node.client;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.posix.Libc;
import dev.strata.node.index.BlockIndex;
import dev.strata.node.index.BlockIndexConfig;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.index.PoolSharedBlockStore;
import dev.strata.node.rpc.RpcClientOptions;
import dev.strata.node.rpc.RpcServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How an engine process reaches the pool's block index: attached to {@code strata node}
 * ({@link Mode#DAEMON}, the index called over shared-memory RPC) or embedded ({@link Mode#EMBEDDED},
 * the same index code called in-process on the pool's shared tables); {@link Mode#AUTO} attaches
 * when a live daemon serves the rpc path and runs embedded otherwise. Either way the process maps
 * the pool itself for the block bytes, and gets the same {@link BlockIndex} and
 * {@link SharedBlockStore} interfaces. The store ({@link #blocks()}) is a
 * {@link ResilientSharedBlockStore}: a lost daemon or a faulted pool takes the pool out of the KV
 * chain instead of failing the caller, and a daemon that comes back (probed every
 * {@link #RETRY_INTERVAL}) puts it back; {@link #index()} is the index itself, whose calls throw
 * {@link NodeUnavailableException} while the daemon is away.
 *
 * <p>Threads: the index and the store are safe for any thread; {@link #close} once, at the end.
 */
public final class NodeAccess implements AutoCloseable {
    /** Where the index runs. */
    public enum Mode {
        /** In this process, on the pool's shared tables. */
        EMBEDDED,
        /** In {@code strata node}, over shared-memory RPC. */
        DAEMON,
        /** DAEMON if a live daemon serves the rpc path, else EMBEDDED. */
        AUTO
    }

    /**
     * @param mode             where the index runs
     * @param pool             the pool (EMBEDDED may create it; DAEMON attaches to the daemon's)
     * @param rpcPath          the daemon's rpc region
     * @param hashVersion      this process's block-hash version (checked against the index)
     * @param modelFingerprint this process's model (checked against the index)
     * @param rpc              how the RPC client waits
     * @param patience         how long a call waits for a live but silent daemon
     * @param evictionSink     told of each block this process evicts from the pool (EMBEDDED: the
     *                         index runs here; with a DAEMON the daemon evicts and has its own)
     */
    public record Options(Mode mode, PoolConfig pool, Path rpcPath, int hashVersion, ObjectKey modelFingerprint,
                          RpcClientOptions rpc, Duration patience, dev.strata.cache.EvictionSink evictionSink) {
        public Options {
            Objects.requireNonNull(evictionSink, "evictionSink");
            Objects.requireNonNull(mode, "mode");
            Objects.requireNonNull(pool, "pool");
            Objects.requireNonNull(rpcPath, "rpcPath");
            Objects.requireNonNull(modelFingerprint, "modelFingerprint");
            Objects.requireNonNull(rpc, "rpc");
            List<String> problems = new ArrayList<>();
            if (hashVersion <= 0) {
                problems.add("hash version " + hashVersion + " must be positive");
            }
            if (patience == null || patience.isNegative() || patience.isZero()) {
                problems.add("patience " + patience + " must be positive");
            }
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("node access: " + String.join("; ", problems));
            }
        }

        /** Options with the default rpc path, RPC waiting and 30 s of patience. */
        public static Options of(Mode mode, PoolConfig pool, int hashVersion, ObjectKey modelFingerprint) {
            return new Options(mode, pool, RpcServerConfig.DEFAULT_PATH, hashVersion, modelFingerprint,
                    RpcClientOptions.defaults(), Duration.ofSeconds(30), dev.strata.cache.EvictionSink.NONE);
        }

        /** These options with another eviction sink. */
        public Options withEvictionSink(dev.strata.cache.EvictionSink sink) {
            return new Options(mode, pool, rpcPath, hashVersion, modelFingerprint, rpc, patience, sink);
        }
    }

    /** How often {@link #blocks()} probes a daemon that went away, to take the pool back into the chain. */
    public static final Duration RETRY_INTERVAL = Duration.ofSeconds(1);

    private final Mode mode;
    private final PoolTier pool;
    private final BlockIndex index;
    private final ResilientSharedBlockStore blocks;

    private NodeAccess(Mode mode, PoolTier pool, BlockIndex index) {
        this.mode = mode;
        this.pool = pool;
        this.index = index;
        this.blocks = new ResilientSharedBlockStore(new PoolSharedBlockStore(index, pool), RETRY_INTERVAL);
    }

    /**
     * Opens the index where {@code options} say.
     *
     * @throws NodeUnavailableException if DAEMON was asked for and no daemon serves the rpc path
     */
    public static NodeAccess open(Options options) {
        Mode mode = options.mode();
        if (mode == Mode.AUTO) {
            mode = daemonServes(options.rpcPath()) ? Mode.DAEMON : Mode.EMBEDDED;
        }
        if (mode == Mode.DAEMON) {
            RemoteBlockIndex remote = RemoteBlockIndex.attach(options.rpcPath(), options.hashVersion(),
                    options.modelFingerprint(), options.rpc(), options.patience());
            try {
                PoolConfig attach = new PoolConfig(options.pool().name(), options.pool().paths(), options.pool().capacity(),
                        options.pool().chunkSize(), options.pool().processSlots(), PoolConfig.Mode.ATTACH,
                        options.pool().heartbeatInterval(), options.pool().heartbeatTimeout(), options.pool().sweepInterval(),
                        options.pool().attachTimeout(), options.pool().rootRegionSize());
                return new NodeAccess(Mode.DAEMON, PoolTier.open(attach), remote);
            } catch (RuntimeException | Error e) {
                remote.close();
                throw e;
            }
        }
        PoolTier pool = PoolTier.open(options.pool());
        try {
            PoolBlockIndex index = PoolBlockIndex.open(pool, BlockIndexConfig.builder(options.hashVersion(),
                    options.modelFingerprint()).evictionSink(options.evictionSink()).conclude());
            return new NodeAccess(Mode.EMBEDDED, pool, index);
        } catch (RuntimeException | Error e) {
            pool.close();
            throw e;
        }
    }

    /** True if a region file is at {@code rpcPath} and its server lives. */
    static boolean daemonServes(Path rpcPath) {
        return Files.exists(rpcPath) && dev.strata.node.rpc.RpcClient.serverLives(rpcPath);
    }

    /** Where the index runs (never AUTO). */
    public Mode mode() {
        return mode;
    }

    public BlockIndex index() {
        return index;
    }

    /** This process's mapping of the pool. */
    public PoolTier pool() {
        return pool;
    }

    /**
     * Blocks published and read through the index and this process's pool mapping; the pool
     * leaves the chain while the daemon is away or for good once its mapping faulted (see
     * {@link ResilientSharedBlockStore}).
     */
    public SharedBlockStore blocks() {
        return blocks;
    }

    /**
     * Closes the index (detaching from the daemon, or releasing embedded pins) and the pool
     * mapping. After a fault on the mapping an embedded index is left as it is (releasing its
     * pins would touch the faulted mapping; the others reclaim them once this process is gone)
     * and the pool is only unmapped, so close always completes.
     */
    @Override
    public void close() {
        try {
            if (mode == Mode.DAEMON || pool.fault() == null) {
                index.close();
            }
            Libc.deliverPendingFaults();
        } catch (InternalError e) {
            if (!PoolTier.isMappingFault(e)) {
                throw e;
            }
            pool.recordFault(e);
        } finally {
            pool.close();
        }
    }
}
