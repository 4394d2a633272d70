package dev.strata.node.daemon;

import dev.strata.cache.ObjectKey;
import dev.strata.memory.pool.PoolConfig;
import dev.strata.node.index.BlockIndexConfig;
import dev.strata.node.index.PoolBlockIndex;
import dev.strata.node.rpc.RpcServerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * How {@code strata node} runs: the pool it opens (or creates), the identity and pin settings of
 * the block index in it, and the RPC region it serves.
 *
 * <p>Build with {@link #builder()}; {@link Builder#conclude()} checks every value at once and fails
 * with one message naming each bad one. Immutable; any thread.
 *
 * @param pool             the pool (created if its first file does not exist)
 * @param rpc              the RPC region
 * @param hashVersion      the block-hash version; 0 adopts the index's (or 1 for a new index)
 * @param modelFingerprint the model fingerprint; null adopts the index's (or all zero for a new index)
 * @param pinsPerProcess   pin records per process when the index is formatted: the daemon holds
 *                         the pins of all its clients, so give it room for all of them
 * @param pinDuration      how long a pin holds a block
 * @param reapInterval     how often the daemon clears expired pins and dead writers' reservations
 */
public record NodeConfig(PoolConfig pool, RpcServerConfig rpc, int hashVersion, ObjectKey modelFingerprint,
                         int pinsPerProcess, Duration pinDuration, Duration reapInterval) {

    public static final String DEFAULT_POOL_NAME = "node";

    public static Builder builder() {
        return new Builder();
    }

    /** This configuration with the model fingerprint {@code k}. */
    public NodeConfig withModelFingerprint(ObjectKey k) {
        return new NodeConfig(pool, rpc, hashVersion, k, pinsPerProcess, pinDuration, reapInterval);
    }

    /**
     * The root region a pool of {@code capacity} bytes in chunks of {@code chunkSize} needs for a
     * block index with twice as many entries as chunks and {@code pinsPerProcess} pins for
     * each of {@code processSlots} processes.
     */
    public static long rootRegionSize(long capacity, long chunkSize, int processSlots, int pinsPerProcess) {
        long chunks = Math.max(1, capacity / chunkSize);
        long entries = Math.max(8, Long.highestOneBit(Math.max(1, 2 * chunks - 1)) << 1);
        return PoolBlockIndex.regionSizeFor(entries, processSlots, pinsPerProcess);
    }

    /** Collects settings; not thread-safe. */
    public static final class Builder {
        private String poolName = DEFAULT_POOL_NAME;
        private final List<Path> poolPaths = new ArrayList<>();
        private long capacity = 1L << 30;
        private long chunkSize = PoolConfig.DEFAULT_CHUNK_SIZE;
        private int processSlots = PoolConfig.DEFAULT_PROCESS_SLOTS;
        private final RpcServerConfig.Builder rpc = RpcServerConfig.builder();
        private int hashVersion;
        private ObjectKey modelFingerprint;
        private int pinsPerProcess = 2048;
        private Duration pinDuration = Duration.ofSeconds(30);
        private Duration reapInterval = Duration.ofSeconds(1);

        private Builder() {
        }

        public Builder poolName(String name) {
            this.poolName = name;
            return this;
        }

        public Builder poolPath(Path p) {
            poolPaths.add(p);
            return this;
        }

        public Builder capacity(long bytes) {
            this.capacity = bytes;
            return this;
        }

        public Builder chunkSize(long bytes) {
            this.chunkSize = bytes;
            return this;
        }

        public Builder processSlots(int n) {
            this.processSlots = n;
            return this;
        }

        /** The RPC settings (path, channels, slots, payload, timing). */
        public RpcServerConfig.Builder rpc() {
            return rpc;
        }

        public Builder hashVersion(int v) {
            this.hashVersion = v;
            return this;
        }

        public Builder modelFingerprint(ObjectKey k) {
            this.modelFingerprint = k;
            return this;
        }

        public Builder pinsPerProcess(int n) {
            this.pinsPerProcess = n;
            return this;
        }

        public Builder pinDuration(Duration d) {
            this.pinDuration = d;
            return this;
        }

        public Builder reapInterval(Duration d) {
            this.reapInterval = d;
            return this;
        }

        /** Checks everything; throws {@link IllegalArgumentException} naming every bad value. */
        public NodeConfig conclude() {
            List<String> problems = new ArrayList<>();
            PoolConfig poolConfig = null;
            try {
                PoolConfig.Builder b = PoolConfig.builder(poolName).capacity(capacity).chunkSize(chunkSize)
                        .processSlots(processSlots).mode(PoolConfig.Mode.CREATE_OR_ATTACH);
                if (poolPaths.isEmpty()) {
                    b.path(PoolConfig.defaultPath(poolName));
                } else {
                    b.paths(poolPaths);
                }
                if (capacity > 0 && chunkSize > 0 && Long.bitCount(chunkSize) == 1) {
                    b.rootRegionSize(rootRegionSize(capacity, chunkSize, processSlots, Math.max(1, pinsPerProcess)));
                }
                poolConfig = b.conclude();
            } catch (IllegalArgumentException e) {
                problems.add(e.getMessage());
            }
            RpcServerConfig rpcConfig = null;
            try {
                rpcConfig = rpc.conclude();
                if (rpcConfig.payloadBytes() < IndexProtocol.MIN_PAYLOAD) {
                    problems.add("rpc payload bytes " + rpcConfig.payloadBytes() + " must be at least " + IndexProtocol.MIN_PAYLOAD
                            + " for the index protocol");
                }
            } catch (IllegalArgumentException e) {
                problems.add(e.getMessage());
            }
            if (hashVersion < 0) {
                problems.add("hash version " + hashVersion + " must be positive (or 0 to adopt the index's)");
            }
            if (pinsPerProcess < 1 || pinsPerProcess > BlockIndexConfig.MAX_PINS_PER_PROCESS) {
                problems.add("pins per process " + pinsPerProcess + " must be between 1 and "
                        + BlockIndexConfig.MAX_PINS_PER_PROCESS);
            }
            if (pinDuration == null || pinDuration.isNegative() || pinDuration.isZero()) {
                problems.add("pin duration " + pinDuration + " must be positive");
            }
            if (reapInterval == null || reapInterval.isNegative() || reapInterval.isZero()) {
                problems.add("reap interval " + reapInterval + " must be positive");
            }
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("strata node configuration: " + String.join("; ", problems));
            }
            return new NodeConfig(poolConfig, rpcConfig, hashVersion, modelFingerprint, pinsPerProcess, pinDuration,
                    reapInterval);
        }
    }
}
